// A ProbeLens client process for the kill -9 test: arms the workload probes through LocalTarget, prints the
// group on stdout, then idles until killed.
import { LocalTarget } from '../../src/core/target/local';
import { TracefsAgent } from '../../src/core/tracefs/agentClient';
import { buildWorkload, defineWorkloadProbes } from './agentHarness';

(async () => {
  // Built first: gcc blocks the event loop, and with it the heartbeats a started agent waits for.
  const workload = buildWorkload();
  const agent = await TracefsAgent.start(new LocalTarget({ sudo: process.argv[2] === 'sudo' }), {});
  await defineWorkloadProbes(agent, workload);
  await agent.arm();
  process.stdout.write(`${agent.group}\n`);
  setInterval(() => undefined, 1 << 30);
})().catch((e: unknown) => {
  console.error(e);
  process.exit(1);
});

// A client process for the kill -9 test: defines the do_sys_openat2 kprobes on the VM named by the JSON connection
// in argv[2], prints the group on stdout, then idles (heartbeats going) until killed.
import type { VmConnection } from '../helpers/vm';
import { TracefsAgent } from '../../src/core/tracefs/agentClient';
import { connectVm, openat2Definitions } from './kprobeHarness';

(async () => {
  const vm = JSON.parse(process.argv[2]) as VmConnection;
  const agent = await TracefsAgent.start(await connectVm(vm));
  const d = openat2Definitions(agent.group);
  await agent.define(d.entry);
  await agent.define(d.ret);
  process.stdout.write(`${agent.group}\n`);
  setInterval(() => undefined, 1 << 30);
})().catch((e: unknown) => {
  console.error(e);
  process.exit(1);
});

// Every catchable signal that would end the agent, and a fatal shell error, leave nothing behind: dash and busybox
// run no EXIT trap on an untrapped signal, so each one is trapped; the EXIT trap covers the rest.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { constants } from 'node:os';
import { requireTracefs } from '../helpers/tracefs';
import { TracefsAgent } from '../../src/core/tracefs/agentClient';
import { AGENT_SCRIPT } from '../../src/core/tracefs/agentScript';
import type { ExecChannel, ExecOptions, Target } from '../../src/core/target/target';
import { SHELLS, ShellTarget, buildWorkload, defineWorkloadProbes, leftovers, runWorkload, waitClean, type Workload } from './agentHarness';

// Those whose default action ends a process (CHLD, CONT, URG, WINCH and the stop signals do not; KILL and STOP
// cannot be caught). PIPE is ignored by the agent: a vanished client must not kill it before it cleans up.
const NAMED = [
  'HUP',
  'INT',
  'QUIT',
  'ILL',
  'TRAP',
  'ABRT',
  'BUS',
  'FPE',
  'USR1',
  'SEGV',
  'USR2',
  'ALRM',
  'TERM',
  'STKFLT',
  'XCPU',
  'XFSZ',
  'VTALRM',
  'PROF',
  'IO',
  'PWR',
  'SYS',
];
const SIGNALS: Array<[string, number]> = [
  ...NAMED.map((n): [string, number] => [n, constants.signals[`SIG${n}` as keyof typeof constants.signals]]),
  ['RTMIN', 34],
  ['RTMIN+5', 39],
  ['RTMAX', 64],
];

let workload: Workload | undefined;
const getWorkload = () => (workload ??= buildWorkload());

for (const [name, shell] of Object.entries(SHELLS)) {
  test(`${name}: each catchable signal ends the armed agent with its probes, reader and instance removed`, async (t) => {
    if (!requireTracefs(t)) return;
    const w = getWorkload();
    const untrapped: string[] = [];
    for (const [sig, num] of SIGNALS) {
      const agent = await TracefsAgent.start(new ShellTarget(shell), {});
      try {
        await defineWorkloadProbes(agent, w);
        await agent.arm();
        runWorkload(w, 1);
        assert.ok(leftovers(agent.group).length >= 3, `${sig}: armed`);
        process.kill(agent.hello.pid, num);
        // An untrapped signal kills the shell but not its reader, which keeps the streams open: bounded wait.
        const exit = await Promise.race([agent.exit, new Promise<null>((r) => setTimeout(() => r(null), 10_000))]);
        if (!exit) {
          untrapped.push(`${sig} (no exit within 10 s)`);
          continue;
        }
        const left = await waitClean(agent.group, 10_000);
        // A killed shell reports the signal; one that trapped it exits through quit with 128 + its number.
        if (exit.signal) untrapped.push(`${sig} (${exit.signal})`);
        else assert.equal(exit.code, 128 + num, `${sig}: exit code`);
        assert.deepEqual(left, [], `${sig}: nothing left`);
      } finally {
        agent.kill('KILL');
      }
    }
    assert.deepEqual(untrapped, [], 'every signal went through the trap');
    t.diagnostic(`${SIGNALS.length} signals: ${SIGNALS.map(([s]) => s).join(' ')}`);
  });
}

/** Runs a copy of the agent in which STATS reads an unset variable: a fatal error under `set -u`. */
class FaultyTarget implements Target {
  readonly host = 'local';
  private readonly inner = new ShellTarget(['dash']);
  describe(): string {
    return 'local (agent with a fatal error)';
  }
  exec(argv: readonly string[], opts?: ExecOptions): Promise<ExecChannel> {
    const script = argv[2].replace('*:STATS) cpu_stats STATS; say OK STATS ;;', '*:STATS) : "$NO_SUCH_VARIABLE" ;;');
    assert.notEqual(script, AGENT_SCRIPT, 'the fault was injected');
    return this.inner.exec([argv[0], argv[1], script, ...argv.slice(3)], opts);
  }
  close(): Promise<void> {
    return this.inner.close();
  }
}

test('a fatal shell error in the agent runs its EXIT trap: probes, reader and instance are removed', async (t) => {
  if (!requireTracefs(t)) return;
  const w = getWorkload();
  const agent = await TracefsAgent.start(new FaultyTarget(), {});
  try {
    await defineWorkloadProbes(agent, w);
    await agent.arm();
    assert.ok(leftovers(agent.group).length >= 3, 'armed');
    await assert.rejects(agent.cpuStats(), /the tracefs agent exited/);
    const exit = await agent.exit;
    assert.equal(exit.signal, null);
    assert.notEqual(exit.code, 0, 'the shell stopped on the error');
    assert.deepEqual(await waitClean(agent.group, 10_000), []);
    assert.ok(
      agent.diagnostics.some((l) => /NO_SUCH_VARIABLE/.test(l)),
      agent.diagnostics.join('\n'),
    );
  } finally {
    agent.kill('KILL');
  }
});

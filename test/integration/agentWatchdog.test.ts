// The agent's heartbeat watchdog measures the client's silence, not the kernel's speed: a command that keeps the
// agent busy for longer than the heartbeat timeout (the client's heartbeats queue unread meanwhile) must not end
// the session, and silence after it still must. The long command here is real: `cleanup --force` of a dead
// session's armed probes, where the kernel spends ≈45 ms disarming each event.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { requireTracefs } from '../helpers/tracefs';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { TracefsAgent } from '../../src/core/tracefs/agentClient';
import { AGENT_ARGV0, AGENT_PROTOCOL_VERSION, AGENT_SCRIPT } from '../../src/core/tracefs/agentScript';
import { LocalTarget } from '../../src/core/target/local';
import type { ExecChannel, ExecOptions, Target } from '../../src/core/target/target';
import { SHELLS, ShellTarget, buildWorkload, defineWorkloadProbes, leftovers, runWorkload, waitClean, type Workload } from './agentHarness';
import { plainData } from '../helpers/plain';

/** An agent in a PID namespace of its own that dies with it: its probes stay behind, owned by nobody alive. */
class DoomedNamespaceTarget implements Target {
  readonly host = 'local';
  private readonly local = new LocalTarget();
  describe(): string {
    return 'local (own PID namespace)';
  }
  exec(argv: readonly string[], opts?: ExecOptions): Promise<ExecChannel> {
    return this.local.exec(['unshare', '--pid', '--fork', '--mount-proc', '--kill-child', ...argv], opts);
  }
  close(): Promise<void> {
    return this.local.close();
  }
}

const EVENTS = 100;
const TIMEOUT_S = 1;

let workload: Workload | undefined;
const getWorkload = () => (workload ??= buildWorkload());

/** A dead session's group with EVENTS armed probes (its agent and reader were killed with their namespace). */
async function deadArmedGroup(w: Workload): Promise<string> {
  const owner = await TracefsAgent.start(new DoomedNamespaceTarget(), {});
  const group = owner.group;
  const defs = Array.from({ length: EVENTS }, (_, i) => `p:${group}/e${i} ${w.path}:${w.addOffset}`);
  assert.deepEqual(
    (await owner.defineAll(defs)).filter((e) => e !== null),
    [],
  );
  await owner.arm();
  owner.kill('KILL');
  await owner.exit;
  // The namespace's processes (agent, reader) are gone once the instance has no reader left.
  for (let i = 0; i < 200 && leftovers(group).some((l) => l.startsWith('reader')); i++) await new Promise((r) => setTimeout(r, 50));
  assert.equal(leftovers(group).filter((l) => /^[pr]:/.test(l)).length, EVENTS, 'the dead session left its armed probes');
  return group;
}

for (const [name, shell] of Object.entries(SHELLS)) {
  test(`${name}: a command longer than the heartbeat timeout keeps the session; silence afterwards still ends it`, async (t) => {
    if (!requireTracefs(t)) return;
    const w = getWorkload();
    // Started first: a new agent sweeps what dead owners left, which would leave nothing to force.
    const agent = await TracefsAgent.start(new ShellTarget(shell), { heartbeatTimeoutSeconds: TIMEOUT_S, heartbeatIntervalMs: 200 });
    try {
      const group = await deadArmedGroup(w);
      const t0 = Date.now();
      await agent.forceRemove(group);
      const took = Date.now() - t0;
      // The precondition that makes this test mean something (not a performance check).
      assert.ok(took > 2000 * TIMEOUT_S, `the forced removal took ${took} ms, not longer than the ${TIMEOUT_S} s heartbeat timeout`);
      assert.deepEqual(leftovers(group), []);
      const stats = await agent.cpuStats();
      assert.ok(stats.length > 0, 'the agent still answers after the long command');
      agent.stopHeartbeat();
      assert.equal((await agent.exit).code, 142, 'silence after the long command still ends the session');
      assert.deepEqual(await waitClean(agent.group), []);
    } finally {
      agent.kill('KILL');
    }
  });
}

for (const [name, shell] of Object.entries(SHELLS)) {
  test(`${name}: every reply arrives when the client reads slowly and the agent's writes block`, async (t) => {
    if (!requireTracefs(t)) return;
    // 300 commands at once, each with a watchdog started and ended, and a reader that takes 4 KB every 10 ms: the
    // agent's replies block on a full pipe most of the time. busybox sh lost a blocked write (and a half-read
    // line) whenever a child's SIGCHLD interrupted it — the watchdog was a child, ended after every line — so
    // replies went missing and a client waited forever for them.
    const dir = mkdtempSync(join(tmpdir(), 'probelens-slowread-'));
    try {
      const out = join(dir, 'replies');
      const reader = 'while :; do n=$(dd bs=4096 count=1 2>/dev/null | tee -a "$1" | wc -c); [ "$n" -gt 0 ] || break; sleep 0.01; done';
      const nonce = 'slowread' + process.pid;
      const r = spawnSync(
        'sh',
        [
          '-c',
          `out=$1; shift; "$@" 2>&1 >/dev/null | sh -c '${reader}' reader "$out"`,
          'sh',
          out,
          ...shell,
          '-c',
          AGENT_SCRIPT,
          AGENT_ARGV0,
        ],
        { input: `HELLO ${AGENT_PROTOCOL_VERSION} ${nonce} 2\n` + 'STATS\n'.repeat(300), timeout: 180_000 },
      );
      assert.equal(r.status, 0, `the agent and its reader ended (${r.error?.message ?? r.signal ?? ''})`);
      const lines = readFileSync(out, 'utf8').split('\n');
      assert.equal(lines.filter((l) => l.startsWith(`${nonce} OK STATS`)).length, 300, 'one OK STATS per STATS');
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  test(`${name}: a healthy session survives hundreds of back-to-back commands and then quiet heartbeats`, async (t) => {
    if (!requireTracefs(t)) return;
    // Every command line restarts the watchdog; one that outlived its restart would fire mid-session. A watchdog
    // ended with a catchable signal can miss it when the signal lands right after its fork (seen with dash).
    const agent = await TracefsAgent.start(new ShellTarget(shell), { heartbeatTimeoutSeconds: 2, heartbeatIntervalMs: 300 });
    try {
      await Promise.all(Array.from({ length: 300 }, () => agent.cpuStats()));
      // Longer than the timeout, with only heartbeats arriving.
      await new Promise((r) => setTimeout(r, 4000));
      assert.ok((await agent.cpuStats()).length > 0, 'the agent still answers');
      await agent.stop();
      assert.equal((await agent.exit).code, 0);
    } finally {
      agent.kill('KILL');
    }
  });
}

test('a client busy with a flood of hits for longer than the heartbeat timeout keeps its session', async (t) => {
  if (!requireTracefs(t)) return;
  const w = getWorkload();
  const agent = await TracefsAgent.start(new ShellTarget(['dash']), { heartbeatTimeoutSeconds: 1, heartbeatIntervalMs: 200 });
  try {
    await defineWorkloadProbes(agent, w);
    let lines = 0;
    // 4 ms of work per trace line, all on the event loop: 400 calls arrive in a few chunks and hold it for seconds.
    agent.onTraceLine(() => {
      lines++;
      const until = Date.now() + 4;
      while (Date.now() < until);
    });
    await agent.arm();
    const t0 = Date.now();
    runWorkload(w, 400);
    await new Promise<void>((resolve) => {
      const poll = () => (lines >= 800 ? resolve() : setTimeout(poll, 20));
      poll();
    });
    const busy = Date.now() - t0;
    assert.ok(busy > 2000, `the flood kept the client busy ${busy} ms, not longer than the 1 s heartbeat timeout`);
    const report = await agent.stop();
    assert.deepEqual(plainData(Object.fromEntries(report.kernelHits)), { pl_add: 400, pl_leaf_ret: 400 });
    assert.equal((await agent.exit).code, 0);
  } finally {
    agent.kill('KILL');
  }
});

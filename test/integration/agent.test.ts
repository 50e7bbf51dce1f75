// The tracefs agent on this machine's real tracefs, under dash, busybox ash and bash: arming, hits, and cleanup
// on every way out.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { statSync } from 'node:fs';
import { requireTracefs } from '../helpers/tracefs';
import { IN_CI, missing } from '../helpers/require';
import { TracefsAgent, offendingToken } from '../../src/core/tracefs/agentClient';
import {
  SHELLS,
  ShellTarget,
  buildTidReuse,
  buildWorkload,
  collectHits,
  defineWorkloadProbes,
  leftovers,
  runWorkload,
  runWorkloadPid,
  savedTgid,
  waitAgentGone,
  waitClean,
  type Workload,
} from './agentHarness';
import { plainData } from '../helpers/plain';

let workload: Workload | undefined;
const getWorkload = () => (workload ??= buildWorkload());

for (const [name, shell] of Object.entries(SHELLS)) {
  test(`${name}: arms entry and return probes, streams typed hits, STOP reports kernel hits and cleans up`, async (t) => {
    if (!requireTracefs(t)) return;
    const w = getWorkload();
    const agent = await TracefsAgent.start(new ShellTarget(shell), {});
    const group = agent.group;
    try {
      // The owner: the agent's pid, its PID namespace (nsfs device and inode, hex) and the session's nonce.
      const ns = statSync(`/proc/${agent.hello.pid}/ns/pid`);
      assert.equal(group, `probelens_${agent.hello.pid}_${ns.dev.toString(16)}_${ns.ino.toString(16)}_${agent.nonce}`);
      assert.ok(agent.hello.caps.has('uprobe_events'));
      const { hits, ended } = collectHits(agent);
      await agent.checkBuildId(w.path, w.buildIdOffset, 20, w.buildId);
      await defineWorkloadProbes(agent, w);
      await agent.arm();
      const str = 'hi "x"\nCPU:0 [LOST 7 EVENTS]';
      let sum = 0;
      for (let i = 0; i < 5; i++) sum += -(i + 1) + (255 - i) + Buffer.byteLength(str) + 2 * -(i + 1);
      const run = runWorkloadPid(w, 5, str);
      assert.equal(run.out, String(sum));
      const report = await agent.stop();
      await ended;
      const entries = hits.filter((h) => h.kind === 'entry');
      assert.deepEqual(
        entries.map((h) => h.args.a),
        [-1, -2, -3, -4, -5],
      );
      assert.deepEqual(
        entries.map((h) => h.args.b),
        ['18446744073709551615', '18446744073709551614', '18446744073709551613', '18446744073709551612', '18446744073709551611'],
      );
      assert.ok(entries.every((h) => h.args.s === 'hi "x"\nCPU:0 [LOST 7 EVENTS]'));
      assert.deepEqual(
        hits.filter((h) => h.kind === 'return').map((h) => h.retval),
        [-2, -4, -6, -8, -10],
      );
      // The kernel prints comm from a pid→name cache that a busy machine evicts ("<...>") and that can still hold
      // the name of an earlier process with the same pid (CI once printed "sh"); sessions therefore fetch $comm at
      // the hit (see the compiler). This test arms raw definitions, so it checks the pid, which is exact.
      assert.ok(
        entries.every((h) => h.pid === run.pid && h.tid === run.pid),
        JSON.stringify({ workload: run.pid, hits: entries.map((h) => [h.comm, h.pid, h.tid]) }),
      );
      assert.deepEqual(plainData(Object.fromEntries(report.kernelHits)), { pl_add: 5, pl_leaf_ret: 5 });
      assert.equal(
        report.cpus.reduce((s, c) => s + c.overrun + c.dropped, 0),
        0,
      );
      assert.equal((await agent.exit).code, 0);
      assert.deepEqual(leftovers(group), []);
    } finally {
      agent.kill('KILL');
    }
  });

  const ways: Array<[string, (a: TracefsAgent) => void, number | null]> = [
    ['stdin EOF (client gone)', (a) => a.abandon(), 0],
    ['SIGTERM', (a) => a.kill('TERM'), 143],
    ['SIGHUP', (a) => a.kill('HUP'), 129],
    ['heartbeat silence', (a) => a.stopHeartbeat(), 142],
  ];
  for (const [way, end, code] of ways) {
    test(`${name}: cleans up after ${way} within 10 s`, async (t) => {
      if (!requireTracefs(t)) return;
      const w = getWorkload();
      const agent = await TracefsAgent.start(new ShellTarget(shell), { heartbeatTimeoutSeconds: 2, heartbeatIntervalMs: 300 });
      const group = agent.group;
      try {
        await defineWorkloadProbes(agent, w);
        await agent.arm();
        runWorkload(w, 2);
        assert.ok(leftovers(group).length >= 3, 'armed: two definitions, the instance and a reader');
        end(agent);
        assert.deepEqual(await waitClean(group), []);
        assert.equal((await agent.exit).code, code);
      } finally {
        agent.kill('KILL');
      }
    });
  }

  // A host shutting down (or an sshd stopped) signals every process, and the end of the agent's sshd closes its
  // stdin meanwhile: the agent starts cleaning up on the EOF, and SIGTERM comes while it does. A signal then must
  // not end the shell before the cleanup has (it did: the trap's own cleanup found one running and returned, and
  // the group stayed behind with no owner). Placed by strace: SIGTERM on every file the shell opens after the first
  // (its stdout redirected to /dev/null as it begins to quit; each redirection after that is a step of the cleanup).
  test(`${name}: SIGTERM while it cleans up after stdin EOF does not cut the cleanup short`, async (t) => {
    if (!requireTracefs(t)) return;
    const w = getWorkload();
    const agent = await TracefsAgent.start(new ShellTarget(shell), { heartbeatTimeoutSeconds: 60, heartbeatIntervalMs: 300 });
    const group = agent.group;
    let strace: ChildProcess | undefined;
    try {
      await defineWorkloadProbes(agent, w);
      await agent.arm();
      runWorkload(w, 2);
      assert.ok(leftovers(group).length >= 3, 'armed: two definitions, the instance and a reader');
      // No line after this one: the shell waits in read, and opens nothing until the EOF.
      agent.stopHeartbeat();
      await new Promise((r) => setTimeout(r, 300));
      const args = ['-p', String(agent.hello.pid), '-o', '/dev/null', '-e', 'trace=openat', '-e', 'inject=openat:signal=TERM:when=2+'];
      strace = spawn('strace', args, { stdio: ['ignore', 'ignore', 'pipe'] });
      const s = strace;
      const attached = await new Promise<boolean>((res) => {
        let err = '';
        s.stderr!.setEncoding('utf8').on('data', (d: string) => {
          err += d;
          if (/attached/.test(err)) res(true);
        });
        s.once('exit', () => res(false));
        s.once('error', () => res(false));
      });
      assert.ok(attached, 'strace attached to the agent');
      agent.abandon();
      const exit = await agent.exit;
      assert.deepEqual(await waitClean(group), []);
      // It ended by itself (the EOF's 0, or 143 where a late heartbeat's file read took the first SIGTERM).
      assert.ok(exit.signal === null && (exit.code === 0 || exit.code === 143), `exited by itself: ${JSON.stringify(exit)}`);
    } finally {
      strace?.kill('SIGKILL');
      agent.kill('KILL');
    }
  });
}

test("TGID names a live thread's process from /proc where saved_tgids still holds an earlier task with its id", async (t) => {
  if (!requireTracefs(t)) return;
  const w = getWorkload();
  const tidreuse = buildTidReuse();
  const agent = await TracefsAgent.start(new ShellTarget(SHELLS.dash), {});
  try {
    const { ended } = collectHits(agent);
    await defineWorkloadProbes(agent, w);
    await agent.arm();
    const seen: string[] = [];
    for (let attempt = 1; ; attempt++) {
      // A process (its own leader, pid N) hits a probe: at a context switch after it the kernel saves "N N".
      const n = runWorkloadPid(w, 1).pid;
      for (let i = 0; i < 50 && savedTgid(n) !== n; i++) await new Promise((r) => setTimeout(r, 100));
      // A thread of another process then takes the id N (ns_last_pid): saved_tgids still says N until the kernel
      // saves the new task, which only an event on its CPU before a switch makes it do.
      const child = spawn(tidreuse, [String(n)], { stdio: ['pipe', 'pipe', 'inherit'] });
      const line = await new Promise<string>((res, rej) => {
        let out = '';
        child.stdout.on('data', (d: Buffer) => {
          out += d.toString();
          if (out.includes('\n')) res(out.trim());
        });
        child.on('exit', (code) => rej(new Error(`tidreuse exited ${code}`)));
      });
      const [pid, tid] = line.split(' ').map(Number);
      try {
        const before = savedTgid(n);
        seen.push(`attempt ${attempt}: N=${n}, thread ${tid} of ${pid}, saved_tgids ${before}`);
        if (tid === n && before === n) {
          const got = await agent.tgids([n]);
          assert.equal(got.get(n), pid, `thread ${n} belongs to process ${pid}; saved_tgids says ${savedTgid(n)}`);
          break;
        }
      } finally {
        child.stdin.end();
      }
      // Another process took N first, or the kernel saved the new thread already: the case was not set up.
      assert.ok(attempt < 20, `could not set up a stale saved_tgids entry: ${seen.join('; ')}`);
    }
    await agent.stop();
    await ended;
  } finally {
    agent.kill('KILL');
  }
});

test('build-id mismatch is refused with the next step', async (t) => {
  if (!requireTracefs(t)) return;
  const w = getWorkload();
  const agent = await TracefsAgent.start(new ShellTarget(['dash']), {});
  try {
    await assert.rejects(agent.checkBuildId(w.path, w.buildIdOffset, 20, '00'.repeat(20)), (e: Error) => {
      assert.match(e.message, new RegExp(`build-id is ${w.buildId}.*--no-build-id-check`));
      return true;
    });
    await assert.rejects(agent.checkBuildId('/nonexistent/bin', 0, 20, w.buildId), /no readable file/);
  } finally {
    await agent.stop();
  }
});

test('a rejected definition returns the kernel error_log with its caret', async (t) => {
  if (!requireTracefs(t)) return;
  const w = getWorkload();
  const agent = await TracefsAgent.start(new ShellTarget(['dash']), { sentinel: false });
  try {
    await assert.rejects(
      agent.define(`p:${agent.group}/bad ${w.path}:${w.addOffset} a=%nosuchreg:s32`),
      (e: Error & { details?: string[] }) => {
        assert.match(e.message, /Invalid register name|Invalid fetch argument|Unknown register/i);
        assert.equal(offendingToken(e.details!), 'a=%nosuchreg:s32');
        return true;
      },
    );
  } finally {
    await agent.stop();
  }
});

test('a rejected framed definition: the caret still names the ARG, and the secret is not in the error', async (t) => {
  if (!requireTracefs(t)) return;
  const w = getWorkload();
  const agent = await TracefsAgent.start(new ShellTarget(['dash']), {});
  try {
    if (!agent.sentinel) {
      missing(t, 'this kernel has no immediate fetchargs (\\imm): definitions are not framed');
      return;
    }
    const secret = BigInt(agent.sentinel.printed).toString(10);
    await assert.rejects(
      agent.define(`p:${agent.group}/bad ${w.path}:${w.addOffset} s=+0(%dx):string a=%nosuchreg:s32`),
      (e: Error & { details?: string[] }) => {
        assert.equal(offendingToken(e.details!), 'a=%nosuchreg:s32');
        assert.ok(
          e.details!.some((l) => l.includes('__pl0=\\*')),
          e.details!.join('\n'),
        );
        assert.ok(!`${e.message}\n${e.details!.join('\n')}`.includes(secret));
        return true;
      },
    );
  } finally {
    await agent.stop();
  }
});

test("a dead owner's leftovers (agent killed with -9, its reader orphaned) are swept by the next session", async (t) => {
  if (!requireTracefs(t)) return;
  const w = getWorkload();
  const first = await TracefsAgent.start(new ShellTarget(['dash']), { heartbeatTimeoutSeconds: 0 });
  await defineWorkloadProbes(first, w);
  await first.arm();
  process.kill(first.hello.pid, 'SIGKILL');
  // The next session starts after the owner is dead: a session that still saw it running would rightly keep out.
  assert.ok(await waitAgentGone(first.hello.pid), `the killed agent (pid ${first.hello.pid}) ended`);
  // Other sessions on this machine sweep too, so the leftovers may already be going; if any remain, this
  // session's sweep must name them.
  const before = leftovers(first.group);
  assert.ok(before.length > 0 || !IN_CI);
  const second = await TracefsAgent.start(new ShellTarget(['busybox', 'sh']), {});
  try {
    assert.deepEqual(await waitClean(first.group), []);
  } finally {
    await second.stop();
  }
});

test('--pid keeps only that process (threads included) and --filter applies the kernel filter per event', async (t) => {
  if (!requireTracefs(t)) return;
  const w = getWorkload();
  const agent = await TracefsAgent.start(new ShellTarget(['bash']), {});
  try {
    const { hits, ended } = collectHits(agent);
    await defineWorkloadProbes(agent, w);
    // The shell waits for a line, then becomes the workload (exec keeps the pid the filter names).
    const chosen = spawn('sh', ['-c', 'read x; exec "$0" 4 chosen', w.path], { stdio: ['pipe', 'pipe', 'inherit'] });
    const done = new Promise((r) => chosen.once('exit', r));
    await agent.filterPid(chosen.pid!);
    await agent.setFilter('pl_add', 'a <= -2');
    await agent.arm();
    runWorkload(w, 4, 'other');
    chosen.stdin!.end('go\n');
    await done;
    await agent.stop();
    await ended;
    const entries = hits.filter((h) => h.kind === 'entry');
    assert.deepEqual(plainData(entries.map((h) => [h.pid, h.args.a, h.args.s])), [
      [chosen.pid, -2, 'chosen'],
      [chosen.pid, -3, 'chosen'],
      [chosen.pid, -4, 'chosen'],
    ]);
    assert.equal(hits.filter((h) => h.kind === 'return').length, 4);
  } finally {
    agent.kill('KILL');
  }
});

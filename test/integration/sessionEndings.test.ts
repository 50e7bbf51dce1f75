// A session that ends says why and keeps what it saw: `probelens trace` with a workload running, ended every way
// a session can end — the client frozen (SIGSTOP) for 5 s over SSH, the sshd child serving it killed, the agent
// killed, SIGHUP (a closed terminal) — prints one sentence on stderr naming the cause (and `error` in the JSON
// summary) and a summary whose counts equal the hits it printed. A Ctrl-C, however many events are armed, prints the
// summary without waiting for the kernel to disarm them: the agent does that after. A client that comes back from a
// pause carries on, its losses accounted: a local one (its agent sees it stopped), and one over SSH paused by Ctrl-Z
// (it tells its agent before it stops). The sshd targets share this machine's kernel.
import { test, type TestContext } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync, spawn } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { requireTracefs } from '../helpers/tracefs';
import { requireSshd, type Sshd } from '../helpers/sshd';
import { fixtureOrSkip } from '../helpers/fixtures';
import {
  holdInstance,
  isolatedEnv,
  parseJsonOutput,
  privateCopy,
  sleep,
  sshFlags,
  startCli,
  waitAllClean,
  waitForGroups,
  type CliRun,
} from './engine-harness';
import { plainData } from '../helpers/plain';

const TIMEOUT = { timeout: 300_000 };
const ARM_MS = 120_000;

interface Running {
  cli: CliRun;
  bin: string;
  group: string;
}

/**
 * Starts `trace many-O2 SPEC` (on `sshd` when given) and a workload calling the probed functions in a loop
 * until the test ends; resolves once hits are coming in.
 */
async function traceRunning(
  t: TestContext,
  spec: string | string[],
  opts: { sshd?: Sshd; json?: boolean } = {},
): Promise<Running | undefined> {
  const f = await fixtureOrSkip(t, 'many-O2');
  if (!f) return undefined;
  const bin = privateCopy(t, f.path);
  const args = [
    'trace',
    bin,
    ...(typeof spec === 'string' ? [spec] : spec),
    ...(opts.sshd ? sshFlags(opts.sshd) : []),
    ...(opts.json ? ['--json'] : []),
  ];
  const cli = startCli(t, args, isolatedEnv(t));
  const groups = await waitForGroupsFor(cli, bin);
  const work = spawn('sh', ['-c', `while :; do "$0" 200 >/dev/null; sleep 0.05; done`, bin], { stdio: 'ignore', detached: true });
  t.after(() => {
    try {
      process.kill(-work.pid!, 'SIGKILL');
    } catch {
      // gone already
    }
  });
  await cli.waitFor(/many_00\d/, 60_000, 'stdout');
  return { cli, bin, group: groups[0] };
}

async function waitForGroupsFor(cli: CliRun, bin: string): Promise<string[]> {
  const until = Date.now() + ARM_MS;
  for (;;) {
    const g = await waitForGroups(bin, 1000);
    if (g.length) return g;
    if (Date.now() > until) throw new Error(`no probes armed on ${bin}\n${cli.stderr()}`);
  }
}

/** Hits printed per probe (text or NDJSON) and the summary's counts, which must be equal. */
function printedAndSummary(
  run: Running,
  json: boolean,
): { printed: Record<string, number>; summary: Record<string, number>; error?: string; lost: number } {
  const printed: Record<string, number> = {};
  if (json) {
    const { hits, summary } = parseJsonOutput(run.cli.stdout());
    for (const h of hits) printed[h.probe as string] = (printed[h.probe as string] ?? 0) + 1;
    assert.ok(summary, `a JSON summary\n${run.cli.stderr()}`);
    return {
      printed,
      summary: summary.hits as Record<string, number>,
      error: summary.error as string | undefined,
      lost: summary.lost as number,
    };
  }
  const summary: Record<string, number> = {};
  let lost = 0;
  for (const l of run.cli.stdout().split('\n')) {
    let m = /^\d+\.\d{6} \S+ \S+-\d+\/\d+ (many_\d{3}) /.exec(l);
    if (m) printed[m[1]] = (printed[m[1]] ?? 0) + 1;
    m = /^(many_\d{3}): (\d+) hits?/.exec(l);
    if (m) summary[m[1]] = Number(m[2]);
    m = /^lost: (\d+) events/.exec(l);
    if (m) lost = Number(m[1]);
  }
  return { printed, summary, lost };
}

/** The sentences the CLI wrote on stderr that name why a session ended. */
function causeLines(cli: CliRun): string[] {
  return cli
    .stderr()
    .split('\n')
    .filter((l) => /received until then/.test(l));
}

/** Whether process `pid` is stopped (state T). */
function isStopped(pid: number): boolean {
  try {
    return /\) T /.test(readFileSync(`/proc/${pid}/stat`, 'utf8'));
  } catch {
    return false;
  }
}

/**
 * `trace many_00* x` (over `sshd` when given) paused by `sig` for 5 s while the program makes 10 probes × 20,000 calls
 * (more than the buffer holds), then resumed: every call is printed or reported lost, and it goes on tracing (10
 * more calls are printed) until Ctrl-C, which ends it as asked, with a summary equal to what was printed.
 */
async function pauseAndResume(t: TestContext, sig: 'SIGSTOP' | 'SIGTSTP', sshd?: Sshd): Promise<void> {
  if (!requireTracefs(t)) return;
  const f = await fixtureOrSkip(t, 'many-O2');
  if (!f) return;
  const bin = privateCopy(t, f.path);
  const cli = startCli(t, ['trace', bin, 'many_00* x', ...(sshd ? sshFlags(sshd) : [])], isolatedEnv(t));
  await cli.waitFor(/tracing \d+ probes? at 10 sites on /, ARM_MS);
  execFileSync(bin, ['1'], { stdio: 'ignore' });
  await cli.waitFor(/many_009 x=0\b/, 60_000, 'stdout');
  process.kill(cli.child.pid!, sig);
  if (sig === 'SIGTSTP') await cli.waitFor(/paused: the targets keep tracing/, 30_000);
  const stoppedBy = Date.now() + 30_000;
  while (!isStopped(cli.child.pid!) && Date.now() < stoppedBy) await sleep(50);
  assert.ok(isStopped(cli.child.pid!), 'the client is stopped');
  const started = Date.now();
  execFileSync(bin, ['20000'], { stdio: 'ignore' });
  await sleep(Math.max(0, 5000 - (Date.now() - started)));
  process.kill(cli.child.pid!, 'SIGCONT');
  // Back: every call is either printed or reported lost (a state, not a time); then 10 calls more.
  const lostSoFar = () => [...cli.stderr().matchAll(/(\d+) events lost/g)].reduce((n, m) => n + Number(m[1]), 0);
  const printedSoFar = () => (cli.stdout().match(/ many_00\d x=/g) ?? []).length;
  const accounted = async (n: number) => {
    const until = Date.now() + 120_000;
    while (printedSoFar() + lostSoFar() < n && Date.now() < until && cli.child.exitCode === null) await sleep(200);
  };
  await accounted(10 + 200_000);
  t.diagnostic(`printed ${printedSoFar()}, reported lost ${lostSoFar()} of ${10 + 200_000} calls`);
  execFileSync(bin, ['1'], { stdio: 'ignore' });
  const expected = 10 + 200_000 + 10;
  await accounted(expected);
  cli.child.kill('SIGINT');
  const { code, signal } = await cli.exit;
  assert.equal(code, 0, `exit ${code} ${signal}\n${cli.stderr()}`);
  assert.equal(causeLines(cli).length, 0, 'no early end to report');
  const { printed, summary, lost } = printedAndSummary({ cli, bin, group: '' }, false);
  assert.deepEqual(plainData(summary), printed, 'the summary counts the hits printed');
  const total = Object.values(printed).reduce((a, b) => a + b, 0);
  assert.ok(lost > 0, 'the pause overflowed the buffer, and that is reported');
  assert.equal(total + lost, expected, 'every call is printed or counted lost');
  assert.doesNotMatch(cli.stdout(), /mismatch/, 'received + lost = the kernel count');
}

test(
  'a local client stopped for 5 s (SIGSTOP, as a debugger does) comes back to its session: hits go on, losses are accounted',
  TIMEOUT,
  (t) => pauseAndResume(t, 'SIGSTOP'),
);

test(
  'an SSH client paused by Ctrl-Z (SIGTSTP) for 5 s comes back to its session: the agent kept tracing, losses are accounted',
  TIMEOUT,
  async (t) => {
    const sshd = await requireSshd(t);
    if (sshd) await pauseAndResume(t, 'SIGTSTP', sshd);
  },
);

test(
  'an SSH client frozen for 5 s (SIGSTOP, which it cannot announce): the agent ends the session, and the client says so with what it received',
  TIMEOUT,
  async (t) => {
    if (!requireTracefs(t)) return;
    const sshd = await requireSshd(t);
    if (!sshd) return;
    const run = await traceRunning(t, 'many_00* x', { sshd, json: true });
    if (!run) return;
    process.kill(run.cli.child.pid!, 'SIGSTOP');
    await sleep(5000);
    process.kill(run.cli.child.pid!, 'SIGCONT');
    const { code, signal } = await run.cli.exit;
    assert.equal(code, 1, `exit ${code} ${signal}\n${run.cli.stderr()}`);
    const causes = causeLines(run.cli);
    assert.equal(causes.length, 1, run.cli.stderr());
    assert.match(causes[0], /heard nothing from ProbeLens for 3 s/);
    const { printed, summary, error } = printedAndSummary(run, true);
    assert.match(error ?? '', /heard nothing from ProbeLens/);
    assert.deepEqual(plainData(summary), printed, 'the summary counts the hits printed');
    assert.ok(Object.keys(printed).length > 0);
    assert.deepEqual(await waitAllClean([run.group], 30_000), []);
  },
);

test('the sshd child serving the session killed: the connection is named lost, with what was received', TIMEOUT, async (t) => {
  if (!requireTracefs(t)) return;
  const sshd = await requireSshd(t);
  if (!sshd) return;
  const run = await traceRunning(t, 'many_00* x', { sshd });
  if (!run) return;
  const children = execFileSync('pgrep', ['-P', String(sshd.pid)], { encoding: 'utf8' })
    .trim()
    .split('\n')
    .filter(Boolean);
  assert.ok(children.length > 0, 'sshd serves the session from a child');
  for (const c of children) process.kill(Number(c), 'SIGKILL');
  const { code, signal } = await run.cli.exit;
  assert.equal(code, 1, `exit ${code} ${signal}\n${run.cli.stderr()}`);
  const causes = causeLines(run.cli);
  assert.equal(causes.length, 1, run.cli.stderr());
  assert.match(causes[0], /the connection to \S+ was lost/);
  const { printed, summary } = printedAndSummary(run, false);
  assert.deepEqual(plainData(summary), printed, 'the summary counts the hits printed');
  assert.deepEqual(await waitAllClean([run.group], 30_000), []);
});

test(
  'the agent killed (a crash, kill -9): the client names it with what it received, and nothing is left on the target',
  TIMEOUT,
  async (t) => {
    if (!requireTracefs(t)) return;
    const run = await traceRunning(t, 'many_00* x');
    if (!run) return;
    // Armed (hits can be printed before arming's last reply): a kill while arming is another case.
    await run.cli.waitFor(/tracing \d+ probes? at \d+ sites/, ARM_MS);
    const agentPid = Number(/^probelens_(\d+)_/.exec(run.group)![1]);
    process.kill(agentPid, 'SIGKILL');
    const { code, signal } = await run.cli.exit;
    assert.equal(code, 1, `exit ${code} ${signal}\n${run.cli.stderr()}`);
    const causes = causeLines(run.cli);
    assert.equal(causes.length, 1, run.cli.stderr());
    // "; what it left on the target was removed" follows when the sweep finished within its bound (30 s): on a
    // heavily loaded machine it may not have, and the target must be clean all the same.
    assert.match(causes[0], /the agent on local was killed \(SIGKILL\)/, run.cli.stderr());
    const { printed, summary } = printedAndSummary(run, false);
    assert.deepEqual(plainData(summary), printed, 'the summary counts the hits printed');
    assert.ok(Object.keys(printed).length > 0);
    assert.deepEqual(await waitAllClean([run.group], 60_000), [], 'the dead agent’s probes, reader and instance are removed');
  },
);

test('the agent killed while arming 300 events: the client says so and nothing is left on the target', TIMEOUT, async (t) => {
  if (!requireTracefs(t)) return;
  const f = await fixtureOrSkip(t, 'wide');
  if (!f) return;
  const bin = privateCopy(t, f.path);
  // One event per spec (each names its argument differently): arming takes the kernel many seconds.
  const specs = Array.from({ length: 300 }, (_, i) => `wide_${1000 + i} x${i}=x`);
  const cli = startCli(t, ['trace', bin, ...specs, '--max-sites', '300'], isolatedEnv(t));
  const groups = await waitForGroupsFor(cli, bin);
  assert.doesNotMatch(cli.stderr(), /tracing \d+ probes?/, 'still arming when the agent is killed');
  process.kill(Number(/^probelens_(\d+)_/.exec(groups[0])![1]), 'SIGKILL');
  const { code, signal } = await cli.exit;
  assert.equal(code, 1, `exit ${code} ${signal}\n${cli.stderr()}`);
  assert.match(cli.stderr(), /local: the tracefs agent exited \(code null, signal KILL\)/);
  assert.deepEqual(await waitAllClean(groups, 60_000), [], 'what the killed agent had defined is removed');
});

test(
  'Ctrl-C typed in a terminal (SIGINT to the whole foreground process group): a complete stop, with the kernel’s counts',
  TIMEOUT,
  async (t) => {
    if (!requireTracefs(t)) return;
    const f = await fixtureOrSkip(t, 'many-O2');
    if (!f) return;
    const bin = privateCopy(t, f.path);
    const cli = startCli(t, ['trace', bin, 'many_00* x'], isolatedEnv(t), { ownGroup: true });
    await cli.waitFor(/tracing \d+ probes? at 10 sites on local/, ARM_MS);
    const groups = await waitForGroupsFor(cli, bin);
    execFileSync(bin, ['3'], { stdio: 'ignore' });
    await cli.waitFor(/many_009 x=2\b/, 60_000, 'stdout');
    // What a terminal does: the signal goes to every process of the job's group, the CLI and what it started there.
    process.kill(-cli.child.pid!, 'SIGINT');
    const { code, signal } = await cli.exit;
    assert.equal(code, 0, `exit ${code} ${signal}\n${cli.stderr()}`);
    assert.equal(causeLines(cli).length, 0, `no early end to report\n${cli.stderr()}`);
    const { printed, summary } = printedAndSummary({ cli, bin, group: groups[0] }, false);
    assert.deepEqual(plainData(summary), printed, 'the summary counts the hits printed');
    assert.equal(
      Object.values(printed).reduce((a, b) => a + b, 0),
      30,
    );
    assert.match(cli.stdout(), /^many_000: 3 hits \(kernel counted 3\)$/m);
    assert.deepEqual(await waitAllClean(groups, 30_000), []);
  },
);

test('SIGHUP (the terminal closed): the session stops, says why, and its summary has the kernel counts', TIMEOUT, async (t) => {
  if (!requireTracefs(t)) return;
  const run = await traceRunning(t, 'many_00* x');
  if (!run) return;
  run.cli.child.kill('SIGHUP');
  const { code, signal } = await run.cli.exit;
  assert.equal(code, 1, `exit ${code} ${signal}\n${run.cli.stderr()}`);
  const causes = causeLines(run.cli);
  assert.equal(causes.length, 1, run.cli.stderr());
  assert.match(causes[0], /the terminal closed \(SIGHUP\)/);
  const { printed, summary } = printedAndSummary(run, false);
  assert.deepEqual(plainData(summary), printed, 'the summary counts the hits printed');
  assert.match(run.cli.stdout(), /many_00\d: \d+ hits? \(kernel counted \d+\)/);
  assert.deepEqual(await waitAllClean([run.group], 30_000), []);
});

test(
  'Ctrl-C on 100 events while their program runs: the summary at once, every record accounted for, the agent disarms after',
  TIMEOUT,
  async (t) => {
    if (!requireTracefs(t)) return;
    // Points that fetch the same names share one event, which disarms at once: each spec names its argument
    // differently, so the 100 are 100 events, whose disarming takes the kernel seconds.
    const specs = Array.from({ length: 100 }, (_, i) => `many_${String(i).padStart(3, '0')} x${i}=x`);
    const run = await traceRunning(t, specs, { json: true });
    if (!run) return;
    // Held open, a file of the instance keeps the agent's teardown from finishing (see holdInstance).
    const release = holdInstance(run.group);
    t.after(release);
    run.cli.child.kill('SIGINT');
    const { code, signal } = await run.cli.exit;
    assert.equal(code, 0, `exit ${code} ${signal}\n${run.cli.stderr()}`);
    assert.deepEqual(causeLines(run.cli), [], run.cli.stderr());
    assert.doesNotMatch(run.cli.stderr(), /disarming/, 'nothing to wait for is announced');
    const { printed, summary, error } = printedAndSummary(run, true);
    assert.equal(error, undefined);
    assert.deepEqual(plainData(summary), printed, 'the summary counts the hits printed');
    // The program kept calling the probes through the stop: the kernel went on counting after recording had
    // stopped, and its count at that cut still matches what arrived.
    const json = parseJsonOutput(run.cli.stdout()).summary!;
    assert.equal(json.mismatch, 0, JSON.stringify(json));
    const total = (o: Record<string, number>) => Object.values(o).reduce((a, b) => a + b, 0);
    assert.equal(total(json.kernelHits as Record<string, number>), total(summary) + (json.lost as number), 'received + lost = kernelHits');
    if (json.lost === 0) assert.deepEqual(plainData(json.kernelHits), summary, 'the kernel counted what arrived, probe by probe');
    assert.ok(existsSync(`/sys/kernel/tracing/instances/${run.group}`), 'the CLI left while its agent was disarming');
    release();
    assert.deepEqual(await waitAllClean([run.group], 120_000), [], 'the agent removed its probes by itself');
  },
);

test(
  'Ctrl-C on 2,000 probes of 2,000 events: the client leaves with its summary, the agent disarms them after, the target ends clean',
  { timeout: 600_000 },
  async (t) => {
    if (!requireTracefs(t)) return;
    const f = await fixtureOrSkip(t, 'wide');
    if (!f) return;
    const bin = privateCopy(t, f.path);
    // One event per spec (each names its argument differently), as on a kernel whose sites cannot share events:
    // about 90 s of kernel time to disarm, which nobody waits for.
    const specs = Array.from({ length: 2000 }, (_, i) => `wide_${1000 + i} x${i}=x`);
    const cli = startCli(t, ['trace', bin, ...specs, '--max-sites', '2000', '--json'], isolatedEnv(t));
    const groups = await waitForGroupsFor(cli, bin);
    // A run a second (2,000 hits): enough to stop with hits coming, not a flood that starves the client.
    const work = spawn('sh', ['-c', `while :; do "$0" 1 >/dev/null; sleep 1; done`, bin], { stdio: 'ignore', detached: true });
    t.after(() => {
      try {
        process.kill(-work.pid!, 'SIGKILL');
      } catch {
        // gone already
      }
    });
    await cli.waitFor(/wide_\d{4}/, 120_000, 'stdout');
    const run: Running = { cli, bin, group: groups[0] };
    const release = holdInstance(run.group);
    t.after(release);
    cli.child.kill('SIGINT');
    const { code, signal } = await cli.exit;
    assert.equal(code, 0, `exit ${code} ${signal}\n${cli.stderr()}`);
    assert.deepEqual(causeLines(cli), [], cli.stderr());
    const { printed, summary, error } = printedAndSummary(run, true);
    assert.equal(error, undefined);
    assert.deepEqual(plainData(summary), printed, 'the summary counts the hits printed');
    assert.ok(existsSync(`/sys/kernel/tracing/instances/${run.group}`), 'the CLI left while its agent was disarming');
    process.kill(-work.pid!, 'SIGKILL');
    release();
    // The agent finishes the disarm by itself (about 45 ms of kernel time per event): bounded generously.
    assert.deepEqual(await waitAllClean([run.group], 400_000), [], 'the agent removed its probes by itself');
  },
);

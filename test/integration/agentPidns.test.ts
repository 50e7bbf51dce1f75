// Ownership across PID namespaces, on this machine's real tracefs: sessions whose agents run in separate PID
// namespaces (`unshare --pid --fork --mount-proc`, as in a privileged container sharing the host's tracefs) keep
// each other's probes; a dead owner's leftovers go only when someone can prove it dead; `cleanup --force`.
import { test, type TestContext } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { readFileSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { requireTracefs } from '../helpers/tracefs';
import { missing } from '../helpers/require';
import { TracefsAgent } from '../../src/core/tracefs/agentClient';
import { LocalTarget } from '../../src/core/target/local';
import type { ExecChannel, ExecOptions, Target } from '../../src/core/target/target';
import { buildWorkload, collectHits, defineWorkloadProbes, leftovers, runWorkload, type Workload } from './agentHarness';
import { plainData } from '../helpers/plain';

const UNSHARE = ['unshare', '--pid', '--fork', '--mount-proc'];
// For the client processes: killing unshare (the test's cleanup) takes the whole namespace with it.
const UNSHARE_KILL = [...UNSHARE, '--kill-child'];
const CLIENT = join(__dirname, 'agentClientProcess.ts');
const CLI = join(__dirname, '../../src/cli/main.ts');

/** Runs the agent in a new PID namespace with its own /proc. */
class NamespaceTarget implements Target {
  readonly host = 'local';
  private readonly local = new LocalTarget();
  describe(): string {
    return 'local (own PID namespace)';
  }
  exec(argv: readonly string[], opts?: ExecOptions): Promise<ExecChannel> {
    return this.local.exec([...UNSHARE, ...argv], opts);
  }
  close(): Promise<void> {
    return this.local.close();
  }
}

function requireUnshare(t: TestContext): boolean {
  if (!requireTracefs(t)) return false;
  const r = spawnSync(UNSHARE[0], [...UNSHARE.slice(1), 'true'], { encoding: 'utf8' });
  if (r.status !== 0) {
    missing(t, `unshare --pid --fork --mount-proc does not work here (needs root): ${(r.stderr || String(r.error)).trim()}`);
    return false;
  }
  return true;
}

let workload: Workload | undefined;
const getWorkload = () => (workload ??= buildWorkload());

function ppidOf(pid: number): number | undefined {
  try {
    // The comm field may hold spaces and parentheses: the fields after the last ')' are fixed.
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
  } catch {
    return undefined;
  }
}

/** Host pids of `root`'s descendants whose argv[0] is `argv0` and whose command line contains `needle`. */
function descendants(root: number, argv0: string, needle: string): number[] {
  const pids = readdirSync('/proc')
    .filter((p) => /^\d+$/.test(p))
    .map(Number);
  const out: number[] = [];
  for (const pid of pids) {
    let p: number | undefined = pid;
    for (let i = 0; i < 50 && p && p !== root; i++) p = ppidOf(p);
    if (p !== root || pid === root) continue;
    try {
      const cmd = readFileSync(`/proc/${pid}/cmdline`, 'utf8');
      if (cmd.split('\0')[0] === argv0 && cmd.includes(needle)) out.push(pid);
    } catch {
      // gone
    }
  }
  return out;
}

/** Start time (clock ticks since boot) of `pid`, or undefined once it is gone. */
function startTimeOf(pid: number): number | undefined {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[19]);
  } catch {
    return undefined;
  }
}

/**
 * The agent the client `client` started: its child running the agent script. The agent's heartbeat watchdog is a
 * forked copy of the agent shell (same command line) that the agent orphans on purpose; where the client is its
 * namespace's init, each watchdog becomes the client's child too. The agent is the oldest: it forks every watchdog.
 */
function agentOf(client: number): number | undefined {
  const shells = descendants(client, 'sh', 'probelens-agent').filter((p) => ppidOf(p) === client);
  const started = shells.map((p) => [p, startTimeOf(p)] as const).filter((e): e is readonly [number, number] => e[1] !== undefined);
  started.sort((a, b) => a[1] - b[1] || a[0] - b[0]);
  return started[0]?.[0];
}

/** Exited: gone, or a zombie (in a namespace whose init does not reap, an orphan stays one). */
function exited(pid: number): boolean {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return stat.slice(stat.lastIndexOf(')') + 2).startsWith('Z');
  } catch {
    return true;
  }
}

async function until<T>(what: string, f: () => T | undefined, ms = 20_000): Promise<T> {
  const end = Date.now() + ms;
  for (;;) {
    const v = f();
    if (v !== undefined) return v;
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

/** Starts the client process (agentClientProcess.ts) under `argv`; resolves with its armed group. */
async function startClient(t: TestContext, argv: string[]): Promise<{ child: ChildProcess; group: string }> {
  const child = spawn(argv[0], argv.slice(1), { stdio: ['ignore', 'pipe', 'inherit'] });
  t.after(() => child.kill('SIGKILL'));
  const group = await new Promise<string>((resolve, reject) => {
    let out = '';
    child.stdout!.on('data', (c: Buffer) => {
      out += c.toString();
      if (out.includes('\n')) resolve(out.trim());
    });
    child.once('exit', (code) => reject(new Error(`client exited early (${code})`)));
    // In a namespace whose init outlives it, the client's own exit is not seen here.
    setTimeout(() => reject(new Error('the client did not arm within 60 s (its error is above)')), 60_000).unref();
  });
  return { child, group };
}

const clientArgv = () => [process.execPath, '--import', 'tsx', CLIENT];

test("sessions in different PID namespaces keep each other's probes: the host proves the container agent alive, the container cannot judge the host and keeps it", async (t) => {
  if (!requireUnshare(t)) return;
  const w = getWorkload();
  const inNs = await TracefsAgent.start(new NamespaceTarget(), {});
  t.after(() => inNs.kill('KILL'));
  assert.equal(inNs.hello.pid, 1, 'the agent is its namespace’s first process');
  const nsHits = collectHits(inNs);
  await defineWorkloadProbes(inNs, w);
  await inNs.arm();

  const host = await TracefsAgent.start(new LocalTarget(), {});
  t.after(() => host.kill('KILL'));
  assert.ok(!host.hello.swept.includes(inNs.group), `the host session swept ${inNs.group}, whose agent is alive`);
  assert.ok(!host.hello.undecided.some((u) => u.group === inNs.group), 'the host sees every namespace: it can judge');
  const hostHits = collectHits(host);
  await defineWorkloadProbes(host, w);
  await host.arm();

  // A second container: neither the host's namespace nor the first container's is visible from its /proc.
  const other = await TracefsAgent.start(new NamespaceTarget(), {});
  t.after(() => other.kill('KILL'));
  for (const g of [host.group, inNs.group]) {
    assert.ok(!other.hello.swept.includes(g), `the other container swept ${g}`);
    const u = other.hello.undecided.find((x) => x.group === g);
    assert.ok(u, `${g} is named as undecided: ${JSON.stringify(other.hello.undecided)}`);
    assert.match(u.why, /PID namespace \([0-9a-f]+_[0-9a-f]+\) is not visible/);
  }
  await other.stop();

  for (const g of [inNs.group, host.group]) assert.ok(leftovers(g).length >= 3, `${g}: two definitions, its instance and its reader`);
  runWorkload(w, 3);
  await Promise.all([inNs.stop(), host.stop()]);
  await Promise.all([nsHits.ended, hostHits.ended]);
  // Both sessions still received every call: nothing of theirs was disabled or removed.
  for (const [name, hits] of [
    ['container', nsHits.hits],
    ['host', hostHits.hits],
  ] as const) {
    assert.deepEqual(plainData(hits.filter((h) => h.kind === 'entry').map((h) => h.args.a)), [-1, -2, -3], name);
  }
  await Promise.all([inNs.exit, host.exit]);
  assert.deepEqual(leftovers(inNs.group), []);
  assert.deepEqual(leftovers(host.group), []);
});

test("kill -9 of a client in a container that is not the namespace's init: its own agent removes its probes before it exits", async (t) => {
  if (!requireUnshare(t)) return;
  getWorkload();
  // The namespace's init (sleep, as a container's long-lived init) outlives the client, its child; the agent is
  // the client's child. (An init that exits takes every process of its namespace with it: see the next test.)
  const { child, group } = await startClient(t, [...UNSHARE_KILL, 'sh', '-c', '"$@" & exec sleep 100000', 'init', ...clientArgv()]);
  const [client] = await until('the client', () =>
    [descendants(child.pid!, process.execPath, 'agentClientProcess.ts')].find((l) => l.length === 1),
  );
  const agent = await until('the agent', () => agentOf(client));
  assert.ok(leftovers(group).length >= 3, 'armed before the kill');
  process.kill(client, 'SIGKILL');
  // Sweeps never touch a group whose owner is alive: what is gone by the time the agent has exited, the agent removed.
  await until('the agent to exit', () => (exited(agent) ? true : undefined));
  assert.deepEqual(leftovers(group), [], 'the agent removed everything before exiting');
  t.diagnostic(`${group}: removed by its own agent (stdin EOF) before it exited`);
});

test("kill -9 of a client that is its namespace's init takes the agent with it: the host's next session proves the namespace empty and sweeps", async (t) => {
  if (!requireUnshare(t)) return;
  getWorkload();
  const { child, group } = await startClient(t, [...UNSHARE_KILL, ...clientArgv()]);
  const [client] = await until('the client', () =>
    [descendants(child.pid!, process.execPath, 'agentClientProcess.ts')].find((l) => l.length === 1),
  );
  const agent = await until('the agent', () => agentOf(client));
  process.kill(client, 'SIGKILL');
  await until('the agent to be killed with its namespace', () => (exited(agent) ? true : undefined));
  const before = leftovers(group);
  const host = await TracefsAgent.start(new LocalTarget(), {});
  await host.stop();
  assert.ok(!host.hello.undecided.some((u) => u.group === group), 'the host can judge every namespace');
  assert.deepEqual(leftovers(group), []);
  if (before.length === 0) {
    t.diagnostic(`${group}: already swept by another session on this machine`);
  } else {
    assert.ok(
      before.some((l) => /^[pr]:/.test(l)),
      `the agent died with its definitions in place: ${before.join('; ')}`,
    );
    assert.ok(host.hello.swept.includes(group), `swept: ${host.hello.swept.join(', ')}`);
    t.diagnostic(`${group}: left behind by the killed agent (${before.length} items), removed by the host session's sweep`);
  }
});

/** Runs `probelens cleanup ARGS` without blocking this process (whose agent's heartbeats must go on). */
function cli(args: string[], inNamespace: boolean): Promise<{ status: number | null; stdout: string; stderr: string }> {
  const argv = [process.execPath, '--import', 'tsx', CLI, 'cleanup', ...args];
  const full = inNamespace ? [...UNSHARE_KILL, ...argv] : argv;
  const child = spawn(full[0], full.slice(1), { stdio: ['ignore', 'pipe', 'pipe'] });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (c: Buffer) => (stdout += c.toString()));
  child.stderr.on('data', (c: Buffer) => (stderr += c.toString()));
  return new Promise((resolve) => child.once('close', (status) => resolve({ status, stdout, stderr })));
}

test('cleanup in a container names the host session it cannot judge and keeps it; --force removes it there; the host refuses --force on a live owner', async (t) => {
  if (!requireUnshare(t)) return;
  const w = getWorkload();
  // Defined, not armed: no reader holds the instance open (a reader in the host's namespace is beyond the
  // container's reach), so a forced removal can complete.
  const host = await TracefsAgent.start(new LocalTarget(), {});
  t.after(() => host.kill('KILL'));
  await defineWorkloadProbes(host, w);
  const g = host.group;

  const listed = await cli([], true);
  assert.equal(listed.status, 0, listed.stderr);
  assert.match(
    listed.stdout,
    new RegExp(
      `^local: kept ${g}: cannot tell whether its owner is alive \\(its PID namespace \\([0-9a-f_]+\\) is not visible from this agent's /proc\\); .*probelens cleanup --force ${g}$`,
      'm',
    ),
  );
  assert.equal(leftovers(g).length, 3, 'kept: two definitions and the instance');

  const refused = await cli(['--force', g], false);
  assert.equal(refused.status, 1, refused.stdout);
  assert.match(refused.stderr, new RegExp(`not removing ${g}: FORCE failed \\(EBUSY\\): its owner is alive`));
  assert.equal(leftovers(g).length, 3);

  const bad = await cli(['--force', 'probelens_1_x;rm'], false);
  assert.equal(bad.status, 2);
  assert.match(bad.stderr, /--force takes a ProbeLens group name/);

  const forced = await cli(['--force', g], true);
  assert.equal(forced.status, 0, forced.stderr);
  assert.match(forced.stdout, new RegExp(`^local: removed ${g}$`, 'm'));
  assert.deepEqual(leftovers(g), []);
  await host.stop();
});

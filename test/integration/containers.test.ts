// Programs inside containers: the same build runs on the host and in two containers made as a container runtime makes
// them (util-linux unshare: new mount, PID and UTS namespaces; a root filesystem of its own holding a copy of the
// binary, another inode). `probelens ps BIN` lists every process of the build with both PIDs; `trace --pid` of a
// container's process, by its host PID or by its PID in its namespace, arms its copy and counts exactly its calls,
// locally and over SSH; a PID that names two processes, or a process of another build, is refused before arming.
import { test, type TestContext } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { copyFileSync, existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { CONTAINER, PROGRAM, start, type Running } from '../helpers/containers';
import { join } from 'node:path';
import { requireTracefs } from '../helpers/tracefs';
import { missing } from '../helpers/require';
import { requireSshd } from '../helpers/sshd';
import { isolatedEnv, parseJsonOutput, runCli, scratch, sleep, sshFlags, startCli, waitAllClean, waitForGroups } from './engine-harness';

const TRACING = '/sys/kernel/tracing';
const CALLS = { host: 29, one: 37, two: 41 };

/** The build, static (a container's root holds nothing else), and two roots holding copies of it. */
function setUp(t: TestContext): { bin: string; roots: [string, string] } | undefined {
  const dir = scratch(t, 'pl-containers-');
  writeFileSync(join(dir, 'work.c'), PROGRAM);
  const bin = join(dir, 'work');
  const cc = spawnSync('gcc', ['-O2', '-g', '-static', '-Wl,--build-id', '-o', bin, join(dir, 'work.c')], { encoding: 'utf8' });
  if (cc.error || cc.status !== 0) {
    missing(t, `gcc with a static libc: ${cc.error?.message ?? cc.stderr}`);
    return undefined;
  }
  if (spawnSync('unshare', ['--version']).status !== 0) {
    missing(t, 'util-linux unshare');
    return undefined;
  }
  const roots = ['ctr1', 'ctr2'].map((n) => {
    const r = join(dir, n);
    mkdirSync(r);
    copyFileSync(bin, join(r, 'app'));
    return r;
  }) as [string, string];
  return { bin, roots };
}

/** The host's run and the two containers (the second's calls made by a forked child, PID 2 there). */
async function runAll(t: TestContext, bin: string, roots: [string, string]): Promise<{ host: Running; one: Running; two: Running }> {
  const ns = CONTAINER;
  const host = await start([bin, String(CALLS.host)], 0);
  const one = await start([...ns, roots[0], '/app', String(CALLS.one)], 1);
  const two = await start([...ns, roots[1], '/app', String(CALLS.two), 'fork'], 2);
  t.after(() => {
    for (const r of [host, one, two]) r.child.kill('SIGKILL');
    for (const r of [one, two]) for (const p of r.all) spawnSync('kill', ['-9', String(p)]);
  });
  return { host, one, two };
}

/** Until every event of the group probing `path` is enabled (the CLI with --json says nothing when armed). */
async function armed(path: string): Promise<string> {
  const until = Date.now() + 120_000;
  for (;;) {
    const [g] = await waitForGroups(path, 1_000);
    if (g) {
      const dir = join(TRACING, 'instances', g, 'events', g);
      const events = existsSync(dir) ? readdirSync(dir).filter((e) => existsSync(join(dir, e, 'enable'))) : [];
      if (events.length && events.every((e) => readFileSync(join(dir, e, 'enable'), 'utf8').trim() === '1')) return g;
    }
    if (Date.now() > until) throw new Error(`nothing armed on ${path}`);
    await sleep(100);
  }
}

test('ps lists the build on the host and in two containers with both PIDs; trace --pid counts only that container process', async (t) => {
  if (!requireTracefs(t)) return;
  const s = setUp(t);
  if (!s) return;
  const { host, one, two } = await runAll(t, s.bin, s.roots);
  assert.equal(one.nsPid, 1, 'the first container runs the program as its PID 1');
  assert.equal(two.nsPid, 2, "the second's worker is PID 2 there");

  const ps = await runCli(t, ['ps', s.bin, '--json'], isolatedEnv(t));
  assert.equal(ps.code, 0, ps.stderr);
  const listed = (JSON.parse(ps.stdout) as { processes: Array<{ host: string; pid: number; nsPid: number; path: string }> }).processes;
  const byPid = new Map(listed.map((p) => [p.pid, p]));
  assert.deepEqual(
    [...byPid.keys()].sort((a, b) => a - b),
    [host.hostPid, ...one.all, ...two.all].sort((a, b) => a - b),
    `the build's processes, and only they: ${ps.stdout}`,
  );
  assert.deepEqual(byPid.get(host.hostPid), { host: 'local', pid: host.hostPid, nsPid: host.hostPid, path: s.bin });
  assert.deepEqual(byPid.get(one.hostPid), { host: 'local', pid: one.hostPid, nsPid: 1, path: join(s.roots[0], 'app') });
  assert.deepEqual(byPid.get(two.hostPid), { host: 'local', pid: two.hostPid, nsPid: 2, path: join(s.roots[1], 'app') });
  const text = await runCli(t, ['ps', s.bin], isolatedEnv(t));
  assert.match(
    text.stdout,
    new RegExp(`^local +${one.hostPid} +1 +${join(s.roots[0], 'app').replace(/[.+]/g, '\\$&')}$`, 'm'),
    text.stdout,
  );

  // By the host PID: the first container's copy is armed, and only its calls are counted.
  const cli = startCli(t, ['trace', s.bin, 'work n', '--pid', String(one.hostPid), '--json'], isolatedEnv(t));
  const group = await armed(join(s.roots[0], 'app'));
  for (const r of [host, one, two]) r.go();
  for (const r of [host, one, two]) assert.match(await r.done, /^done /m);
  await sleep(500);
  cli.child.kill('SIGINT');
  const { code } = await cli.exit;
  assert.equal(code, 0, cli.stderr());
  const { hits, summary } = parseJsonOutput(cli.stdout());
  assert.equal(hits.length, CALLS.one, `exactly the container's ${CALLS.one} calls: ${cli.stderr()}`);
  assert.ok(
    hits.every((h) => h.pid === one.hostPid && h.nsPid === 1),
    'each hit has the host PID and the container PID',
  );
  assert.deepEqual(
    hits.map((h) => (h.args as Record<string, unknown>).n),
    [...Array(CALLS.one).keys()],
  );
  assert.equal(summary?.lost, 0);
  assert.match(cli.stderr(), new RegExp(`local: pid ${one.hostPid} is process ${one.hostPid} there \\(PID 1 in its own namespace\\)`));
  assert.deepEqual(await waitAllClean([group], 10_000), [], 'nothing left');
});

test('trace --pid by the PID a container gives its process, over SSH too; an ambiguous PID and another build are refused', async (t) => {
  if (!requireTracefs(t)) return;
  const s = setUp(t);
  if (!s) return;
  const sshd = await requireSshd(t);
  if (!sshd) return;
  const { one, two } = await runAll(t, s.bin, s.roots);
  // While both containers run. PID 1: the host's init runs another build, and both containers have a PID 1 of this one.
  const ambiguous = await runCli(t, ['trace', s.bin, 'work n', '--pid', '1'], isolatedEnv(t));
  assert.equal(ambiguous.code, 1);
  assert.match(
    ambiguous.stderr,
    new RegExp(
      `several processes on local run .* as PID 1 in their own namespaces \\(host PIDs (${one.hostPid}, ${two.all[0]}|${two.all[0]}, ${one.hostPid})\\): name one by its host PID; nothing was armed`,
    ),
  );
  const other = await runCli(t, ['trace', s.bin, 'work n', '--pid', String(process.pid)], isolatedEnv(t));
  assert.equal(other.code, 1);
  assert.match(
    other.stderr,
    new RegExp(`process ${process.pid} on local does not run .*: neither its executable nor a file it maps holds that build-id`),
  );
  assert.equal(readFileSync(join(TRACING, 'uprobe_events'), 'utf8').includes(s.roots[0]), false, 'nothing was armed');
  // PID 2 on the host is a kernel thread (no build): the second container's worker is meant.
  const cli = startCli(t, ['trace', s.bin, 'work n', '--pid', '2', '--json', ...sshFlags(sshd)], isolatedEnv(t));
  const group = await armed(join(s.roots[1], 'app'));
  one.go();
  two.go();
  for (const r of [one, two]) assert.match(await r.done, /^done /m);
  await sleep(500);
  cli.child.kill('SIGINT');
  assert.equal((await cli.exit).code, 0, cli.stderr());
  const { hits } = parseJsonOutput(cli.stdout());
  assert.equal(hits.length, CALLS.two, cli.stderr());
  assert.ok(hits.every((h) => h.pid === two.hostPid && h.nsPid === 2));
  assert.match(cli.stderr(), new RegExp(`pid 2 is process ${two.hostPid} there \\(PID 2 in its own namespace\\); its build is armed at `));
  assert.deepEqual(await waitAllClean([group], 10_000), []);
});

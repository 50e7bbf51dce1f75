// Debug information from a server: a stripped build whose debug file lives only on a debuginfod server (Debian's
// real debuginfod serving a directory on 127.0.0.1, named by DEBUGINFOD_URLS). `functions`, `define` and `trace` work
// on the stripped binary with the server up (the file fetched by build-id into the XDG cache, with progress on
// stderr), say why with it down, and use the cache afterwards without it. A server that serves another build's file
// is not believed.
import { test, type TestContext } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync, spawn, spawnSync } from 'node:child_process';
import { createServer } from 'node:http';
import { mkdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { missing } from '../helpers/require';
import { freePort } from '../helpers/sshd';
import { requireTracefs } from '../helpers/tracefs';
import { isolatedEnv, parseJsonOutput, runCli, scratch, sleep, startCli, waitForGroups } from './engine-harness';

const WORKLOAD = join(__dirname, '..', 'fixtures', 'trace-samples', 'workload.c');

/** A -g build, its stripped copy and its debug file alone (objcopy --only-keep-debug) in `served/`. */
function builds(t: TestContext): { dir: string; full: string; stripped: string; served: string } {
  const dir = scratch(t, 'pl-debuginfod-');
  const full = join(dir, 'workload');
  execFileSync('gcc', ['-O2', '-g', '-Wl,--build-id', '-o', full, WORKLOAD]);
  const served = join(dir, 'served');
  mkdirSync(served);
  execFileSync('objcopy', ['--only-keep-debug', full, join(served, 'workload.debug')]);
  const stripped = join(dir, 'stripped');
  execFileSync('objcopy', ['--strip-debug', full, stripped]);
  return { dir, full, stripped, served };
}

/** Debian's debuginfod over `dir` on a free port; resolves once it serves `buildId`. Stopped after the test. */
async function debuginfod(t: TestContext, dir: string, buildId: string): Promise<{ url: string; stop(): void } | undefined> {
  if (spawnSync('sh', ['-c', 'command -v debuginfod']).status !== 0) {
    missing(t, 'debuginfod (Debian package debuginfod)');
    return undefined;
  }
  const port = await freePort();
  const child = spawn('debuginfod', ['-F', dir, '-p', String(port), '-d', join(dir, '..', 'debuginfod.sqlite')], { stdio: 'ignore' });
  const stop = () => child.kill('SIGKILL');
  t.after(stop);
  const url = `http://127.0.0.1:${port}`;
  // It scans the directory after it starts: until then it answers 404.
  for (const until = Date.now() + 60_000; Date.now() < until; await sleep(200)) {
    const ok = await fetch(`${url}/buildid/${buildId}/debuginfo`).then(
      (r) => (void r.body?.cancel(), r.ok),
      () => false,
    );
    if (ok) return { url, stop };
  }
  throw new Error(`debuginfod on ${url} never served ${buildId}`);
}

const buildIdOf = (path: string): string => /Build ID: ([0-9a-f]+)/.exec(execFileSync('readelf', ['-n', path], { encoding: 'utf8' }))![1];

test('functions, define and trace on a stripped build with its DWARF from debuginfod; the reason with it down; the cache without it', async (t) => {
  const b = builds(t);
  const id = buildIdOf(b.full);
  const server = await debuginfod(t, b.served, id);
  if (!server) return;
  const env = { ...isolatedEnv(t), XDG_CACHE_HOME: scratch(t, 'pl-debuginfod-cache-'), DEBUGINFOD_URLS: server.url };
  const cached = join(env.XDG_CACHE_HOME, 'probelens', 'debuginfod', '.build-id', id.slice(0, 2), `${id.slice(2)}.debug`);

  const fns = await runCli(t, ['functions', b.stripped], env);
  assert.equal(fns.code, 0, fns.stderr);
  assert.match(fns.stdout, /pl_add\(int a@%di, long unsigned int b@%si, const char \* s@%dx\)\s+\S*workload\.c:9/, fns.stdout);
  assert.match(fns.stderr, new RegExp(`^probelens: fetching debug info from ${server.url}: `, 'm'));
  assert.deepEqual(readFileSync(cached), readFileSync(join(b.served, 'workload.debug')), 'the debug file is cached by build-id');

  // Down: the cache serves every command, and nothing is fetched again.
  server.stop();
  const def = await runCli(t, ['define', b.stripped, 'pl_add a s'], env);
  assert.equal(def.code, 0, def.stderr);
  assert.match(def.stdout, /^p:\S+\/pl_add \S+stripped:0x[0-9a-f]+ a=%di:s32 s=\+0\(%dx\):string/m, def.stdout);
  assert.doesNotMatch(def.stderr, /fetching/);
  if (requireTracefs(t)) {
    const tr = startCli(t, ['trace', b.stripped, 'pl_add a', '--json'], env);
    assert.ok((await waitForGroups(b.stripped, 120_000)).length, `armed: ${tr.stderr()}`);
    await sleep(500);
    execFileSync(b.stripped, ['7']);
    await sleep(500);
    tr.child.kill('SIGINT');
    assert.equal((await tr.exit).code, 0, tr.stderr());
    const { hits } = parseJsonOutput(tr.stdout());
    assert.deepEqual(
      hits.map((h) => (h.args as { a: number }).a),
      [-1, -2, -3, -4, -5, -6, -7],
      'each call with the value DWARF from the cache placed',
    );
  }

  // Down with an empty cache: one sentence with the server's answer.
  const fresh = { ...isolatedEnv(t), XDG_CACHE_HOME: scratch(t, 'pl-debuginfod-cache-'), DEBUGINFOD_URLS: server.url };
  const down = await runCli(t, ['define', b.stripped, 'pl_add a'], fresh);
  assert.equal(down.code, 1);
  assert.match(
    down.stderr,
    new RegExp(
      `has no DWARF debug information and no separate debug file was found here; debuginfod has no debug file of build ${id}: ${server.url}: ECONNREFUSED`,
    ),
  );
});

test("a server that serves another build's debug file is not believed, and nothing is cached", async (t) => {
  const b = builds(t);
  const other = join(b.dir, 'other');
  execFileSync('gcc', ['-O1', '-g', '-Wl,--build-id', '-DOTHER', '-o', other, WORKLOAD]);
  const wrong = readFileSync(other);
  const srv = createServer((_req, res) => res.end(wrong));
  await new Promise<void>((r) => srv.listen(0, '127.0.0.1', r));
  t.after(() => srv.close());
  const url = `http://127.0.0.1:${(srv.address() as { port: number }).port}`;
  const env = { ...isolatedEnv(t), XDG_CACHE_HOME: scratch(t, 'pl-debuginfod-cache-'), DEBUGINFOD_URLS: url };
  const r = await runCli(t, ['functions', b.stripped], env);
  assert.equal(r.code, 1);
  assert.match(r.stderr, new RegExp(`${url}: served a file of build ${buildIdOf(other)}`));
  assert.equal(spawnSync('find', [env.XDG_CACHE_HOME, '-name', '*.debug'], { encoding: 'utf8' }).stdout, '', 'nothing cached');
});

// The README's trace example, as a user runs it: `probelens trace redis-server 'createStringObject ptr:string len'`
// (the real CLI) against a running redis-server while `redis-cli set octi fest` runs. Both definitions are armed:
// object.c's createStringObject(ptr, len) and hiredis's static createStringObject(task, str, len), which has no
// `ptr`. A Sentinel (the same binary in --sentinel mode) monitoring the server parses replies with hiredis, so that
// definition runs too; its hits say `ptr` is unavailable there and why. And GCC's location views: an argument is
// read as it is at the view where a call begins, not as a later view at the same address describes it.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFile, spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { copyFileSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { createInterface } from 'node:readline';
import { promisify } from 'node:util';
import type { HitJson } from '../../src/shared/hitJson';
import { corpusProjectOrSkip } from '../helpers/corpus';
import { requireTracefs } from '../helpers/tracefs';

const execFileP = promisify(execFile);
const MAIN = resolve(__dirname, '../../src/cli/main.ts');
const SPEC = 'createStringObject ptr:string len';

async function freePort(): Promise<number> {
  return new Promise((res, rej) => {
    const s = createServer();
    s.on('error', rej);
    s.listen(0, '127.0.0.1', () => {
      const a = s.address();
      s.close(() => res(typeof a === 'object' && a ? a.port : 0));
    });
  });
}

/** Resolves with the first received hit `pred` accepts; rejects when the trace ends first. */
function waitForHit(hits: HitJson[], ended: Promise<unknown>, pred: (h: HitJson) => boolean): Promise<HitJson> {
  return new Promise((res, rej) => {
    const tick = () => {
      const h = hits.find(pred);
      if (h) return res(h);
      setTimeout(tick, 50);
    };
    void ended.then(() => rej(new Error(`the trace ended before the awaited hit (${hits.length} hits)`)));
    tick();
  });
}

test("the README's example: trace redis-server 'createStringObject ptr:string len' sees redis-cli set octi fest, at every definition", async (t) => {
  if (!requireTracefs(t)) return;
  const p = await corpusProjectOrSkip(t, 'redis');
  if (!p) return;
  // A private copy: uprobes sit on the inode, so nobody else's redis run hits our probes (or theirs ours).
  const dir = mkdtempSync(join(tmpdir(), 'probelens-readme-example-'));
  const server = join(dir, 'redis-server');
  copyFileSync(p.binaries['redis-server'], server);
  const [port, sentinelPort] = [await freePort(), await freePort()];
  const procs: ChildProcess[] = [];
  const redisCli = (...args: string[]) => execFileP(p.binaries['redis-cli'], ['-h', '127.0.0.1', '-p', String(port), ...args]);
  try {
    procs.push(
      spawn(server, ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no', '--dir', dir], { stdio: 'ignore' }),
    );
    for (let i = 0; ; i++) {
      const pong = await redisCli('PING').then(
        (r) => r.stdout.trim(),
        () => '',
      );
      if (pong === 'PONG') break;
      assert.ok(i < 300, 'redis-server answers PING within 30 s');
      await new Promise((r) => setTimeout(r, 100));
    }

    const cli = spawn(process.execPath, ['--import', 'tsx', MAIN, 'trace', server, SPEC, '--json'], { stdio: ['ignore', 'pipe', 'pipe'] });
    procs.push(cli);
    const hits: HitJson[] = [];
    let summary: { lost: number; hits: Record<string, number> } | undefined;
    let stderr = '';
    cli.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    createInterface({ input: cli.stdout }).on('line', (l) => {
      const o = JSON.parse(l) as HitJson | { summary: typeof summary };
      if ('summary' in o) summary = o.summary;
      else hits.push(o);
    });
    const ended = new Promise((r) => cli.once('exit', r));

    // Sentinel talks to the server through hiredis: hiredis's createStringObject parses each reply.
    const conf = join(dir, 'sentinel.conf');
    writeFileSync(conf, `port ${sentinelPort}\nbind 127.0.0.1\ndir ${dir}\nsentinel monitor m 127.0.0.1 ${port} 1\n`);
    procs.push(spawn(server, [conf, '--sentinel'], { stdio: 'ignore' }));
    // Armed once a hit arrives (Sentinel pings every second); hiredis's copy has no `ptr`, and says so.
    const hiredis = await waitForHit(hits, ended, (h) => h.unavailable?.ptr !== undefined);
    assert.match(
      hiredis.unavailable!.ptr,
      /^createStringObject \(hiredis\.c:[0-9]+\) entry \(0x[0-9a-f]+\) has no parameter or variable 'ptr' \(it has: task, str, len\)$/,
    );
    assert.equal(typeof hiredis.args.len, 'number');
    assert.equal(hiredis.args.ptr, undefined);

    assert.equal((await redisCli('set', 'octi', 'fest')).stdout.trim(), 'OK');
    // ptr:string reads up to a NUL, and redis parses the request in place: the key's bytes run on into the rest of it.
    const octi = await waitForHit(hits, ended, (h) => typeof h.args.ptr === 'string' && h.args.ptr.startsWith('octi'));
    const fest = await waitForHit(hits, ended, (h) => typeof h.args.ptr === 'string' && h.args.ptr.startsWith('fest'));
    assert.equal(octi.args.ptr, 'octi\r\n$4\r\nfest\r\n');
    assert.equal(octi.args.len, 4);
    assert.equal(fest.args.ptr, 'fest\r\n');
    assert.equal(fest.args.len, 4);
    assert.equal(octi.site?.kind, 'entry');
    assert.equal(octi.unavailable, undefined);
    // object.c's definition and hiredis's are different sites of one spec.
    assert.notEqual(octi.site?.address, hiredis.site?.address);

    cli.kill('SIGINT');
    await ended;
    assert.equal(cli.exitCode, 0, stderr);
    assert.ok(summary, 'a summary line');
    assert.equal(summary.lost, 0);
    // Every hit names its site; both definitions were seen.
    assert.ok(hits.every((h) => h.site?.address));
    assert.ok(new Set(hits.map((h) => h.site?.address)).size >= 2);
  } finally {
    // The CLI first, by SIGINT, so it disarms its probes; then the servers.
    const [, cli] = procs;
    if (cli && cli.exitCode === null) {
      cli.kill('SIGINT');
      await new Promise((r) => cli.once('exit', r));
    }
    for (const c of procs) if (c.exitCode === null) c.kill('SIGKILL');
    rmSync(dir, { recursive: true, force: true });
  }
});

test("location views: quicklistSetFill(fill) is read where its call begins (view 0 / the copy's entry view), not clamped", async (t) => {
  if (!requireTracefs(t)) return;
  const p = await corpusProjectOrSkip(t, 'redis');
  if (!p) return;
  const dir = mkdtempSync(join(tmpdir(), 'probelens-views-'));
  const server = join(dir, 'redis-server');
  copyFileSync(p.binaries['redis-server'], server);
  const port = await freePort();
  const procs: ChildProcess[] = [];
  const redisCli = (...args: string[]) => execFileP(p.binaries['redis-cli'], ['-h', '127.0.0.1', '-p', String(port), ...args]);
  try {
    // At quicklistSetFill's entry and at its copy inlined in quicklistSetOptions, GCC's location list for `fill`
    // has two entries starting at the same address: %rsi at the entry view, then (from view 2) the clamped value
    // as an expression no fetch argument can compute. The call begins at the first.
    const def = spawnSync(process.execPath, ['--import', 'tsx', MAIN, 'define', server, 'quicklistSetFill fill', '--json'], {
      encoding: 'utf8',
    });
    assert.equal(def.status, 0, def.stderr);
    const probes = JSON.parse(def.stdout) as Array<{ event: string; definition: string }>;
    const entry = probes.find((q) => q.event === 'quicklistSetFill');
    assert.match(entry?.definition ?? '', / fill=%si:s32 /, 'the out-of-line entry reads fill at view 0');
    const inOptions = probes.filter((q) => q.event.startsWith('quicklistSetFill_inlined_'));
    assert.ok(
      inOptions.some((q) => / fill=%si:s32 /.test(q.definition)),
      'an inlined copy reads fill at its entry view',
    );

    procs.push(
      spawn(
        server,
        ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no', '--dir', dir, '--list-max-listpack-size', '-3'],
        {
          stdio: 'ignore',
        },
      ),
    );
    for (let i = 0; ; i++) {
      if (
        (await redisCli('PING').then(
          (r) => r.stdout.trim(),
          () => '',
        )) === 'PONG'
      )
        break;
      assert.ok(i < 300, 'redis-server answers PING within 30 s');
      await new Promise((r) => setTimeout(r, 100));
    }
    const cli = spawn(process.execPath, ['--import', 'tsx', MAIN, 'trace', server, 'quicklistSetFill fill', '--json'], {
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    procs.push(cli);
    const hits: HitJson[] = [];
    createInterface({ input: cli.stdout }).on('line', (l) => {
      const o = JSON.parse(l) as HitJson | { summary: unknown };
      if (!('summary' in o)) hits.push(o);
    });
    const ended = new Promise((r) => cli.once('exit', r));
    // Each new list runs quicklistSetOptions(fill = list-max-listpack-size); keep creating lists until armed.
    let n = 0;
    const first = waitForHit(hits, ended, (h) => h.args.fill !== undefined);
    const pushing = (async () => {
      while (hits.length === 0 && cli.exitCode === null && n < 600) {
        await redisCli('rpush', `views${n++}`, 'a');
        await new Promise((r) => setTimeout(r, 50));
      }
    })();
    const h = await first;
    await pushing;
    assert.equal(h.args.fill, -3, 'the configured list-max-listpack-size');
    assert.equal(h.site?.kind, 'inlined');
    assert.equal(h.site?.caller, 'quicklistSetOptions');
    assert.equal((await redisCli('config', 'set', 'list-max-listpack-size', '7')).stdout.trim(), 'OK');
    const before = hits.length;
    await redisCli('rpush', 'views-after', 'a');
    // Lists pushed before the change may still be on their way (the stream lags the program, by more on a loaded
    // machine): their hits say -3. The first hit that does not is the new list's, and must read 7.
    const after = await waitForHit(hits, ended, (x) => hits.indexOf(x) >= before && x.args.fill !== -3);
    assert.equal(after.args.fill, 7);
    const late = hits.slice(before, hits.indexOf(after));
    assert.ok(late.length <= n - before, `${late.length} late hits, but only ${n - before} lists pushed before the change had no hit yet`);
  } finally {
    const [, cli] = procs;
    if (cli && cli.exitCode === null) {
      cli.kill('SIGINT');
      await new Promise((r) => cli.once('exit', r));
    }
    for (const c of procs) if (c.exitCode === null) c.kill('SIGKILL');
    rmSync(dir, { recursive: true, force: true });
  }
});

// A count is exact or says it is a lower bound, on code nobody tuned for: the plain redis-server (its own Makefile,
// -O2), whose sdssplitargs parses a quoted "\xHH" escape with hex_digit_to_int(p[2])*16 + hex_digit_to_int(p[3]).
// GCC computes both calls on each path of a test and gives each DIE's entry pc to one path, inside a loop it enters
// at two places. An inline-protocol command (a line of text, which the server splits with sdssplitargs) makes a
// known number of calls: two per escape. The probe must count exactly that, or call its count a lower bound and
// count no more.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { copyFileSync, mkdtempSync, rmSync } from 'node:fs';
import { connect } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { loadIndex } from '../../src/core/index/load';
import { TraceSession } from '../../src/core/session/traceSession';
import { LocalTarget } from '../../src/core/target/local';
import type { Hit } from '../../src/core/tracefs/hitParser';
import { corpusProjectOrSkip } from '../helpers/corpus';
import { requireTracefs } from '../helpers/tracefs';
import { freePort } from './redisCounts';
import { settle } from './batches';

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Sends inline commands (lines of text) on one connection and resolves with the replies once all have come. */
function inline(port: number, lines: string[]): Promise<string> {
  return new Promise((resolve, reject) => {
    const sock = connect(port, '127.0.0.1');
    let got = '';
    const timer = setTimeout(() => {
      sock.destroy();
      reject(new Error(`no reply to ${lines.length} inline commands within 20 s (got ${JSON.stringify(got)})`));
    }, 20_000);
    sock.on('error', (e) => {
      clearTimeout(timer);
      reject(e);
    });
    sock.on('data', (d) => {
      got += d.toString('latin1');
      if (got.split('\r\n').length - 1 >= lines.length) {
        clearTimeout(timer);
        sock.end();
        resolve(got);
      }
    });
    sock.write(lines.map((l) => `${l}\r\n`).join(''));
  });
}

test('plain redis: hex_digit_to_int counts every call of a "\\xHH" escape, or calls its count a lower bound and counts no more', async (t) => {
  if (!requireTracefs(t)) return;
  const p = await corpusProjectOrSkip(t, 'redis');
  if (!p) return;
  // A private copy: uprobes sit on the inode, so nobody else's redis run hits our probes (or theirs ours).
  const dir = mkdtempSync(join(tmpdir(), 'probelens-corpus-honest-'));
  const server = join(dir, 'redis-server');
  copyFileSync(p.binaries['redis-server'], server);
  const port = await freePort();
  let proc: ChildProcess | undefined;
  let session: TraceSession | undefined;
  try {
    proc = spawn(server, ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no', '--dir', dir], {
      stdio: 'ignore',
    });
    for (let i = 0; ; i++) {
      const pong = await inline(port, ['PING']).catch(() => '');
      if (pong.startsWith('+PONG')) break;
      assert.ok(i < 300 && proc.exitCode === null, 'redis-server answers PING within 30 s');
      await sleep(100);
    }
    const { index } = await loadIndex(server, { noCache: true });
    const received: Hit[] = [];
    session = await TraceSession.start({
      target: new LocalTarget(),
      index,
      specs: ['hex_digit_to_int'],
      pid: proc.pid,
      onHit: (h) => received.push(h),
    });
    const lowerBound = session.probes.some((pr) => pr.lowerBound);
    const warnings = [...new Set(session.probes.flatMap((pr) => (pr as { warnings?: string[] }).warnings ?? []))];
    // Every path of the parser: a digit, a lower-case and an upper-case letter in each place, and a '0' first
    // (the path where GCC keeps the second call's table lookup in the caller's code).
    const digits = ['0', '7', 'a', 'f', 'A', 'F'];
    const escapes = digits.flatMap((hi) => digits.map((lo) => `\\x${hi}${lo}`));
    const lines = escapes.map((e, k) => `SET probelens:hex:${k} "${e}${e}"`);
    const replies = await inline(port, lines);
    assert.equal(replies, '+OK\r\n'.repeat(lines.length), 'every inline command was parsed and run');
    const calls = 2 * 2 * escapes.length;
    // The stream lags the program: wait until it has delivered what the kernel counted.
    await settle(() => received.length, 1, 60);
    const summary = await session.stop();
    session = undefined;
    assert.equal(summary.lost, 0, 'no hit lost');
    const counted = received.length;
    t.diagnostic(`hex_digit_to_int: ${counted} hits for ${calls} calls; lower bound: ${lowerBound}; ${warnings.join('; ')}`);
    assert.ok(counted <= calls, `counted ${counted} for ${calls} calls: a count never goes over`);
    if (!lowerBound) assert.equal(counted, calls, 'a count not called a lower bound is exact');
  } finally {
    if (session) await session.stop().catch(() => undefined);
    if (proc && proc.exitCode === null) proc.kill('SIGKILL');
    rmSync(dir, { recursive: true, force: true });
  }
});

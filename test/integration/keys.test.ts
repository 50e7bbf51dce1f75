// Counts per key, streamed (`trace --by`): the calls fixture calls tick(seq) for seq = 0 … N−1; traced with
// `--by seq --by seq.log2 --by comm`, its summary counts every call under its own seq, the seq values in their log2
// buckets, and all of them under the program's name — the figures the program's own loop gives (N calls, seq
// 0 … N−1), as the text summary prints them. (Aggregated in the kernel, the same keys are checked against the
// streamed ones on the VM: test/vm/aggregate.test.ts.)
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { basename } from 'node:path';
import { requireTracefs } from '../helpers/tracefs';
import { fixtureOrSkip, runFixture } from '../helpers/fixtures';
import { isolatedEnv, privateCopy, runCli, startCli, waitNoGroups } from './engine-harness';
import { plainData } from '../helpers/plain';

const TIMEOUT = { timeout: 240_000 };
const CALLS = 40;

test('trace --by seq --by seq.log2 --by comm counts each call of tick under its seq, its bucket and the program', TIMEOUT, async (t) => {
  if (!requireTracefs(t)) return;
  const f = await fixtureOrSkip(t, 'calls-O2');
  if (!f) return;
  const bin = privateCopy(t, f.path);
  const cli = startCli(t, ['trace', bin, 'tick seq', '--by', 'seq', '--by', 'seq.log2', '--by', 'comm'], isolatedEnv(t));
  await cli.waitFor(/tracing \d+ probes?/, 120_000);
  await runFixture({ ...f, path: bin }, [String(CALLS)]);
  const hitLines = () =>
    cli
      .stdout()
      .split('\n')
      .filter((l) => / tick\b.* seq=\d+/.test(l));
  const until = Date.now() + 60_000;
  while (hitLines().length < CALLS && Date.now() < until) await new Promise((r) => setTimeout(r, 100));
  cli.child.kill('SIGINT');
  assert.equal((await cli.exit).code, 0, cli.stderr());
  assert.equal(hitLines().length, CALLS, cli.stdout());
  const out = cli.stdout();
  // One row per seq: twenty listed (one hit each), the rest summed.
  const seqRows = /^ {2}by seq:\n((?: {4}.*\n)+)/m.exec(out)?.[1].split('\n').filter(Boolean) ?? [];
  assert.equal(seqRows.length, 21, out);
  assert.deepEqual(
    seqRows.slice(0, 20).map((l) => l.trim()),
    Array.from({ length: 20 }, (_, i) => `${String(i).padEnd(2)} 1 hit`),
    'equal counts: listed by value',
  );
  assert.equal(seqRows[20].trim(), `${CALLS - 20} more values: ${CALLS - 20} hits`);
  // seq 0 and 1 in bucket 0, 2–3 in 1, 4–7 in 2 … 32–39 in 5.
  const buckets = /^ {2}by seq\.log2:\n((?: {4}.*\n)+)/m.exec(out)?.[1].split('\n').filter(Boolean) ?? [];
  assert.deepEqual(
    plainData(
      buckets.map((l) =>
        l
          .replace(/\s*\|#*$/, '')
          .trim()
          .replace(/\s+/g, ' '),
      ),
    ),
    ['[0, 2) 2 hits', '[2, 4) 2 hits', '[4, 8) 4 hits', '[8, 16) 8 hits', '[16, 32) 16 hits', `[32, 64) ${CALLS - 32} hits`],
  );
  assert.match(out, new RegExp(`^ {2}by comm:\\n {4}${basename(bin).slice(0, 15)} ${CALLS} hits\\n`, 'm'));
  assert.doesNotMatch(out, /under no value shown/, 'every hit has each key');
  assert.deepEqual(await waitNoGroups(bin, 10_000), []);
});

test('a --by key no probe fetches is refused before anything is armed, naming what the probes fetch', TIMEOUT, async (t) => {
  if (!requireTracefs(t)) return;
  const f = await fixtureOrSkip(t, 'calls-O2');
  if (!f) return;
  const bin = privateCopy(t, f.path);
  const r = await runCli(t, ['trace', bin, 'tick seq', '--by', 'sq', '--duration', '30'], isolatedEnv(t));
  assert.equal(r.code, 1, r.stderr);
  assert.match(r.stderr, /--by sq: no probe of this trace fetches 'sq' \(its arguments: seq; or comm, pid, tid\)/);
  assert.doesNotMatch(r.stderr, /tracing \d+ probe/);
  assert.deepEqual(await waitNoGroups(bin, 10_000), []);
  const bad = await runCli(t, ['trace', bin, 'tick seq', '--by', 'seq.log10'], isolatedEnv(t));
  assert.equal(bad.code, 2, bad.stderr);
  assert.match(bad.stderr, /a key is an integer argument's name as hits show it/);
});

import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { MergedSummary } from '../../../src/core/session/fanout';
import { lostLine, missedLines, probeSummaryLines } from '../../../src/cli/summaryText';

const base = (): MergedSummary => ({ hits: {}, lost: 0, mismatch: 0, kernelHits: {}, latency: {}, sites: {}, hosts: { h: { ok: true } } });

test('a probe with one site prints one line: its count and the kernel’s', () => {
  const m = base();
  m.hits.f = 1;
  m.kernelHits.f = 1;
  m.sites.f = [{ site: { kind: 'entry', address: '0x10' }, hits: 1 }];
  assert.deepEqual(probeSummaryLines(m, 'f'), ['f: 1 hit (kernel counted 1)\n']);
});

test('a probe with several sites prints each site’s count, and its latency as log2 buckets from the first non-empty one', () => {
  const m = base();
  m.hits.f = 12;
  m.sites.f = [
    { site: { kind: 'entry', address: '0x10', file: '/w/a.c', line: 3 }, hits: 9 },
    { site: { kind: 'inlined', address: '0x2a', caller: 'main', file: '/w/a.c', line: 40 }, hits: 3 },
  ];
  m.latency.f = { count: 12, p50: 1500, p90: 3000, p99: 3900, max: 3900, log2: [0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 4, 6, 2] };
  const lines = probeSummaryLines(m, 'f');
  assert.equal(lines[0], 'f: 12 hits, p50 1500 ns p99 3900 ns\n');
  assert.equal(lines[1], '  entry at /w/a.c:3 (0x10): 9 hits\n');
  assert.equal(lines[2], '  inlined into main at /w/a.c:40 (0x2a): 3 hits\n');
  assert.equal(lines[3], '  latency of 12 calls:\n');
  assert.deepEqual(
    lines.slice(4).map((l) =>
      l
        .replace(/\|#*\s*\|\n$/, '')
        .trim()
        .replace(/ +/g, ' '),
    ),
    ['[1µs, 2µs) 4', '[2µs, 4.1µs) 6', '[4.1µs, 8.2µs) 2'],
  );
  // The longest bar is the most-filled bucket's.
  const bars = lines.slice(4).map((l) => (l.match(/#/g) ?? []).length);
  assert.deepEqual(bars, [21, 32, 11]);
});

test('aggregated in the kernel: the hits per thread id, and percentiles as the upper ends of their buckets', () => {
  const m = base();
  m.aggregated = 'kernel';
  m.hits.f = 207;
  m.kernelHits.f = 207;
  m.pids = {
    f: [
      { host: 'h', pid: 195, hits: 200 },
      { host: 'h', pid: 201, hits: 7 },
    ],
  };
  m.latency.f = { count: 2, p50: 4096, p90: 4096, p99: 4096, max: 4096, log2: [0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 2] };
  const lines = probeSummaryLines(m, 'f');
  assert.equal(lines[0], 'f: 207 hits (kernel counted 207), p50 ≤ 4096 ns p99 ≤ 4096 ns\n');
  assert.equal(lines[1], '  tid 195: 200 hits\n');
  assert.equal(lines[2], '  tid 201: 7 hits\n');
  assert.equal(lines[3], '  latency of 2 calls:\n');
});

test('aggregated over several hosts, each thread is named with its host; past 20 threads the rest are summed', () => {
  const m = base();
  m.aggregated = 'kernel';
  m.hits.f = 30;
  m.pids = { f: Array.from({ length: 25 }, (_, i) => ({ host: i % 2 ? 'a' : 'b', pid: 100 + i, hits: i < 20 ? 1 : 2 })) };
  const lines = probeSummaryLines(m, 'f');
  assert.equal(lines[1], '  b tid 100: 1 hit\n');
  assert.equal(lines.length, 22);
  assert.equal(lines[21], '  5 more threads: 10 hits\n');
});

test('the loss line offers counting in the kernel only where the targets can, and says what an aggregated loss is', () => {
  assert.equal(lostLine(5, false, false), 'lost: 5 events (raise --buffer-kb or add --filter)\n');
  assert.equal(lostLine(5, false, true), 'lost: 5 events (raise --buffer-kb or add --filter, or count them in the kernel: --aggregate)\n');
  assert.equal(lostLine(1, true, true), 'lost: 1 hit the kernel could not add to its full tables\n');
});

test("a kernel probe's missed calls get a loss line each, with the reason and what helps; none missed, no line", () => {
  const missed = Object.assign(Object.create(null) as Record<string, number>, { 'do_sys_openat2%return': 169, __proto__x: 0 });
  assert.deepEqual(missedLines(missed), [
    "lost: 169 calls of do_sys_openat2%return the kernel missed (kprobe_profile: a return probe with every instance in use — raise --maxactive — or a hit inside another probe's handler)\n",
  ]);
  assert.deepEqual(missedLines({}), []);
});

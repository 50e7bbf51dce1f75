import assert from 'node:assert/strict';
import { test } from 'node:test';
import {
  addCall,
  emptyLatency,
  fromLog2,
  latencySince,
  latencySummary,
  mergeLatency,
  percentiles,
  quantile,
  type Latency,
} from '../../../../src/core/session/latency';
import { plainData } from '../../../helpers/plain';

const of = (calls: number[]): Latency => {
  const l = emptyLatency();
  for (const ns of calls) addCall(l, ns);
  return l;
};
const plain = (l: Latency) => plainData({ ...l, fine: [...l.fine].sort((a, b) => a[0] - b[0]) });

test('a merge is the calls of both together, whatever the order, and changes neither', () => {
  const a = of([1000, 2000, 3000]);
  const b = of([500_000, 7, 7]);
  const before = plain(a);
  assert.deepEqual(plain(mergeLatency(a, b)), plain(of([1000, 2000, 3000, 500_000, 7, 7])));
  assert.deepEqual(plain(mergeLatency(b, a)), plain(mergeLatency(a, b)));
  assert.deepEqual(plain(a), before);
  assert.deepEqual(plain(mergeLatency(undefined, a)), before);
});

test('since a reading: the calls after it; nothing new is undefined', () => {
  const first = of([1000, 1000]);
  const now = mergeLatency(first, of([40_000, 50_000]));
  const since = latencySince(now, first)!;
  assert.equal(since.count, 2);
  assert.equal(since.sum, 90_000);
  const p = percentiles(since);
  assert.ok(Math.abs(p.p50 - 40_000) / 40_000 < 0.07 && p.p99 === 50_000, `p50 ${p.p50}, p99 ${p.p99}`);
  assert.ok(since.min >= 2 ** 15, `min ${since.min} is at least the bottom of the lowest bucket that gained a call`);
  assert.equal(latencySince(now, now), undefined);
});

test('percentiles come from the log-linear buckets, within about 6%', () => {
  const l = of(Array.from({ length: 1000 }, (_, i) => (i + 1) * 1000));
  for (const [q, want] of [
    [0.5, 500_000],
    [0.9, 900_000],
    [0.99, 990_000],
  ])
    assert.ok(Math.abs(quantile(l, q) - want) / want < 0.07, `q${q}: ${quantile(l, q)}`);
  assert.equal(quantile(emptyLatency(), 0.5), 0);
});

test("the kernel's log2 buckets give upper ends; merged with streamed calls the rule is still one (log2 for all)", () => {
  const k = fromLog2([0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 3, 1]);
  assert.deepEqual(plainData(latencySummary(k)), {
    count: 4,
    p50: 2048,
    p90: 4096,
    p99: 4096,
    max: 4096,
    log2: [0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 3, 1],
  });
  assert.equal(k.min, 1024);
  const both = mergeLatency(k, of([3000]));
  assert.equal(both.count, 5);
  assert.equal(quantile(both, 0.99), 4096, 'an upper end, as the kernel part can only give');
});

// The latency buckets the CLI summary, the editor's hover and the panel's histogram all draw: [2^i, 2^(i+1)) ns,
// exact at every power of two; and the kinds' fixed order the panel's column batches rely on.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { log2Bucket, PROBE_KINDS } from '../../../src/shared/hit';

test('a latency falls in the bucket [2^i, 2^(i+1)) ns, exactly at the edges', () => {
  assert.equal(log2Bucket(0), 0);
  assert.equal(log2Bucket(1), 0);
  assert.equal(log2Bucket(2), 1);
  assert.equal(log2Bucket(3), 1);
  assert.equal(log2Bucket(1023), 9);
  assert.equal(log2Bucket(1024), 10, '1.0µs starts bucket 10');
  assert.equal(log2Bucket(1500), 10);
  for (let i = 1; i < 63; i++) {
    assert.equal(log2Bucket(2 ** i), i, `2^${i}`);
    assert.equal(log2Bucket(2 ** i - (i < 52 ? 1 : 2 ** (i - 52))), i - 1, `just under 2^${i}`);
  }
});

test('nonsense latencies land in bucket 0 and huge ones in the last bucket, never outside the histogram', () => {
  assert.equal(log2Bucket(-5), 0);
  assert.equal(log2Bucket(Number.NaN), 0);
  assert.equal(log2Bucket(2 ** 70), 63);
  assert.equal(log2Bucket(Number.POSITIVE_INFINITY), 63);
});

test('the kinds keep the order the column batches encode them by', () => {
  assert.deepEqual(PROBE_KINDS, ['entry', 'return', 'line', 'usdt']);
});

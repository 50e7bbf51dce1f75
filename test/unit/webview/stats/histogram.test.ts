// The latency histogram's figures: the "all probes" view sums every probe's buckets, and only the range from
// the first to the last non-empty bucket is drawn. The bars themselves are drawn in Chromium by
// test/unit/webview/panel.dom.test.ts.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { occupiedRange, sumHistograms } from '../../../../webview/stats/histogram';

test('histograms sum bucket-wise and report their occupied range', () => {
  const s = sumHistograms([
    { buckets: [0, 2, 1], count: 3, maxNs: 7 },
    { buckets: [0, 0, 0, 0, 5], count: 5, maxNs: 30 },
  ]);
  assert.deepEqual(s, { buckets: [0, 2, 1, 0, 5], count: 8, maxNs: 30 });
  assert.deepEqual(occupiedRange(s), { first: 1, last: 4 });
  assert.equal(occupiedRange({ buckets: [0, 0], count: 0, maxNs: 0 }), null);
});

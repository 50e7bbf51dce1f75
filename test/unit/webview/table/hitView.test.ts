import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { Hit } from '../../../../src/shared/hit';
import { encodeHits } from '../../../../src/shared/protocol';
import { HitView } from '../../../../webview/table/hitView';
import { emptyRow } from '../../../../webview/table/hitRing';

function hits(from: number, count: number, probe = 'work'): Hit[] {
  return Array.from({ length: count }, (_, k) => {
    const i = from + k;
    return {
      host: i % 2 ? 'web2' : 'web1',
      probe,
      kind: 'entry',
      pid: 100,
      tid: 100 + (i % 3),
      comm: 'app',
      cpu: 0,
      ts: i,
      args: { i, tag: `t${i}` },
      event: probe,
    };
  });
}

function shown(v: HitView): number[] {
  const out = emptyRow();
  return Array.from({ length: v.length }, (_, k) => {
    assert.ok(v.read(v.seqAt(k), out));
    return out.ts;
  });
}

test('the view shows the newest hits up to the capacity and counts the older ones as dropped', () => {
  const v = new HitView(5);
  v.receive(encodeHits(hits(0, 8)));
  assert.deepEqual(shown(v), [3, 4, 5, 6, 7]);
  assert.equal(v.dropped, 3);
  const r = emptyRow();
  v.read(v.seqAt(0), r);
  assert.equal(r.argText, 'i=3 tag="t3"');
  assert.equal(v.str(r.host), 'web2');
});

test('a filter narrows the view, follows new hits, and lets go of evicted ones', () => {
  const v = new HitView(6);
  v.receive(encodeHits(hits(0, 6)));
  v.setFilter('host:web1');
  assert.deepEqual(shown(v), [0, 2, 4]);
  v.receive(encodeHits(hits(6, 4)));
  assert.deepEqual(shown(v), [4, 6, 8], 'rows 0 and 2 were evicted from the history');
  assert.equal(v.indexOfSeq(v.seqAt(1)), 1);
  v.setFilter('t9');
  assert.deepEqual(shown(v), [9]);
  v.setFilter('');
  assert.deepEqual(shown(v), [4, 5, 6, 7, 8, 9]);
});

test('indexOfSeq is -1 for rows filtered out or evicted', () => {
  const v = new HitView(4);
  v.receive(encodeHits(hits(0, 6)));
  const first = v.seqAt(0);
  assert.equal(v.indexOfSeq(first - 1), -1);
  v.setFilter('host:web2');
  assert.deepEqual(shown(v), [3, 5]);
  assert.equal(v.indexOfSeq(first), -1, 'ts 2 is on web1');
});

test('paused, hits queue up (bounded) and the view stays still; resume catches up', () => {
  const v = new HitView(10);
  v.receive(encodeHits(hits(0, 3)));
  v.pause();
  assert.equal(v.receive(encodeHits(hits(3, 4))), 0);
  assert.deepEqual(shown(v), [0, 1, 2]);
  assert.equal(v.queued, 4);
  // Beyond a whole history's worth, the oldest queued batches go.
  v.receive(encodeHits(hits(7, 6)));
  v.receive(encodeHits(hits(13, 6)));
  assert.equal(v.queued, 12);
  assert.equal(v.dropped, 4);
  assert.equal(v.resume(), 12);
  assert.deepEqual(shown(v), [9, 10, 11, 12, 13, 14, 15, 16, 17, 18]);
  assert.equal(v.dropped, 4 + 5, 'four squeezed out while paused, five evicted from the history');
});

test('clear empties view and counters', () => {
  const v = new HitView(3);
  v.receive(encodeHits(hits(0, 5)));
  v.clear();
  assert.equal(v.length, 0);
  assert.equal(v.dropped, 0);
  v.receive(encodeHits(hits(5, 1)));
  assert.deepEqual(shown(v), [5]);
});

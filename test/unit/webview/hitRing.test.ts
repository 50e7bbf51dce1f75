import { test } from 'node:test';
import assert from 'node:assert/strict';
import { HitRing, emptyRow } from '../../../webview/table/hitRing';

const row = (pid: number) => ({ ...emptyRow(), pid, ts: pid / 10, argText: `a=${pid}`, retText: pid % 2 ? '' : `${-pid}` });

test('the ring keeps the newest rows up to its capacity and counts the dropped ones', () => {
  const r = new HitRing(3);
  for (let i = 0; i < 5; i++) r.push(row(i));
  assert.equal(r.size, 3);
  assert.equal(r.dropped, 2);
  assert.equal(r.start, 2);
  const out = emptyRow();
  assert.equal(r.read(1, out), false, 'evicted');
  assert.equal(r.read(5, out), false, 'not yet written');
  for (const seq of [2, 3, 4]) {
    assert.equal(r.read(seq, out), true);
    assert.equal(out.pid, seq);
    assert.equal(out.argText, `a=${seq}`);
    assert.equal(out.retText, seq % 2 ? '' : `${-seq}`);
    assert.equal(out.ts, seq / 10);
  }
});

test('clear empties the ring without reusing sequence numbers', () => {
  const r = new HitRing(4);
  r.push(row(1));
  r.push(row(2));
  r.clear();
  assert.equal(r.size, 0);
  assert.equal(r.dropped, 0);
  assert.equal(r.read(0, emptyRow()), false);
  assert.equal(r.push(row(3)), 2);
});

test('a ring refuses a capacity below one', () => {
  assert.throws(() => new HitRing(0), RangeError);
});

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { encodeHits, type PanelHit } from '../../../src/shared/protocol';
import { HitRing, emptyRow, type RingInput } from '../../../webview/table/hitRing';

const hit = (i: number): PanelHit => ({
  host: 'h',
  probe: 'p',
  kind: i % 2 ? 'return' : 'entry',
  pid: i,
  tid: i,
  comm: 'c',
  cpu: 0,
  ts: i / 10,
  args: i % 2 ? {} : { a: i, s: `x${i}` },
  ...(i % 2 ? { retval: -i } : {}),
});

/** Rows as HitView pushes them: fields plus where the batch keeps their arguments. */
function inputs(from: number, count: number): RingInput[] {
  const b = encodeHits(Array.from({ length: count }, (_, k) => hit(from + k)));
  let off = 0;
  return Array.from({ length: count }, (_, i) => {
    const r: RingInput = {
      ts: b.ts[i],
      host: 0,
      probe: 0,
      kind: b.kind[i],
      pid: b.pid[i],
      tid: b.tid[i],
      comm: 0,
      cpu: 0,
      latencyNs: -1,
      batch: b,
      row: i,
      argOffset: off,
    };
    off += b.shapes[b.shape[i]].length;
    return r;
  });
}

test('the ring keeps the newest rows up to its capacity and counts the dropped ones', () => {
  const r = new HitRing(3);
  for (const input of inputs(0, 5)) r.push(input);
  assert.equal(r.size, 3);
  assert.equal(r.dropped, 2);
  assert.equal(r.start, 2);
  const out = emptyRow();
  assert.equal(r.read(1, out), false, 'evicted');
  assert.equal(r.read(5, out), false, 'not yet written');
  for (const seq of [2, 3, 4]) {
    assert.equal(r.read(seq, out), true);
    assert.equal(out.pid, seq);
    assert.equal(out.ts, seq / 10);
    assert.equal(out.argText, seq % 2 ? '' : `a=${seq} s=x${seq}`, 'argument text made on read from the batch');
    assert.equal(out.retText, seq % 2 ? `${-seq}` : '');
  }
});

test('rows from several batches keep their own arguments', () => {
  const r = new HitRing(10);
  for (const input of [...inputs(0, 3), ...inputs(10, 3)]) r.push(input);
  const out = emptyRow();
  r.read(2, out);
  assert.equal(out.argText, 'a=2 s=x2');
  r.read(5, out);
  assert.equal(out.argText, 'a=12 s=x12');
});

test('clear empties the ring without reusing sequence numbers', () => {
  const r = new HitRing(4);
  const rows = inputs(0, 3);
  r.push(rows[0]);
  r.push(rows[1]);
  r.clear();
  assert.equal(r.size, 0);
  assert.equal(r.dropped, 0);
  assert.equal(r.read(0, emptyRow()), false);
  assert.equal(r.push(rows[2]), 2);
});

test('a ring refuses a capacity below one', () => {
  assert.throws(() => new HitRing(0), RangeError);
});

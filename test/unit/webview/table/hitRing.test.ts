import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { Hit } from '../../../../src/shared/hit';
import { encodeHits, type HitBatch } from '../../../../src/shared/protocol';
import { HitRing, emptyRow } from '../../../../webview/table/hitRing';

const hit = (i: number): Hit => ({
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
  event: 'p',
});

/** Rows as HitView pushes them: a batch, a row of it and where the batch keeps the row's arguments. */
function inputs(from: number, count: number): Array<[HitBatch, number, number, number[]]> {
  const b = encodeHits(Array.from({ length: count }, (_, k) => hit(from + k)));
  const ids = b.strings.map((_, i) => i);
  let off = 0;
  return Array.from({ length: count }, (_, i) => {
    const r: [HitBatch, number, number, number[]] = [b, i, off, ids];
    off += b.shapes[b.shape[i]].length;
    return r;
  });
}

test('the ring keeps the newest rows up to its capacity and counts the dropped ones', () => {
  const r = new HitRing(3);
  for (const input of inputs(0, 5)) r.push(...input);
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
    assert.equal(out.argText, seq % 2 ? '' : `a=${seq} s="x${seq}"`, 'argument text made on read from the batch');
    assert.equal(out.retText, seq % 2 ? `${-seq}` : '');
  }
});

test('rows from several batches keep their own arguments', () => {
  const r = new HitRing(10);
  for (const input of [...inputs(0, 3), ...inputs(10, 3)]) r.push(...input);
  const out = emptyRow();
  r.read(2, out);
  assert.equal(out.argText, 'a=2 s="x2"');
  r.read(5, out);
  assert.equal(out.argText, 'a=12 s="x12"');
});

test('clear empties the ring without reusing sequence numbers', () => {
  const r = new HitRing(4);
  const rows = inputs(0, 3);
  r.push(...rows[0]);
  r.push(...rows[1]);
  r.clear();
  assert.equal(r.size, 0);
  assert.equal(r.dropped, 0);
  assert.equal(r.read(0, emptyRow()), false);
  assert.equal(r.push(...rows[2]), 2);
});

test('a ring refuses a capacity below one', () => {
  assert.throws(() => new HitRing(0), RangeError);
});

test('a row reads back text values quoted and escaped, faults and arrays as such, and its site', () => {
  const site = { kind: 'inlined' as const, address: '0x401136', caller: 'main', file: 'a.c', line: 12 };
  const b = encodeHits([
    { ...hit(0), args: { s: 'a\x1b[2Jb\n', p: null, v: [1, 2], x: '0xZZ' }, retval: null, site },
    { ...hit(2), comm: 'x', site },
  ]);
  const r = new HitRing(4);
  const ids = b.strings.map((_, i) => i);
  r.push(b, 0, 0, ids);
  r.push(b, 1, 4, ids);
  const out = emptyRow();
  r.read(0, out);
  assert.equal(out.argText, 's="a\\x1b[2Jb\\n" p=null v=[1,2] x="0xZZ"');
  assert.equal(out.retText, 'null', 'a faulted return value is not an absent one');
  assert.equal(out.siteText, 'inlined into main at a.c:12 (0x401136)');
  assert.equal(b.sites.length, 1, 'one site object is sent once per batch');
  r.read(1, out);
  assert.equal(out.argText, 'a=2 s="x2"');
  assert.equal(out.retText, '');
});

test('a row says which arguments its site lacks and which it guessed, as the CLI prints them', () => {
  const b = encodeHits([
    { ...hit(0), args: { len: 4 }, unavailable: { ptr: 'no such parameter here' } },
    { ...hit(2), args: { x: 5, y: 6 }, inferred: ['x'] },
  ]);
  const r = new HitRing(4);
  const ids = b.strings.map((_, i) => i);
  r.push(b, 0, 0, ids);
  r.push(b, 1, 1, ids);
  const out = emptyRow();
  assert.equal(r.read(0, out), true);
  assert.equal(out.argText, 'len=4 ptr=(unavailable: no such parameter here)');
  assert.equal(r.read(1, out), true);
  assert.equal(out.argText, 'x≈5 y=6');
});

test('a row shows a return value only where there is one, after the batch went as JSON (as webview messages go)', () => {
  const sent = encodeHits([hit(0), hit(1), { ...hit(3), retval: null }, { ...hit(5), retval: undefined }]);
  // JSON turns the entries' absent return values into null: the flag column keeps them apart.
  const b: HitBatch = { ...sent, retval: JSON.parse(JSON.stringify(sent.retval)) as HitBatch['retval'] };
  assert.deepEqual(b.retval, [null, -1, null, null]);
  const r = new HitRing(4);
  const ids = b.strings.map((_, i) => i);
  let off = 0;
  for (let i = 0; i < b.n; i++) {
    r.push(b, i, off, ids);
    off += b.shapes[b.shape[i]].length;
  }
  const out = emptyRow();
  const texts = [0, 1, 2, 3].map((i) => (r.read(i, out), out.retText));
  assert.deepEqual(texts, ['', '-1', 'null', ''], 'an entry and a return without a value show none; a faulted one shows null');
});

test('a row shows a return value only where there is one: an entry none (also after the JSON trip), a faulted return null', () => {
  const base = { host: 'h', pid: 1, tid: 1, comm: 'c', cpu: 0, args: {}, event: 'p' };
  const batch = encodeHits([
    { ...base, probe: 'p', kind: 'entry', ts: 1, args: { a: 1 } },
    { ...base, probe: 'p%return', kind: 'return', ts: 2, retval: 7 },
    { ...base, probe: 'p%return', kind: 'return', ts: 3, retval: null },
    { ...base, probe: 'p', kind: 'line', ts: 4 },
  ]);
  // webview.postMessage sends the batch as JSON: an entry's absent return value arrives as null in the array.
  const posted = JSON.parse(JSON.stringify({ ...batch, hasRetval: [...batch.hasRetval] })) as HitBatch;
  posted.hasRetval = Uint8Array.from(posted.hasRetval);
  assert.deepEqual(posted.retval, [null, 7, null, null]);
  for (const b of [batch, posted]) {
    const r = new HitRing(8);
    const ids = b.strings.map((_, i) => i);
    let off = 0;
    for (let i = 0; i < 4; i++) {
      r.push(b, i, off, ids);
      off += b.shapes[b.shape[i]].length;
    }
    const out = emptyRow();
    const retTexts = [0, 1, 2, 3].map((seq) => (r.read(seq, out), out.retText));
    assert.deepEqual(retTexts, ['', '7', 'null', ''], 'the entry and the line hit show nothing under Return, never "null"');
  }
});

// GCC's location views: several location list entries can start at one address, told apart by view numbers;
// the value where a call begins is the entry valid at the copy's entry view (DW_AT_GNU_entry_view), not the
// first entry that covers the address.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { locationAtPc, type LocEntry } from '../../../../src/core/dwarf/lists';

const blk = (tag: number) => ({ buf: new Uint8Array([tag]), start: 0, len: 1 });
const tagOf = (b: ReturnType<typeof locationAtPc>) => b?.buf[b.start];

// quicklistSetFill's `fill` in redis 7.0.15 (GCC 12 -O2): %rsi at view 0 of the entry (an empty range ending at
// view 2), then from view 2 the clamped value, then from the next address its entry value.
const entries: LocEntry[] = [
  { lo: 0x100, hi: 0x100, expr: blk(1), view: [0, 2] },
  { lo: 0x100, hi: 0x10a, expr: blk(2), view: [2, 0] },
  { lo: 0x10a, hi: 0x119, expr: blk(3), view: [0, 0] },
];
const list = { kind: 'list' as const, entries };

test('the entry valid at the view wins at an address where several start', () => {
  assert.equal(tagOf(locationAtPc(list, 0x100, 0)), 1, 'view 0: the register the caller used');
  assert.equal(tagOf(locationAtPc(list, 0x100, 1)), 1);
  assert.equal(tagOf(locationAtPc(list, 0x100, 2)), 2, 'from view 2: the clamped value');
  assert.equal(tagOf(locationAtPc(list, 0x105, 0)), 2, 'inside a range, views do not matter');
  assert.equal(tagOf(locationAtPc(list, 0x10a, 0)), 3, 'an entry ends before view 0 of its end address');
  assert.equal(locationAtPc(list, 0x119, 0), undefined, 'past the last entry: no location');
});

test('an entry that lasts into its end address until its end view describes that address at earlier views', () => {
  const l = {
    kind: 'list' as const,
    entries: [
      { lo: 0x100, hi: 0x110, expr: blk(1), view: [0, 3] as [number, number] },
      { lo: 0x110, hi: 0x120, expr: blk(2), view: [3, 0] as [number, number] },
    ],
  };
  assert.equal(tagOf(locationAtPc(l, 0x110, 1)), 1);
  assert.equal(tagOf(locationAtPc(l, 0x110, 3)), 2);
  assert.equal(tagOf(locationAtPc(l, 0x110)), 2, 'without a view: the entry that covers the address');
});

test("a value bound only a view later at the same address (a clone's parameter at view 1 of its entry) is that value", () => {
  const l = { kind: 'list' as const, entries: [{ lo: 0x100, hi: 0x112, expr: blk(1), view: [1, 0] as [number, number] }] };
  assert.equal(tagOf(locationAtPc(l, 0x100, 0)), 1);
  assert.equal(locationAtPc(l, 0x112, 0), undefined);
});

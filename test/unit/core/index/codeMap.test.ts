// Which copy of which function an address runs in, as a line probe reports it: an address inside an inlined copy
// belongs to that copy first and to the function it sits in second; a `.cold` block belongs to its function;
// gaps between functions belong to nobody.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { CodeMap } from '../../../../src/core/index/codeMap';
import type { FunctionSite, IndexedFunction } from '../../../../src/core/index/model';

const site = (kind: FunctionSite['kind'], address: number, ranges?: number[], caller?: string): FunctionSite => ({
  kind,
  address: BigInt(address),
  dieOffset: 0,
  unitOffset: 0,
  ...(ranges ? { ranges } : {}),
  ...(caller ? { caller } : {}),
});
const fn = (name: string, address: number | undefined, size: number, sites: FunctionSite[]): IndexedFunction => ({
  name,
  ...(address === undefined ? {} : { address: BigInt(address) }),
  size,
  params: [],
  inlinedInstances: 0,
  sites,
  probeable: true,
  external: true,
  unitOffset: 0,
  dieOffset: 0,
});

// main [0x1000, 0x1100) with its .cold block [0x2000, 0x2010); helper inlined into main at [0x1040, 0x1060), with a
// fragment of the same call at [0x2004, 0x2008); and `leaf`, known only by its symbol's size, at [0x1200, 0x1220).
const main = fn('main', 0x1000, 0x100, [site('entry', 0x1000, [0x1000, 0x1100, 0x2000, 0x2010])]);
const helper = fn('helper', undefined, 0, [site('inlined', 0x1040, [0x1040, 0x1060, 0x2004, 0x2008], 'main')]);
const leaf = fn('leaf', 0x1200, 0x20, [site('entry', 0x1200)]);
const map = new CodeMap([main, helper, leaf]);
const names = (address: number) => map.at(address).map((c) => `${c.fn.name}/${c.site.kind}`);

test('an address in an inlined copy is that copy first, then its caller', () => {
  assert.deepEqual(names(0x1050), ['helper/inlined', 'main/entry']);
  assert.deepEqual(
    map.at(0x1050).map((c) => c.span),
    [0x20, 0x100],
  );
  assert.deepEqual(names(0x2006), ['helper/inlined', 'main/entry'], 'the fragment in the cold block');
});

test('ranges are half-open, a cold block is its function, and a symbol-only function is its [address, address + size)', () => {
  assert.deepEqual(names(0x1000), ['main/entry']);
  assert.deepEqual(names(0x1060), ['main/entry'], 'the copy ends before 0x1060');
  assert.deepEqual(names(0x10ff), ['main/entry']);
  assert.deepEqual(names(0x1100), []);
  assert.deepEqual(names(0x200f), ['main/entry']);
  assert.deepEqual(names(0x1210), ['leaf/entry']);
  assert.deepEqual(names(0x1220), []);
  assert.deepEqual(names(0x0fff), []);
  assert.deepEqual(names(0x1180), [], 'the gap between functions');
});

test('an empty map and empty ranges answer nothing', () => {
  assert.deepEqual(new CodeMap([]).at(0x1000), []);
  assert.deepEqual(new CodeMap([fn('empty', 0x1000, 0, [site('entry', 0x1000, [0x1000, 0x1000])])]).at(0x1000), []);
});

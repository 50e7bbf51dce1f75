import assert from 'node:assert/strict';
import test from 'node:test';
import { GOROUTINE_ARG, pairKey, SITE_KINDS, siteAddress, siteKey, siteRank, toSite } from '../../../src/shared/site';

test('site kinds rank the entry first, then clones, parts and inlined copies', () => {
  assert.deepEqual(SITE_KINDS, ['entry', 'clone', 'part', 'inlined']);
  assert.deepEqual(
    (['inlined', 'part', 'entry', 'clone'] as const).slice().sort((a, b) => siteRank(a) - siteRank(b)),
    ['entry', 'clone', 'part', 'inlined'],
  );
});

test('an indexed copy becomes a site with its address as text, keeping only the fields it has', () => {
  assert.equal(siteAddress(0x401136n), '0x401136');
  assert.deepEqual(toSite({ kind: 'inlined', address: 0x401136n, caller: 'main', file: 'a.c', line: 12 }), {
    kind: 'inlined',
    address: '0x401136',
    caller: 'main',
    file: 'a.c',
    line: 12,
  });
  assert.deepEqual(Object.keys(toSite({ kind: 'entry', address: 16n })), ['kind', 'address']);
  assert.notEqual(siteKey({ kind: 'entry', address: '0x10' }), siteKey({ kind: 'clone', address: '0x10' }));
});

test('an entry and its returns share one pair key per function and site; Go pairs on the goroutine argument', () => {
  assert.equal(pairKey('f', 0x10n), pairKey('f', 16n));
  assert.notEqual(pairKey('f', 0x10n), pairKey('f', 0x20n));
  assert.notEqual(pairKey('f', 0x10n), pairKey('g', 0x10n));
  assert.equal(GOROUTINE_ARG, 'probelens_g');
});

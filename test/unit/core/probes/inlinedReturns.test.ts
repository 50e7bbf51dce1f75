// Exits of inlined copies in real GCC -O2 code (the returns and sites fixtures), found from DWARF and the
// decoded code of the function each copy sits in.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { loadIndex } from '../../../../src/core/index/load';
import { inlinedSiteExits } from '../../../../src/core/probes/inlinedReturns';
import { fixtureOrSkip } from '../../../helpers/fixtures';

async function exitsOf(t: Parameters<typeof fixtureOrSkip>[0], fixture: 'returns' | 'sites', name: string) {
  const f = await fixtureOrSkip(t, fixture);
  if (!f) return undefined;
  const { index } = await loadIndex(f.path, { noCache: true });
  const fn = index.functions().find((x) => x.name === name)!;
  const copies = fn.sites.filter((s) => s.kind === 'inlined');
  return Promise.all(
    copies.map(async (s) => {
      const holder = index.functions().find((h) => h.name === s.caller)!;
      return { site: s, holder, r: await inlinedSiteExits(index, s) };
    }),
  );
}

test('gcc -O2: each copy with an early return, a loop or switch arms has its exits, inside the function it sits in', async (t) => {
  for (const name of ['early', 'find', 'pick', 'dense_switch']) {
    const all = await exitsOf(t, 'returns', name);
    if (!all) return;
    assert.ok(all.length > 0, `${name} has inlined copies`);
    for (const { site, holder, r } of all) {
      assert.ok(r.ok, `${name} in ${site.caller}: ${!r.ok ? r.reason : ''}`);
      // One exit per path out; the return instructions of the copy's paths are not all merged into one.
      assert.ok(r.exits.length >= 2, `${name} in ${site.caller}: ${r.exits.length} exit(s)`);
      for (const e of r.exits) assert.notEqual(e.address, site.address, 'an exit is not the entry');
      // Exits are in the caller's code (its main range or its .cold block), never in some other function.
      const inHolder = (a: bigint) => a >= holder.address! && a < holder.address! + BigInt(holder.size);
      assert.ok(
        r.exits.some((e) => inHolder(e.address)),
        `${name} in ${site.caller}`,
      );
    }
  }
});

test('gcc -O2: a jump table is followed; a computed goto is not, and the copy says why', async (t) => {
  const dense = await exitsOf(t, 'returns', 'dense_switch');
  if (!dense) return;
  // Nine switch arms, each its own RET: all of them are exits.
  assert.ok(
    dense[0].r.ok && dense[0].r.exits.length >= 9,
    JSON.stringify(dense[0].r, (_, v: unknown) => (typeof v === 'bigint' ? `0x${v.toString(16)}` : v)),
  );
  const plain = await exitsOf(t, 'returns', 'plain');
  assert.equal(plain!.length, 1);
  const r = plain![0].r;
  assert.equal(!r.ok && r.category, 'indirect-jump');
});

test('gcc -O2: copies whose entry pc DWARF puts after their own code are refused', async (t) => {
  // The sites fixture's alias_name(k) + alias_target(k) are merged into one computation whose DIEs both give an
  // entry after it.
  const alias = await exitsOf(t, 'sites', 'alias_target');
  if (!alias) return;
  assert.ok(alias.length >= 1);
  for (const { r } of alias) assert.equal(!r.ok && r.category, 'entry-outside');
});

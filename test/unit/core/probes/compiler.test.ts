// The compiler on a real GCC -O2 build of the sites fixture, without a target: what each compiled probe says about
// its site (the shared Site shape), how entries and returns pair (one key per function and site), and how a site is
// named in messages (the shared describer). The CLI's `define` over the same compiler: test/unit/cli/sites.test.ts;
// arming the result: test/integration/sites.test.ts and returns.test.ts.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { loadIndex } from '../../../../src/core/index/load';
import { compileProbes } from '../../../../src/core/probes/compiler';
import { describeSite } from '../../../../src/shared/hitText';
import { fixtureOrSkip } from '../../../helpers/fixtures';

test('compiled probes carry their site as the shared Site, and an entry pairs with the returns of its own site only', async (t) => {
  const f = await fixtureOrSkip(t, 'sites');
  if (!f) return;
  const { index } = await loadIndex(f.path, { noCache: true, debugDirs: f.debugDirs });
  const probes = await compileProbes(['both_fn x', 'both_fn%return'], index, {});
  const entries = probes.filter((p) => p.kind === 'entry');
  const returns = probes.filter((p) => p.kind === 'return');
  assert.deepEqual(
    entries.map((p) => p.site?.kind),
    ['entry', 'inlined'],
  );
  for (const p of probes) {
    assert.match(p.site!.address, /^0x[0-9a-f]+$/, `${p.event}: the site's address as text`);
    assert.equal(p.pairBy, 'tid');
  }
  const inlined = entries.find((p) => p.site?.kind === 'inlined')!;
  assert.equal(inlined.site?.caller, 'main');
  assert.match(inlined.site?.file ?? '', /sites\.c$/);
  // Each site's returns share its entry's pair key; no key is shared across sites.
  for (const e of entries) {
    const mine = returns.filter((r) => r.site?.address === e.site?.address);
    assert.ok(mine.length > 0, `${e.event}: its returns`);
    for (const r of mine) assert.equal(r.pairKey, e.pairKey);
  }
  assert.equal(new Set(entries.map((p) => p.pairKey)).size, entries.length);
  // The inlined copy's returns cannot fetch $retval: the warning names the copy as everything else does.
  const ret = await compileProbes(['both_fn%return $retval'], index, {});
  const warned = ret.find((p) => p.site?.kind === 'inlined')!;
  assert.ok(
    warned.warnings.some((w) => w.includes(`unavailable at ${describeSite(warned.site!)}:`)),
    warned.warnings.join('; '),
  );
});

test('a return probe with an inlined copy whose exits cannot be proved is a lower bound; one with all exits proved is not', async (t) => {
  const f = await fixtureOrSkip(t, 'sites');
  if (!f) return;
  const { index } = await loadIndex(f.path, { noCache: true });
  // alias_target's copies merged with alias_name's have their entry pc after their code: no exit is proved there.
  const merged = await compileProbes(['alias_target%return'], index, {});
  assert.ok(merged.length > 0 && merged.every((p) => p.lowerBound === true), JSON.stringify(merged.map((p) => [p.event, p.lowerBound])));
  assert.ok(merged.some((p) => p.warnings.some((w) => /^alias_target: /.test(w))));
  const both = await compileProbes(['both_fn%return'], index, {});
  assert.ok(both.length > 1 && both.every((p) => p.lowerBound === undefined));
});

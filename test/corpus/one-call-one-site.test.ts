// Counts never exceed calls: for every function of every corpus binary, the sites a function entry probe arms
// (define's site list, entrySites.ts) have passed the define-time check — no armed site is reachable from
// another of the same function within one call. What the check took out (sites the entry analysis had kept) is
// listed as a diagnostic: each is a count made a lower bound instead of one that could go over.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { loadIndex } from '../../src/core/index/load';
import { provedEntrySites } from '../../src/core/probes/entrySites';
import { callSites } from '../../src/core/probes/resolve';
import { corpusProjectOrSkip, type CorpusName } from '../helpers/corpus';

const BINARIES: Array<[CorpusName, string]> = [
  ['redis', 'redis-server'],
  ['redis', 'redis-cli'],
  ['postgres', 'postgres'],
  ['postgres', 'libpq.so'],
  ['ninja', 'ninja'],
  ['redis-instrumented', 'redis-server'],
  ['sqlite', 'sqlite3'],
  ['sqlite-instrumented', 'sqlite3'],
];

for (const [project, name] of BINARIES) {
  test(`${project} ${name}: no function has two armed sites that can fire for one call`, async (t) => {
    const p = await corpusProjectOrSkip(t, project);
    if (!p) return;
    const { index } = await loadIndex(p.binaries[name], { noCache: true });
    const removed: string[] = [];
    const armedTwice: string[] = [];
    let checked = 0;
    let lowerBound = 0;
    for (const f of index.functions()) {
      const sites = callSites(f);
      if (!sites.some((s) => s.kind === 'inlined')) continue;
      checked++;
      const r = await provedEntrySites(index, f, sites);
      if (r.lowerBound) lowerBound++;
      const out = r.unproved.filter((u) => /can run within the call begun at/.test(u.reason));
      for (const u of out) {
        removed.push(`${f.name} ${u.site.address.toString(16)}: ${u.reason}`);
        if (r.sites.some((s) => s.address === u.site.address && s.dieOffset === u.site.dieOffset)) armedTwice.push(f.name);
      }
    }
    t.diagnostic(`${checked} functions with inlined copies checked; ${lowerBound} with a count that is a lower bound`);
    t.diagnostic(`${removed.length} site(s) the check took out:\n  ${removed.slice(0, 40).join('\n  ')}`);
    assert.ok(checked > 0, 'functions with inlined copies were checked');
    assert.deepEqual(armedTwice, [], 'a site the check found is still armed');
  });
}

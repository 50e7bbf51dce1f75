// "Trace FUNC" counts each call exactly once on real optimised code: the sites fixture (GCC -O2) calls
// functions with a .cold block, a .part, clones, inlined copies, same-name statics and an alias, and prints how
// often each ran; probes armed through the whole engine on real tracefs must see exactly those counts.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { copyFileSync, mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { loadIndex } from '../../src/core/index/load';
import { TraceSession } from '../../src/core/session/traceSession';
import { LocalTarget } from '../../src/core/target/local';
import type { Hit } from '../../src/core/tracefs/hitParser';
import { fixtureOrSkip, runFixture } from '../helpers/fixtures';
import { requireTracefs } from '../helpers/tracefs';

const SPECS = ['cold_fn x', 'part_fn x', 'part_ext x', 'clone_fn', 'inl_fn', 'both_fn x', 'same_name x', 'alias_name x'];

test('sites: every call of a .cold, .part, cloned, inlined, same-name and aliased function is counted exactly once', async (t) => {
  if (!requireTracefs(t)) return;
  const f = await fixtureOrSkip(t, 'sites');
  if (!f) return;
  // A private copy: a uprobe sits on the file's inode, so nobody else's runs hit ours.
  const dir = mkdtempSync(join(tmpdir(), 'probelens-sites-'));
  const bin = join(dir, 'sites');
  copyFileSync(f.path, bin);
  const { index } = await loadIndex(bin, { noCache: true });
  const hits: Hit[] = [];
  const session = await TraceSession.start({ target: new LocalTarget(), index, specs: SPECS, onHit: (h) => hits.push(h) });
  let out: Awaited<ReturnType<typeof runFixture>>;
  let lost = 0;
  try {
    out = await runFixture({ ...f, path: bin }, ['300']);
    // The program's own total is what must arrive; wait for it (bounded), not for a while.
    const expected = out.total;
    for (let i = 0; i < 200 && hits.length < expected; i++) await new Promise((r) => setTimeout(r, 100));
  } finally {
    lost = (await session.stop()).lost;
  }
  assert.equal(lost, 0, 'no events lost');
  const byEvent = new Map(session.probes.map((p) => [p.event, p]));
  const count = (pred: (h: Hit) => boolean) => hits.filter(pred).length;
  // A hit's probe is the function's primary event; its spec is the compiled probe's.
  const spec = (s: string) => (h: Hit) => byEvent.get(h.event)?.spec === s;
  const counts = out!.counts;
  assert.equal(count(spec('cold_fn x')), counts.get('cold_fn'), 'cold_fn (hot/cold split)');
  assert.equal(count(spec('part_fn x')), counts.get('part_fn'), 'part_fn (inlined heads + .part)');
  assert.equal(count(spec('part_ext x')), counts.get('part_ext'), 'part_ext (entry + inlined heads + .part)');
  assert.equal(count(spec('clone_fn')), counts.get('clone_fn'), 'clone_fn (.constprop.isra clone)');
  assert.equal(count(spec('inl_fn')), counts.get('inl_fn'), 'inl_fn (always_inline copies)');
  assert.equal(count(spec('both_fn x')), counts.get('both_fn'), 'both_fn (entry + inlined)');
  assert.equal(count(spec('alias_name x')), counts.get('alias_target'), 'alias_name = alias_target');
  const sameIn = (file: string) =>
    count((h) => byEvent.get(h.event)?.spec === 'same_name x' && byEvent.get(h.event)?.file?.endsWith(`/${file}`) === true);
  assert.equal(sameIn('sites.c'), counts.get('same_name@sites.c'), 'same_name in sites.c');
  assert.equal(sameIn('sites_other.c'), counts.get('same_name@sites_other.c'), 'same_name in sites_other.c');
  assert.equal(hits.length, out!.total, 'nothing else was counted');
  // Each probe knows its site; every kind is there, each site once.
  const kinds = new Set(session.probes.map((p) => p.site?.kind));
  for (const k of ['entry', 'clone', 'inlined'] as const) assert.ok(kinds.has(k), `a ${k} site is armed`);
  const inlinedHit = hits.find((h) => byEvent.get(h.event)?.spec === 'inl_fn' && byEvent.get(h.event)?.site?.kind === 'inlined');
  assert.ok(inlinedHit, 'an inlined copy was hit');
  assert.equal(byEvent.get(inlinedHit.event)?.site?.caller, 'main');
  assert.ok(byEvent.get(inlinedHit.event)?.site?.file?.endsWith('/sites.c'), 'its call site');
});

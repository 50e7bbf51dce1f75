// Returns of inlined copies on real optimised code: the returns fixture (GCC -O2) has always_inline functions
// with several exits each (early returns, a return from a loop, switch arms), inlined into several callers and
// interleaved with their code. Entry and return probes at every site, armed through the whole engine on real
// tracefs, must each see exactly the calls the program counts, and every inlined call must get its latency,
// paired within its own site.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { copyFileSync, mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { loadIndex } from '../../src/core/index/load';
import { compileProbes, CompileError } from '../../src/core/probes/compiler';
import { TraceSession } from '../../src/core/session/traceSession';
import { LocalTarget } from '../../src/core/target/local';
import type { Hit } from '../../src/core/tracefs/hitParser';
import { fixtureOrSkip, runFixture } from '../helpers/fixtures';
import { requireTracefs } from '../helpers/tracefs';

const FUNCS = ['early', 'find', 'pick', 'dense_switch'];

test('returns: entry and return probes at every inlined copy count exactly the calls, with latency per site', async (t) => {
  if (!requireTracefs(t)) return;
  const f = await fixtureOrSkip(t, 'returns');
  if (!f) return;
  // A private copy: a uprobe sits on the file's inode, so nobody else's runs hit ours.
  const dir = mkdtempSync(join(tmpdir(), 'probelens-returns-'));
  const bin = join(dir, 'returns');
  copyFileSync(f.path, bin);
  const { index } = await loadIndex(bin, { noCache: true });
  const specs = FUNCS.flatMap((fn) => [fn, `${fn}%return`]);
  const hits: Hit[] = [];
  const session = await TraceSession.start({ target: new LocalTarget(), index, specs, onHit: (h) => hits.push(h) });
  let out: Awaited<ReturnType<typeof runFixture>>;
  let lost = 0;
  try {
    out = await runFixture({ ...f, path: bin }, ['400']);
    const expected = FUNCS.reduce((n, fn) => n + 2 * (out.counts.get(fn) ?? 0), 0);
    for (let i = 0; i < 200 && hits.length < expected; i++) await new Promise((r) => setTimeout(r, 100));
  } finally {
    lost = (await session.stop()).lost;
  }
  assert.equal(lost, 0, 'no events lost');
  const byEvent = new Map(session.probes.map((p) => [p.event, p]));
  for (const p of session.probes)
    assert.equal(p.warnings.filter((w) => /unavailable/.test(w)).length, 0, `${p.event}: ${p.warnings.join('; ')}`);
  const inlinedSites = (fn: string) =>
    new Set(session.probes.filter((p) => p.function === fn && p.site?.kind === 'inlined').map((p) => p.site!.address));
  for (const fn of FUNCS) {
    const calls = out!.counts.get(fn);
    assert.ok(calls && calls > 0, `${fn} ran`);
    const entries = hits.filter((h) => byEvent.get(h.event)?.spec === fn).length;
    const returns = hits.filter((h) => byEvent.get(h.event)?.spec === `${fn}%return`);
    assert.equal(entries, calls, `${fn}: entries`);
    assert.equal(returns.length, calls, `${fn}: returns`);
    if (fn !== 'dense_switch') assert.ok(inlinedSites(fn).size >= 2, `${fn} has several inlined copies`);
    // Every return hit names its inlined site, like entry hits.
    for (const h of returns) assert.equal(byEvent.get(h.event)?.site?.kind, 'inlined');
    assert.ok(new Set(returns.map((h) => byEvent.get(h.event)!.address)).size >= 3, `${fn}: several distinct exits ran`);
  }
  // Latency per site: each site of the entry probe has one latency per call of that site, and no return is left
  // unpaired (a key shared across sites would pair one copy's return with another's entry and leave some open).
  const snap = session.aggregates.snapshot();
  assert.equal(snap.unpairedReturns, 0);
  for (const p of session.probes.filter((x) => x.kind === 'entry' && FUNCS.includes(x.spec))) {
    const n = hits.filter((h) => h.event === p.event).length;
    const site = snap.sites[session.probeName(p)]?.find((s) => s.site.address === p.site?.address);
    assert.equal(site?.latency?.count ?? 0, n, `latency of ${p.event} (${p.site?.kind} ${p.site?.address})`);
    assert.ok(n > 0, `${p.event} ran`);
  }
  for (const fn of FUNCS) {
    const probe = session.probeName(session.probes.find((x) => x.kind === 'entry' && x.spec === fn)!);
    assert.equal(snap.latency[probe]?.count, out!.counts.get(fn), `${fn}: latency over all its sites`);
  }
});

test('returns: a copy whose exits cannot be proved says why instead of counting fewer', async (t) => {
  const f = await fixtureOrSkip(t, 'returns');
  if (!f) return;
  const { index } = await loadIndex(f.path, { noCache: true });
  // plain's only copy sits in a function with a computed goto, whose targets nothing describes.
  await assert.rejects(
    compileProbes(['plain%return'], index, {}),
    (e: unknown) =>
      e instanceof CompileError &&
      /returns are unavailable at 1 inlined copy, whose calls this return probe does not see \(inlined into drive_plain .*computed jump at 0x[0-9a-f]+/.test(
        e.message,
      ),
  );
  // Its entry is still probed.
  assert.equal((await compileProbes(['plain'], index, {})).length, 1);
});

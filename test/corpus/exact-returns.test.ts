// Exact return counts at inlined copies on a real program: the instrumented redis counts every call of every
// function itself (inlined copies included). Between two snapshots of the idle program, every call a workload
// began has also returned (none of the functions compared ends the program or jumps out with longjmp), so the
// program's call count is its return count: `f%return` must see exactly that many returns, at all of f's sites,
// inlined copies included, and each inlined call must pair with its entry. Functions where some copy's exits
// cannot be proved are not compared; the census says how many and why.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { copyFileSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { loadIndex } from '../../src/core/index/load';
import { compileProbes } from '../../src/core/probes/compiler';
import { inlinedSiteExits } from '../../src/core/probes/inlinedReturns';
import { TraceSession } from '../../src/core/session/traceSession';
import { LocalTarget } from '../../src/core/target/local';
import type { Hit } from '../../src/core/tracefs/hitParser';
import { corpusProjectOrSkip } from '../helpers/corpus';
import { elfFacts } from '../helpers/parity';
import { requireTracefs } from '../helpers/tracefs';
import { CountingRedis, delta } from './redisCounts';
import { settle } from './batches';

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const REQUESTS = 200;
const MAX_HITS = 120_000;
const MAX_EVENTS = 700;

test('instrumented redis: return probes at every site, inlined copies included, see exactly the calls that returned', async (t) => {
  if (!requireTracefs(t)) return;
  const p = await corpusProjectOrSkip(t, 'redis-instrumented');
  if (!p) return;
  const dir = mkdtempSync(join(tmpdir(), 'probelens-corpus-returns-'));
  const server = join(dir, 'redis-server');
  copyFileSync(p.binaries['redis-server'], server);
  const facts = await elfFacts(server);
  const { index } = await loadIndex(server, { noCache: true });

  // Census: every inlined copy of the binary, whether its exits could be proved, and why not.
  const why = new Map<string, number>();
  const fnsWhy = new Map<string, Set<string>>();
  let copies = 0;
  let proved = 0;
  const unavailableFns = new Set<string>();
  for (const f of index.functions()) {
    for (const s of f.sites.filter((x) => x.kind === 'inlined')) {
      copies++;
      const r = await inlinedSiteExits(index, s);
      if (r.ok) {
        proved++;
        continue;
      }
      unavailableFns.add(f.name);
      why.set(r.category, (why.get(r.category) ?? 0) + 1);
      fnsWhy.set(r.category, (fnsWhy.get(r.category) ?? new Set()).add(f.name));
    }
  }
  const withInlined = new Set(
    index
      .functions()
      .filter((f) => f.sites.some((s) => s.kind === 'inlined'))
      .map((f) => f.name),
  );
  t.diagnostic(`inlined copies: ${copies}, exits proved at ${proved}; functions with inlined copies: ${withInlined.size}`);
  t.diagnostic(`functions with a copy whose returns are unavailable: ${unavailableFns.size}`);
  for (const [c, n] of [...why].sort((a, b) => b[1] - a[1])) t.diagnostic(`  ${c}: ${n} copies of ${fnsWhy.get(c)!.size} functions`);

  const redis = await CountingRedis.start({ server, cli: p.binaries['redis-cli'], benchmark: p.binaries['redis-benchmark'], dir, facts });
  let session: TraceSession | undefined;
  try {
    const idle0 = await redis.snapshot();
    let idle1 = await redis.snapshot();
    while ((delta(idle0, idle1).get('serverCron') ?? 0) < 20) {
      await sleep(200);
      idle1 = await redis.snapshot();
    }
    const idle = new Set(delta(idle0, idle1).keys());
    await redis.workload(REQUESTS);
    const after = await redis.snapshot();
    const called = delta(idle1, after);

    // Functions with inlined copies the workload calls and the idle program does not, every definition counting
    // itself, whose returns are available at every site.
    const candidates = [...called.keys()]
      .filter((n) => {
        if (idle.has(n) || n.startsWith('?') || !withInlined.has(n) || unavailableFns.has(n)) return false;
        const syms = facts.byName.get(n) ?? [];
        return syms.length > 0 && syms.every((s) => after.addresses.has(s.address));
      })
      .sort((a, b) => called.get(a)! - called.get(b)! || a.localeCompare(b));
    const chosen: string[] = [];
    let hits = 0;
    let events = 0;
    for (const n of candidates) {
      let probes;
      try {
        probes = await compileProbes([n, `${n}%return`], index, { maxSites: 10_000 });
      } catch {
        continue;
      }
      if (probes.some((pr) => pr.warnings.some((w) => /returns are unavailable/.test(w)))) continue;
      if (hits + 2 * called.get(n)! > MAX_HITS || events + probes.length > MAX_EVENTS) continue;
      chosen.push(n);
      hits += 2 * called.get(n)!;
      events += probes.length;
    }
    t.diagnostic(`${candidates.length} candidate functions; tracing ${chosen.length} (${events} events, ≈${hits} hits)`);
    assert.ok(chosen.length >= 40, `at least 40 functions with inlined copies to compare (${chosen.length} qualify)`);

    const received: Hit[] = [];
    session = await TraceSession.start({
      target: new LocalTarget(),
      index,
      specs: chosen.flatMap((n) => [n, `${n}%return`]),
      pid: redis.proc.pid,
      bufferKb: 16384,
      maxSites: 10_000,
      onHit: (h) => received.push(h),
    });
    t.diagnostic(`armed at ${new Date().toISOString()}`);
    const probeOf = new Map(session.probes.map((pr) => [pr.event, pr]));
    const a = await redis.snapshot();
    await redis.workload(REQUESTS);
    const b = await redis.snapshot();
    const expected = delta(a, b);
    await settle(() => received.length);
    const snap = session.aggregates.snapshot();
    const probeName = session.probeName.bind(session);
    t.diagnostic(`received ${received.length} hits; stopping at ${new Date().toISOString()}`);
    const summary = await session.stop();
    session = undefined;
    assert.equal(summary.lost, 0, `lost ${summary.lost} events: the comparison needs every hit`);

    const entries = new Map<string, number>();
    const returns = new Map<string, number>();
    let inlinedReturns = 0;
    for (const h of received) {
      const us = Math.round(h.ts * 1e6);
      if (us <= a.endUs || us >= b.startUs) continue;
      const pr = probeOf.get(h.event);
      if (!pr?.function) continue;
      const m = pr.kind === 'return' ? returns : entries;
      m.set(pr.function, (m.get(pr.function) ?? 0) + 1);
      if (pr.kind === 'return' && pr.site?.kind === 'inlined') inlinedReturns++;
    }
    const mismatches = chosen.flatMap((n) => {
      const want = expected.get(n) ?? 0;
      const e = entries.get(n) ?? 0;
      const r = returns.get(n) ?? 0;
      return e === want && r === want ? [] : [`${n}: the program counted ${want} calls; received ${e} entries, ${r} returns`];
    });
    t.diagnostic(`${chosen.length - mismatches.length} of ${chosen.length} functions: entries and returns exactly the program's counts`);
    t.diagnostic(`returns seen at inlined copies: ${inlinedReturns}; unpaired returns: ${snap.unpairedReturns}`);
    assert.equal(a.overflow + b.overflow, 0, 'the counting runtime had room for every function');
    assert.deepEqual(mismatches.length, 0, `${mismatches.length} function(s) differ:\n  ${mismatches.slice(0, 60).join('\n  ')}`);
    assert.ok(inlinedReturns > 0, 'returns at inlined copies ran');
    // Each inlined call's latency is measured against its own site's entry.
    const inlinedEntries = [...probeOf.values()].filter((pr) => pr.kind === 'entry' && pr.site?.kind === 'inlined');
    // Latency is kept per probe and per site: an inlined site's own calls.
    const siteLatency = (pr: (typeof inlinedEntries)[number]) =>
      snap.sites[probeName(pr)]?.find((s) => s.site.address === pr.site?.address)?.latency?.count ?? 0;
    assert.ok(
      inlinedEntries.some((pr) => siteLatency(pr) > 0),
      'latency measured at inlined copies',
    );
  } finally {
    if (session) await session.stop().catch(() => undefined);
    redis.stop();
    rmSync(dir, { recursive: true, force: true });
  }
});

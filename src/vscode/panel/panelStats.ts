// The live panel's figures, read from the sessions' aggregates (the one place hits are counted, bucketed and
// paired): summed over every session the panel has shown since it was last cleared, less the figures at that
// clear (a baseline snapshot, so "clear" never starts a second count). No `vscode` import.
import type { AggregateSnapshot, LatencyStats } from '../../core/session/aggregates';
import type { Hit } from '../../shared/hit';
import { formatHitArgs, formatValue } from '../../shared/hitText';
import { siteKey, type Site } from '../../shared/site';
import type { LatencyHistogram, PanelStats, SiteStats } from '../../shared/protocol';
import { nameRecord } from '../../shared/names';

interface Latency {
  log2: number[];
  count: number;
  sum: number;
  max: number;
}

interface SiteTally {
  site: Site;
  hits: number;
  /** none when the kernel counted the site's hits */
  last?: Hit;
  latency?: Latency;
}

/** Several sessions' aggregates summed (sites of one probe by kind and address, in the order they first hit). */
export interface Tally {
  hits: Map<string, number>;
  sites: Map<string, Map<string, SiteTally>>;
  latency: Map<string, Latency>;
  lost: number;
}

const latencyOf = (l: LatencyStats): Latency => ({ log2: [...l.log2], count: l.count, sum: l.sum, max: l.max });

function addLatency(into: Latency | undefined, l: LatencyStats): Latency {
  if (!into) return latencyOf(l);
  l.log2.forEach((n, i) => (into.log2[i] = (into.log2[i] ?? 0) + n));
  into.count += l.count;
  into.sum += l.sum;
  into.max = Math.max(into.max, l.max);
  return into;
}

export function tally(snapshots: readonly AggregateSnapshot[]): Tally {
  const t: Tally = { hits: new Map(), sites: new Map(), latency: new Map(), lost: 0 };
  for (const s of snapshots) {
    for (const [probe, n] of Object.entries(s.hits)) t.hits.set(probe, (t.hits.get(probe) ?? 0) + n);
    for (const [probe, l] of Object.entries(s.latency)) t.latency.set(probe, addLatency(t.latency.get(probe), l));
    for (const [probe, sites] of Object.entries(s.sites)) {
      let byKey = t.sites.get(probe);
      if (!byKey) t.sites.set(probe, (byKey = new Map()));
      for (const a of sites) {
        const k = siteKey(a.site);
        const row = byKey.get(k);
        if (!row) byKey.set(k, { site: a.site, hits: a.hits, last: a.last, latency: a.latency && latencyOf(a.latency) });
        else {
          row.hits += a.hits;
          if (a.last && (!row.last || a.last.ts >= row.last.ts)) row.last = a.last;
          if (a.latency) row.latency = addLatency(row.latency, a.latency);
        }
      }
    }
    t.lost += s.lost;
  }
  return t;
}

/**
 * The latency since the baseline. Counts, sums and buckets subtract exactly; the maximum is exact when it was
 * reached since, and otherwise bounded by the top of the highest bucket that gained a call.
 */
function latencySince(now: Latency, base: Latency | undefined): Latency | undefined {
  const count = now.count - (base?.count ?? 0);
  if (count <= 0) return undefined;
  const log2 = now.log2.map((n, i) => n - (base?.log2[i] ?? 0));
  let top = log2.length - 1;
  while (top > 0 && log2[top] <= 0) top--;
  return { log2, count, sum: now.sum - (base?.sum ?? 0), max: Math.min(now.max, 2 ** (top + 1) - 1) };
}

function histogram(l: Latency): LatencyHistogram {
  let n = l.log2.length;
  while (n > 0 && l.log2[n - 1] === 0) n--;
  return { buckets: l.log2.slice(0, n), count: l.count, maxNs: l.max };
}

/** What the panel shows: `now` less `base` (undefined: nothing cleared yet). */
export function panelStats(now: Tally, base: Tally | undefined, extra: Pick<PanelStats, 'mismatch' | 'historyDropped'>): PanelStats {
  const out: PanelStats = {
    counts: nameRecord(),
    sites: nameRecord(),
    latency: nameRecord(),
    lost: now.lost - (base?.lost ?? 0),
    ...extra,
  };
  for (const [probe, n] of now.hits) {
    const since = n - (base?.hits.get(probe) ?? 0);
    if (since > 0) out.counts[probe] = since;
  }
  for (const [probe, l] of now.latency) {
    const since = latencySince(l, base?.latency.get(probe));
    if (since) out.latency[probe] = histogram(since);
  }
  for (const [probe, byKey] of now.sites) {
    const rows: SiteStats[] = [];
    for (const [k, st] of byKey) {
      const before = base?.sites.get(probe)?.get(k);
      const hits = st.hits - (before?.hits ?? 0);
      const lat = st.latency && latencySince(st.latency, before?.latency);
      if (hits <= 0 && !lat) continue;
      rows.push({
        site: st.site,
        count: hits,
        lastArgs: hits > 0 && st.last ? formatHitArgs(st.last) : '',
        lastRet: hits > 0 && st.last?.retval !== undefined ? formatValue(st.last.retval) : '',
        latencyCount: lat?.count ?? 0,
        latencySumNs: lat?.sum ?? 0,
        latencyMaxNs: lat?.max ?? 0,
      });
    }
    if (rows.length) out.sites[probe] = rows;
  }
  return out;
}

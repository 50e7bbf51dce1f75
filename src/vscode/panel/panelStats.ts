// The live panel's figures, read from the sessions' aggregates (the one place hits are counted, bucketed and
// paired): summed over every session the panel has shown since it was last cleared, less the figures at that
// clear (a baseline snapshot, so "clear" never starts a second count). No `vscode` import.
import type { AggregateSnapshot } from '../../core/session/aggregates';
import { copyLatency, latencySince, mergeLatency, percentiles, trimmedLog2, type Latency } from '../../core/session/latency';
import type { Hit } from '../../shared/hit';
import { formatHitArgs, formatValue } from '../../shared/hitText';
import { siteKey, type Site } from '../../shared/site';
import type { LatencyHistogram, PanelStats, SiteStats } from '../../shared/protocol';
import { nameRecord } from '../../shared/names';

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

export function tally(snapshots: readonly AggregateSnapshot[]): Tally {
  const t: Tally = { hits: new Map(), sites: new Map(), latency: new Map(), lost: 0 };
  for (const s of snapshots) {
    for (const [probe, n] of Object.entries(s.hits)) t.hits.set(probe, (t.hits.get(probe) ?? 0) + n);
    for (const [probe, l] of Object.entries(s.latency)) t.latency.set(probe, mergeLatency(t.latency.get(probe), l));
    for (const [probe, sites] of Object.entries(s.sites)) {
      let byKey = t.sites.get(probe);
      if (!byKey) t.sites.set(probe, (byKey = new Map()));
      for (const a of sites) {
        const k = siteKey(a.site);
        const row = byKey.get(k);
        if (!row) byKey.set(k, { site: a.site, hits: a.hits, last: a.last, latency: a.latency && copyLatency(a.latency) });
        else {
          row.hits += a.hits;
          if (a.last && (!row.last || a.last.ts >= row.last.ts)) row.last = a.last;
          if (a.latency) row.latency = mergeLatency(row.latency, a.latency);
        }
      }
    }
    t.lost += s.lost;
  }
  return t;
}

function histogram(l: Latency): LatencyHistogram {
  const p = percentiles(l);
  return { buckets: trimmedLog2(l), count: l.count, maxNs: l.max, p50Ns: p.p50, p99Ns: p.p99 };
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

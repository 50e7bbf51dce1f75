// What the editor shows about one probe spec, folded from every session (one per target) that armed it:
// hit counts per host, the last hits' values and the latency of an entry/return pair. Pure data in, pure
// data out: the decorations, hovers, lenses and tree all read this.
import type { AggregateSnapshot, LatencyStats } from '../../core/session/aggregates';
import type { HitSite, HitValue } from '../../shared/hit';

export type ProbeState = 'pending' | 'armed' | 'error' | 'stale' | 'disabled' | 'stopped';

/** One session's view of its probes: which tracefs events each spec became, and its aggregates. */
export interface SessionView {
  host: string;
  /** event name → spec text it was compiled from, and the copy of the function's code it is armed on */
  events: ReadonlyArray<{ event: string; spec: string; site?: HitSite }>;
  snapshot: AggregateSnapshot;
}

export interface LastHit {
  host: string;
  ts: number;
  values: Record<string, HitValue>;
  site?: HitSite;
  /** Names among `values` whose string is only the beginning of a longer one. */
  cut?: string[];
}

export interface SpecStats {
  hits: number;
  byHost: Record<string, number>;
  /** newest last */
  lastHits: LastHit[];
  latency?: LatencyStats;
  /** Hits per function site (all hosts), in the order the sites were armed: the lens's sum broken down. */
  bySite?: Array<HitSite & { hits: number }>;
}

/** Zips an event's per-argument rings back into hits (all arguments of a hit are recorded together). */
function lastHitsOf(
  host: string,
  rings: Record<string, Array<{ ts: number; value: HitValue; cut?: true }>> | undefined,
  site: HitSite | undefined,
): LastHit[] {
  if (!rings) return [];
  const names = Object.keys(rings);
  if (names.length === 0) return [];
  const n = Math.max(...names.map((k) => rings[k].length));
  const out: LastHit[] = [];
  for (let i = 0; i < n; i++) {
    const values: Record<string, HitValue> = {};
    let ts = 0;
    let cut: string[] | undefined;
    for (const k of names) {
      const ring = rings[k];
      const s = ring[ring.length - n + i];
      if (s) {
        values[k] = s.value;
        ts = s.ts;
        if (s.cut) (cut ??= []).push(k);
      }
    }
    const h: LastHit = site ? { host, ts, values, site } : { host, ts, values };
    if (cut) h.cut = cut;
    out.push(h);
  }
  return out;
}

export function statsForSpec(spec: string, sessions: readonly SessionView[], keepLast = 8): SpecStats {
  const st: SpecStats = { hits: 0, byHost: {}, lastHits: [], bySite: [] };
  const sites = new Map<string, HitSite & { hits: number }>();
  for (const s of sessions) {
    for (const { event, spec: sp, site } of s.events) {
      if (sp !== spec) continue;
      const n = s.snapshot.hits[event] ?? 0;
      st.hits += n;
      if (site) {
        const key = `${site.kind}\0${site.address}`;
        const row = sites.get(key);
        if (row) row.hits += n;
        else sites.set(key, { ...site, hits: n });
      }
      st.byHost[s.host] = (st.byHost[s.host] ?? 0) + n;
      st.lastHits.push(...lastHitsOf(s.host, s.snapshot.lastValues[event], site));
      const lat = s.snapshot.latency[event];
      if (lat && (!st.latency || lat.count > st.latency.count)) st.latency = lat;
    }
  }
  st.bySite = [...sites.values()];
  // Timestamps of one host are comparable; across hosts the order is only approximate (separate clocks).
  st.lastHits.sort((a, b) => a.ts - b.ts);
  if (st.lastHits.length > keepLast) st.lastHits = st.lastHits.slice(-keepLast);
  return st;
}

/** Latency is recorded under the entry event of a pair: a "Latency" probe set finds it on either of its specs. */
export function latencyForSpecs(specs: readonly string[], sessions: readonly SessionView[]): LatencyStats | undefined {
  let best: LatencyStats | undefined;
  for (const spec of specs) {
    const l = statsForSpec(spec, sessions).latency;
    if (l && (!best || l.count > best.count)) best = l;
  }
  return best;
}

// What the editor shows about one probe spec, folded from every session (one per target) that armed it:
// hit counts per host, the last hits' values and the latency of an entry/return pair, as the session's aggregates
// counted them. Pure data in, pure data out: the decorations, hovers, lenses and tree all read this.
// Tests: test/unit/vscode/model/siteStats.test.ts, test/unit/vscode/model/format.test.ts, test/unit/core/session/sameFigures.test.ts
import type { AggregateSnapshot } from '../../core/session/aggregates';
import { mergeLatency, type Latency } from '../../core/session/latency';
import type { Hit, HitValue } from '../../shared/hit';
import { siteKey, type Site } from '../../shared/site';
import { nameRecord } from '../../shared/names';

export type ProbeState = 'pending' | 'armed' | 'error' | 'stale' | 'disabled' | 'stopped';

/** One session's view of its probes: which tracefs events each spec became, and its aggregates. */
export interface SessionView {
  host: string;
  /**
   * event name → the probe its hits count under (the aggregates' key), the spec text it was compiled from, and the
   * copy of the function's code it is armed on
   */
  events: ReadonlyArray<{ event: string; probe: string; spec: string; site?: Site; lowerBound?: boolean; kernelSource?: 'dwarf' | 'btf' }>;
  snapshot: AggregateSnapshot;
  /** Which path produced the figures: the kernel's hist triggers, or the records streamed (absent: streamed). */
  path?: CountPath;
}

export type CountPath = 'kernel' | 'stream';

export interface LastHit {
  host: string;
  ts: number;
  values: Record<string, HitValue>;
  site?: Site;
  /** Names among `values` whose string is only the beginning of a longer one. */
  cut?: string[];
}

export interface SpecStats {
  hits: number;
  byHost: Record<string, number>;
  /** newest last */
  lastHits: LastHit[];
  /** Every host's paired calls together (latency.ts's one merge, as the CLI summary and the panel). */
  latency?: Latency;
  /** Hits per function site (all hosts), in the order the sites were armed: the lens's sum broken down. */
  bySite?: Array<Site & { hits: number }>;
  /**
   * Some calls may go uncounted: a copy of the function whose entries (or, for returns, exits) could not all be
   * proved. The hits are then at least the calls made, not exactly them.
   */
  lowerBound?: true;
  /** A kernel probe's source: the vmlinux's DWARF, or the running kernel's BTF and kallsyms. */
  kernelSource?: 'dwarf' | 'btf';
  /** Which paths produced the figures, per host (a probe aggregated where the target can, streamed elsewhere). */
  paths?: Record<string, CountPath>;
}

function lastHitOf(host: string, h: Hit): LastHit {
  const values = nameRecord(h.args);
  if (h.retval !== undefined) values.retval = h.retval;
  const out: LastHit = h.site ? { host, ts: h.ts, values, site: h.site } : { host, ts: h.ts, values };
  if (h.cut?.length) out.cut = h.cut;
  return out;
}

/** Reads a spec's numbers from the sessions' aggregates (counted there, under the spec's probe): nothing is counted here. */
export function statsForSpec(spec: string, sessions: readonly SessionView[], keepLast = 8): SpecStats {
  const st: SpecStats = { hits: 0, byHost: nameRecord(), lastHits: [], bySite: [] };
  const sites = new Map<string, Site & { hits: number }>();
  for (const s of sessions) {
    const probes = new Set<string>();
    for (const { probe, spec: sp, site, lowerBound, kernelSource } of s.events) {
      if (sp !== spec) continue;
      probes.add(probe);
      (st.paths ??= nameRecord())[s.host] = s.path ?? 'stream';
      if (lowerBound) st.lowerBound = true;
      if (kernelSource) st.kernelSource = kernelSource;
      if (site && !sites.has(siteKey(site))) sites.set(siteKey(site), { ...site, hits: 0 });
    }
    for (const probe of probes) {
      const n = s.snapshot.hits[probe] ?? 0;
      st.hits += n;
      st.byHost[s.host] = (st.byHost[s.host] ?? 0) + n;
      for (const a of s.snapshot.sites[probe] ?? []) {
        const row = sites.get(siteKey(a.site));
        if (row) row.hits += a.hits;
        else sites.set(siteKey(a.site), { ...a.site, hits: a.hits });
      }
      st.lastHits.push(...(s.snapshot.last[probe] ?? []).map((h) => lastHitOf(s.host, h)));
      const lat = s.snapshot.latency[probe];
      if (lat) st.latency = mergeLatency(st.latency, lat);
    }
  }
  st.bySite = [...sites.values()];
  // Timestamps of one host are comparable; across hosts the order is only approximate (separate clocks).
  st.lastHits.sort((a, b) => a.ts - b.ts);
  if (st.lastHits.length > keepLast) st.lastHits = st.lastHits.slice(-keepLast);
  return st;
}

/** Latency is recorded under the probe of a pair's entry: a "Latency" probe set finds it on either of its specs. */
export function latencyForSpecs(specs: readonly string[], sessions: readonly SessionView[]): Latency | undefined {
  let best: Latency | undefined;
  for (const spec of specs) {
    const l = statsForSpec(spec, sessions).latency;
    if (l && (!best || l.count > best.count)) best = l;
  }
  return best;
}

// Many targets at once: one TraceSession per host with a concurrency cap on connecting/arming, per-host
// failures reported without stopping the others, summaries merged for the CLI's last line.
import { siteKey } from '../../shared/site';
import { addRows, sortRows } from './keys';
import type { Target } from '../target/target';
import { TraceSession, type SessionOptions, type SessionSummary } from './traceSession';
import { nameRecord } from '../../shared/names';
import { latencySummary, mergeLatency, type Latency } from './latency';

export interface HostOutcome {
  host: string;
  session?: TraceSession;
  error?: Error;
}

export async function startAll(
  hosts: string[],
  connect: (host: string) => Promise<Target>,
  opts: Omit<SessionOptions, 'target'>,
  concurrency = 8,
): Promise<HostOutcome[]> {
  const out: HostOutcome[] = hosts.map((host) => ({ host }));
  let next = 0;
  const worker = async () => {
    while (next < hosts.length) {
      const i = next++;
      let target: Target | undefined;
      try {
        target = await connect(hosts[i]);
        out[i].session = await TraceSession.start({ ...opts, target });
      } catch (e) {
        out[i].error = e instanceof Error ? e : new Error(String(e));
        await target?.close().catch(() => undefined);
      }
    }
  };
  await Promise.all(Array.from({ length: Math.min(concurrency, hosts.length) }, worker));
  return out;
}

/**
 * The sessions' summaries added up over the hosts: counts, lost, kernel counts and per-site counts add up
 * (`mismatch` too; each host with one has it in `hosts`); a latency is every host's calls together (latency.ts's one
 * merge), its percentiles read from them, so with one host this is that host's figures.
 */
export interface MergedSummary extends Pick<
  SessionSummary,
  'hits' | 'lost' | 'missed' | 'mismatch' | 'kernelHits' | 'latency' | 'sites' | 'aggregated' | 'keys'
> {
  /** In-kernel aggregation: probe → hits per thread id on each host. */
  pids?: Record<string, Array<{ host: string; pid: number; hits: number }>>;
  /** Per host: whether it ended as asked, why not, its mismatch, and the stream it read (ring-buffer pages or text). */
  hosts: Record<string, { ok: boolean; error?: string; mismatch?: number; stream?: 'raw' | 'text' }>;
  /** Records discarded because their binary was written over while armed (absent when none). */
  discarded?: number;
  /** Why the session did not end as asked (a host's agent or connection gone, a signal): each host's sentence. */
  error?: string;
}

export function mergeSummaries(outcomes: Array<{ host: string; summary?: SessionSummary; error?: Error }>): MergedSummary {
  const m: MergedSummary = {
    hits: nameRecord(),
    lost: 0,
    mismatch: 0,
    kernelHits: nameRecord(),
    latency: nameRecord(),
    sites: nameRecord(),
    hosts: nameRecord(),
  };
  const severalHosts = outcomes.filter((o) => o.summary).length > 1;
  const siteIndex: Record<string, Map<string, MergedSummary['sites'][string][number]>> = nameRecord();
  const timings = new Map<string, Latency>();
  for (const o of outcomes) {
    m.hosts[o.host] = o.error ? { ok: false, error: o.error.message } : { ok: true };
    if (o.summary?.stream) m.hosts[o.host].stream = o.summary.stream;
    if (o.error && o.summary) m.error = m.error ? `${m.error}; ${o.host}: ${o.error.message}` : `${o.host}: ${o.error.message}`;
    const s = o.summary;
    if (!s) continue;
    if (s.aggregated) m.aggregated = s.aggregated;
    for (const [probe, list] of Object.entries(s.pids ?? {}))
      (m.pids ??= nameRecord())[probe] = [...(m.pids[probe] ?? []), ...list.map((x) => ({ host: o.host, pid: x.pid, hits: x.hits }))];
    for (const [k, v] of Object.entries(s.hits)) m.hits[k] = (m.hits[k] ?? 0) + v;
    for (const [probe, byKey] of Object.entries(s.keys ?? {}))
      for (const [key, rows] of Object.entries(byKey)) {
        const into = (((m.keys ??= nameRecord())[probe] ??= nameRecord())[key] ??= []);
        // Process and thread ids are the host's own: over several hosts a row says whose (`HOST:ID`).
        addRows(into, severalHosts && (key === 'pid' || key === 'tid') ? rows.map((r) => ({ ...r, value: `${o.host}:${r.value}` })) : rows);
        sortRows({ log2: key.endsWith('.log2') }, into);
      }
    for (const [k, v] of Object.entries(s.kernelHits)) m.kernelHits[k] = (m.kernelHits[k] ?? 0) + v;
    m.lost += s.lost;
    for (const [k, v] of Object.entries(s.missed ?? {})) (m.missed ??= nameRecord())[k] = (m.missed[k] ?? 0) + v;
    if (s.discarded) m.discarded = (m.discarded ?? 0) + s.discarded;
    if (s.mismatch) {
      m.mismatch += s.mismatch;
      m.hosts[o.host].mismatch = s.mismatch;
    }
    for (const [probe, list] of Object.entries(s.sites ?? {})) {
      const into = (m.sites[probe] ??= []);
      // By key, not by a search of the list: a probe of 4,000 sites took 0.7 s to merge with one.
      const byKey = (siteIndex[probe] ??= new Map());
      for (const sc of list) {
        const key = siteKey(sc.site);
        const same = byKey.get(key);
        if (same) same.hits += sc.hits;
        else {
          const row = { site: sc.site, hits: sc.hits };
          byKey.set(key, row);
          into.push(row);
        }
      }
    }
    for (const [k, v] of Object.entries(s.timings)) timings.set(k, mergeLatency(timings.get(k), v));
  }
  for (const [k, v] of timings) m.latency[k] = latencySummary(v);
  return m;
}

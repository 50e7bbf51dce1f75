// Many targets at once: one TraceSession per host with a concurrency cap on connecting/arming, per-host
// failures reported without stopping the others, summaries merged for the CLI's last line.
import type { Target } from '../target/target';
import { TraceSession, type SessionOptions, type SessionSummary } from './traceSession';

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

export interface MergedSummary {
  hits: Record<string, number>;
  lost: number;
  /** The hosts' mismatches added up; each host with one has it in `hosts` too. */
  mismatch: number;
  kernelHits: Record<string, number>;
  latency: Record<string, { p50: number; p90: number; p99: number; max: number }>;
  hosts: Record<string, { ok: boolean; error?: string; mismatch?: number }>;
  /** Records discarded because their binary was written over while armed (absent when none). */
  discarded?: number;
  /** Why the session did not end as asked (a host's agent or connection gone, a signal): each host's sentence. */
  error?: string;
}

export function mergeSummaries(outcomes: Array<{ host: string; summary?: SessionSummary; error?: Error }>): MergedSummary {
  const m: MergedSummary = { hits: {}, lost: 0, mismatch: 0, kernelHits: {}, latency: {}, hosts: {} };
  for (const o of outcomes) {
    m.hosts[o.host] = o.error ? { ok: false, error: o.error.message } : { ok: true };
    if (o.error && o.summary) m.error = m.error ? `${m.error}; ${o.host}: ${o.error.message}` : `${o.host}: ${o.error.message}`;
    const s = o.summary;
    if (!s) continue;
    for (const [k, v] of Object.entries(s.hits)) m.hits[k] = (m.hits[k] ?? 0) + v;
    for (const [k, v] of Object.entries(s.kernelHits)) m.kernelHits[k] = (m.kernelHits[k] ?? 0) + v;
    m.lost += s.lost;
    if (s.discarded) m.discarded = (m.discarded ?? 0) + s.discarded;
    if (s.mismatch) {
      m.mismatch += s.mismatch;
      m.hosts[o.host].mismatch = s.mismatch;
    }
    // Percentiles do not add up across hosts; with several hosts the worst host's figures are reported.
    for (const [k, v] of Object.entries(s.latency)) if (!m.latency[k] || v.p99 > m.latency[k].p99) m.latency[k] = v;
  }
  return m;
}

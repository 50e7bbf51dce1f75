// The one place a session's hits are counted, bucketed and paired: the CLI summary, the editor's lenses and hovers,
// and the live panel all read these numbers. In memory bounded by the number of probes and sites, never by session
// length: counts per probe (a hit's `probe`: a spec's events in one function), per site of a probe and per source line,
// the last N hits of each probe and the latest of each site, and entry→return latency (paired per thread, or per
// goroutine for Go, with a bounded stack per key for recursion) per probe and per site, kept as a log2 histogram for
// display plus a log-linear one for percentiles. A session that aggregates in the kernel (hist triggers) hands its
// figures here instead (setKernel), so every view shows the same numbers and can say which path produced them.
import type { Hit, HitValue } from '../../shared/hit';
import { addCall, copyLatency, emptyLatency, fromLog2, latencySummary, type Latency, type LatencySummary } from './latency';
import { siteKey, type Site } from '../../shared/site';
import { KeyCounter, type KeySpec, type KeyTables } from './keys';
import { nameRecord } from '../../shared/names';

export interface AggregateOptions {
  /** Hits kept per probe (default 16). */
  lastN?: number;
  /** Keys hits are counted under (`--by`). */
  keys?: readonly KeySpec[];
  /** Open entries kept per thread/goroutine; deeper recursion drops the oldest (default 256). */
  maxDepth?: number;
  /** Threads/goroutines with open entries tracked at once; the least recently active is dropped (default 65536). */
  maxKeys?: number;
}

/** How entries and returns of one function pair up. */
export interface LatencyPair {
  /** The entry's tracefs event. */
  entry: string;
  /** The return event(s): Go functions get one per RET instruction. */
  exit: string | string[];
  /**
   * Argument to pair on instead of the thread: for Go the compiler adds the current g (amd64: `%r14`), since
   * goroutines migrate between threads. The argument must be fetched at entry and at every return.
   */
  by?: string;
}

/** The source line an event counts towards. */
export interface SourceLine {
  file: string;
  line: number;
}

/**
 * One site of a probe: its hits, its latest hit (none when the kernel counted them), and the latency of the calls
 * that entered through it.
 */
export type { Latency, LatencySummary };

export interface SiteAggregate {
  site: Site;
  hits: number;
  last?: Hit;
  latency?: Latency;
}

/** One site of a probe and the hits it took. */
export interface SiteCount {
  site: Site;
  hits: number;
}

export interface AggregateSummary {
  /** probe → hits */
  hits: Record<string, number>;
  /** probe → its sites that were hit, in the order they first were */
  sites: Record<string, SiteCount[]>;
  /** probe of a pair's entry → latency of its paired calls, as shown */
  latency: Record<string, LatencySummary>;
  /** The same latencies in full: what several targets' figures are merged from (see latency.ts). */
  timings: Record<string, Latency>;
  /** Where the figures were computed: "kernel" when hist triggers counted them (absent: from the streamed hits). */
  aggregated?: 'kernel';
  /** In the kernel path, probe → hits per thread id (the kernel's common_pid), most hits first. */
  pids?: Record<string, Array<{ pid: number; hits: number }>>;
  /** probe → key → hits per value (`--by`), on either path. */
  keys?: KeyTables;
}

/** What the kernel's hist triggers counted (cumulative since arming; see kernelAggregation.ts). */
export interface KernelFigures {
  /** One entry per tracefs event, point and thread. */
  counts: Array<{ event: string; point: number; probe: string; site?: Site; tid: number; hits: number }>;
  /** probe of a pair's entry → log2 buckets of its calls' latency (`[i]`: [2^i, 2^(i+1)) ns, within one bucket) */
  latency: Record<string, number[]>;
  /** Hits the kernel could not add to a full table. */
  dropped: number;
  /** probe → key → hits per value (`--by`). */
  keys?: KeyTables;
}

export interface AggregateSnapshot {
  /** probe → hits */
  hits: Record<string, number>;
  /** probe → its sites that were hit, in the order they first were */
  sites: Record<string, SiteAggregate[]>;
  /** "file:line" → hits */
  lines: Record<string, number>;
  /** probe → its last hits, oldest first */
  last: Record<string, Hit[]>;
  /** probe of a pair's entry → latency of its paired calls */
  latency: Record<string, Latency>;
  /** Returns with no open entry (probe armed mid-call, dropped by a bound, or lost events). */
  unpairedReturns: number;
  lost: number;
}

interface SiteState {
  site: Site;
  hits: number;
  last: Hit;
  latency?: Latency;
}

/** The entry side of a pair: the probe and site its latency is counted under, and the open calls per key. */
interface OpenCalls {
  probe: string;
  site?: Site;
  /** key (pid + thread or goroutine) → stack of entry timestamps, least recently active first */
  byKey: Map<string, number[]>;
}

export class Aggregates {
  private readonly lastN: number;
  private readonly maxDepth: number;
  private readonly maxKeys: number;
  private readonly hits = new Map<string, number>();
  private readonly sites = new Map<string, Map<string, SiteState>>();
  private readonly siteMemo = new WeakMap<Site, { probe: string; st: SiteState }>();
  private readonly lines = new Map<string, number>();
  private readonly last = new Map<string, Hit[]>();
  private readonly latency = new Map<string, Latency>();
  private readonly entryOf = new Map<string, LatencyPair>();
  private readonly exitOf = new Map<string, LatencyPair>();
  /** pair entry event → its open calls */
  private readonly open = new Map<string, OpenCalls>();
  private unpaired = 0;
  private lost = 0;
  private pairing: Readonly<Record<string, HitValue>> | undefined;
  private kernel: KernelFigures | undefined;
  private readonly byKey: KeyCounter;

  private readonly sourceLines = new Map<string, SourceLine>();

  constructor(lines: ReadonlyMap<string, SourceLine> = new Map(), pairs: readonly LatencyPair[] = [], opts: AggregateOptions = {}) {
    this.lastN = opts.lastN ?? 16;
    this.maxDepth = opts.maxDepth ?? 256;
    this.maxKeys = opts.maxKeys ?? 65536;
    this.byKey = new KeyCounter(opts.keys ?? []);
    this.track(lines, pairs);
  }

  /**
   * Events added while running: the source line each counts towards (by event name), and the session's pairs
   * (known ones keep their open entries; a pair that gained an event, e.g. a return added after its entry, is
   * extended).
   */
  track(lines: ReadonlyMap<string, SourceLine>, pairs: readonly LatencyPair[]): void {
    for (const [k, v] of lines) this.sourceLines.set(k, v);
    for (const p of pairs) {
      this.entryOf.set(p.entry, p);
      for (const x of Array.isArray(p.exit) ? p.exit : [p.exit]) this.exitOf.set(x, p);
    }
  }

  /**
   * Counts `hit` under its probe and site and keeps it as the probe's and the site's latest; `pairing` holds
   * arguments that only pair entries with returns (the session's hidden goroutine pointer), looked up before the
   * hit's own. Returns the entry→return latency in nanoseconds when `hit` is a return paired with its entry: the
   * one pairing every consumer of hits uses.
   */
  add(hit: Hit, pairing?: Readonly<Record<string, HitValue>>): number | undefined {
    this.pairing = pairing;
    this.hits.set(hit.probe, (this.hits.get(hit.probe) ?? 0) + 1);
    this.byKey.add(hit);
    const line = this.sourceLines.get(hit.event);
    if (line) {
      const k = `${line.file}:${line.line}`;
      this.lines.set(k, (this.lines.get(k) ?? 0) + 1);
    }
    let ring = this.last.get(hit.probe);
    if (!ring) this.last.set(hit.probe, (ring = []));
    ring.push(hit);
    if (ring.length > this.lastN) ring.shift();
    if (hit.site) {
      const st = this.siteOf(hit.probe, hit.site, hit);
      st.hits++;
      st.last = hit;
    }
    const asEntry = this.entryOf.get(hit.event);
    if (asEntry) this.enter(asEntry, hit);
    const asExit = this.exitOf.get(hit.event);
    return asExit ? this.leave(asExit, hit) : undefined;
  }

  addLost(n: number): void {
    this.lost += n;
  }

  /** The kernel's figures, now (they are cumulative: each reading replaces the last). */
  setKernel(figures: KernelFigures): void {
    this.kernel = figures;
  }

  /** The kernel's figures last handed in, if any. */
  get kernelFigures(): KernelFigures | undefined {
    return this.kernel;
  }

  /** Which path produced the figures. */
  get path(): 'kernel' | 'stream' {
    return this.kernel ? 'kernel' : 'stream';
  }

  /** The figures as the editor and the panel read them; the kernel's once it has handed them in (setKernel). */
  snapshot(): AggregateSnapshot {
    if (this.kernel) return kernelSnapshot(this.kernel);
    const sites: AggregateSnapshot['sites'] = nameRecord();
    for (const [probe, byKey] of this.sites) {
      sites[probe] = [...byKey.values()].map((st) => {
        const out: SiteAggregate = { site: st.site, hits: st.hits, last: st.last };
        if (st.latency) out.latency = copyLatency(st.latency);
        return out;
      });
    }
    const latency: AggregateSnapshot['latency'] = nameRecord();
    for (const [probe, h] of this.latency) latency[probe] = copyLatency(h);
    return {
      hits: nameRecord(this.hits),
      sites,
      lines: nameRecord(this.lines),
      last: nameRecord([...this.last].map(([k, v]) => [k, [...v]])),
      latency,
      unpairedReturns: this.unpaired,
      lost: this.lost,
    };
  }

  /**
   * The contract summary's `hits`, per-site `sites` and `latency` (ns) parts; the session adds lost, kernelHits and
   * hosts. The latency's `log2` buckets are the snapshot's, trimmed of trailing empty buckets (as the panel shows them).
   */
  summary(): AggregateSummary {
    if (this.kernel) return kernelSummary(this.kernel);
    const latency: Record<string, LatencySummary> = nameRecord();
    const timings: Record<string, Latency> = nameRecord();
    for (const [probe, h] of this.latency) {
      latency[probe] = latencySummary(h);
      timings[probe] = copyLatency(h);
    }
    const sites: Record<string, SiteCount[]> = nameRecord();
    for (const [probe, byKey] of this.sites) sites[probe] = [...byKey.values()].map((st) => ({ site: st.site, hits: st.hits }));
    const out: AggregateSummary = { hits: nameRecord(this.hits), sites, latency, timings };
    if (this.byKey.keys.length) out.keys = this.byKey.tables();
    return out;
  }

  /** A probe's site (an equal site from another object is the same site); `hit` is its first hit. */
  private siteOf(probe: string, site: Site, hit: Hit): SiteState {
    // Every hit at a point carries the point's one site object: its state is found by the object, without making
    // and hashing its key per hit.
    const memo = this.siteMemo.get(site);
    if (memo && memo.probe === probe) return memo.st;
    let byKey = this.sites.get(probe);
    if (!byKey) this.sites.set(probe, (byKey = new Map()));
    const k = siteKey(site);
    let st = byKey.get(k);
    if (!st) byKey.set(k, (st = { site, hits: 0, last: hit }));
    this.siteMemo.set(site, { probe, st });
    return st;
  }

  private key(pair: LatencyPair, hit: Hit): string | null {
    if (!pair.by) return `${hit.pid}:${hit.tid}`;
    const g = this.pairing?.[pair.by] ?? hit.args[pair.by];
    return g === null || g === undefined ? null : `${hit.pid}:g${String(g)}`;
  }

  private enter(pair: LatencyPair, hit: Hit): void {
    const key = this.key(pair, hit);
    if (key === null) return;
    let calls = this.open.get(pair.entry);
    if (!calls) this.open.set(pair.entry, (calls = { probe: hit.probe, site: hit.site, byKey: new Map() }));
    const { byKey } = calls;
    let stack = byKey.get(key);
    if (stack)
      byKey.delete(key); // re-insert: Map order is then least-recently-active first
    else stack = [];
    byKey.set(key, stack);
    stack.push(hit.ts);
    if (stack.length > this.maxDepth) stack.shift();
    if (byKey.size > this.maxKeys) byKey.delete(byKey.keys().next().value!);
  }

  private leave(pair: LatencyPair, hit: Hit): number | undefined {
    const key = this.key(pair, hit);
    const calls = this.open.get(pair.entry);
    const stack = key === null ? undefined : calls?.byKey.get(key);
    const start = stack?.pop();
    if (start === undefined) {
      this.unpaired++;
      return undefined;
    }
    if (stack!.length === 0) calls!.byKey.delete(key!);
    // The trace clock prints microseconds: round away the float noise of the subtraction.
    const ns = Math.max(0, Math.round((hit.ts - start) * 1e9));
    let h = this.latency.get(calls!.probe);
    if (!h) this.latency.set(calls!.probe, (h = emptyLatency()));
    addCall(h, ns);
    if (calls!.site) {
      const st = this.siteOf(calls!.probe, calls!.site, hit);
      addCall((st.latency ??= emptyLatency()), ns);
    }
    return ns;
  }
}

/**
 * The kernel's figures as a snapshot: counts per probe and site, latency from its log2 buckets (percentiles and the
 * maximum the upper ends of their buckets, the minimum the lower end of the first, the sum that of each call's
 * bucket's lower end: a lower bound within a factor of two), no hits to show and no per-line or per-site latency.
 */
function kernelSnapshot(k: KernelFigures): AggregateSnapshot {
  const sum = kernelSummary(k);
  const latency: AggregateSnapshot['latency'] = nameRecord();
  for (const [probe, l] of Object.entries(sum.timings)) latency[probe] = copyLatency(l);
  const sites: AggregateSnapshot['sites'] = nameRecord();
  for (const [probe, list] of Object.entries(sum.sites)) sites[probe] = list.map((s) => ({ site: s.site, hits: s.hits }));
  return { hits: sum.hits, sites, lines: nameRecord(), last: nameRecord(), latency, unpairedReturns: 0, lost: k.dropped };
}

/**
 * The summary of the kernel's figures. Its latency is log2 buckets only: a percentile and the maximum are the upper
 * end of the bucket they fall in.
 */
function kernelSummary(k: KernelFigures): AggregateSummary {
  const hits: Record<string, number> = nameRecord();
  const sites: Record<string, SiteCount[]> = nameRecord();
  const pids: Record<string, Array<{ pid: number; hits: number }>> = nameRecord();
  // Rows found by key, not by a search of the list: thousands of sites (or threads) would make it quadratic.
  const siteRows = new Map<string, SiteCount>();
  const pidRows = new Map<string, { pid: number; hits: number }>();
  for (const c of k.counts) {
    hits[c.probe] = (hits[c.probe] ?? 0) + c.hits;
    if (c.site) {
      const key = `${c.probe}\0${siteKey(c.site)}`;
      const same = siteRows.get(key);
      if (same) same.hits += c.hits;
      else {
        const row = { site: c.site, hits: c.hits };
        siteRows.set(key, row);
        (sites[c.probe] ??= []).push(row);
      }
    }
    const pidKey = `${c.probe}\0${c.tid}`;
    const p = pidRows.get(pidKey);
    if (p) p.hits += c.hits;
    else {
      const row = { pid: c.tid, hits: c.hits };
      pidRows.set(pidKey, row);
      (pids[c.probe] ??= []).push(row);
    }
  }
  for (const list of Object.values(pids)) list.sort((a, b) => b.hits - a.hits || a.pid - b.pid);
  const latency: Record<string, LatencySummary> = nameRecord();
  const timings: Record<string, Latency> = nameRecord();
  for (const [probe, buckets] of Object.entries(k.latency)) {
    const l = fromLog2(buckets);
    // No call timed yet: no latency, as when streaming.
    if (l.count === 0) continue;
    latency[probe] = latencySummary(l);
    timings[probe] = l;
  }
  const out: AggregateSummary = { hits, sites, latency, timings, aggregated: 'kernel', pids };
  if (k.keys) out.keys = k.keys;
  return out;
}

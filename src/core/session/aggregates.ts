// Running aggregates over a hit stream, in memory bounded by the number of probes and arguments, never by
// session length: counts per probe and per source line, the last N values of each argument, and entry→return
// latency (paired per thread, or per goroutine for Go, with a bounded stack per key for recursion) kept as a
// log2 histogram for display plus a log-linear one for percentiles.
import { log2Bucket, type Hit, type HitValue } from '../../shared/hit';

export interface AggregateOptions {
  /** Values kept per argument (default 16). */
  lastN?: number;
  /** Open entries kept per thread/goroutine; deeper recursion drops the oldest (default 256). */
  maxDepth?: number;
  /** Threads/goroutines with open entries tracked at once; the least recently active is dropped (default 65536). */
  maxKeys?: number;
}

/** How entries and returns of one function pair up. */
export interface LatencyPair {
  entry: string;
  /** Return probe name(s): Go functions get one probe per RET instruction. */
  exit: string | string[];
  /**
   * Argument to pair on instead of the thread: for Go the compiler adds the current g (amd64: `%r14`), since
   * goroutines migrate between threads. The argument must be fetched at entry and at every return.
   */
  by?: string;
}

export interface ProbeSite {
  file: string;
  line: number;
}

export interface LatencyStats {
  count: number;
  /** Nanoseconds (the trace clock prints microseconds, so values are multiples of 1000). */
  p50: number;
  p90: number;
  p99: number;
  max: number;
  min: number;
  /** log2 buckets: `log2[i]` counts latencies in [2^i, 2^(i+1)) ns (`log2[0]` also holds 0). */
  log2: number[];
}

export interface ArgSample {
  ts: number;
  value: HitValue;
  /** The value is only the beginning of a longer string (see Hit.cut). */
  cut?: true;
}

export interface AggregateSnapshot {
  hits: Record<string, number>;
  lines: Record<string, number>;
  lastValues: Record<string, Record<string, ArgSample[]>>;
  latency: Record<string, LatencyStats>;
  /** Returns with no open entry (probe armed mid-call, dropped by a bound, or lost events). */
  unpairedReturns: number;
  lost: number;
}

const SUB = 16; // sub-buckets per power of two: percentiles within ~6%

class Histogram {
  readonly log2 = new Array<number>(64).fill(0);
  private readonly fine = new Map<number, number>();
  count = 0;
  max = 0;
  min = Number.POSITIVE_INFINITY;

  add(ns: number): void {
    const v = Math.max(0, Math.round(ns));
    this.count++;
    if (v > this.max) this.max = v;
    if (v < this.min) this.min = v;
    this.log2[log2Bucket(v)]++;
    const key = fineIndex(v);
    this.fine.set(key, (this.fine.get(key) ?? 0) + 1);
  }

  quantile(q: number): number {
    if (this.count === 0) return 0;
    const rank = Math.ceil(q * this.count);
    let seen = 0;
    for (const k of [...this.fine.keys()].sort((a, b) => a - b)) {
      seen += this.fine.get(k)!;
      if (seen >= rank) return Math.min(this.max, Math.max(this.min, fineValue(k)));
    }
    return this.max;
  }

  stats(): LatencyStats {
    return {
      count: this.count,
      p50: this.quantile(0.5),
      p90: this.quantile(0.9),
      p99: this.quantile(0.99),
      max: this.max,
      min: this.count ? this.min : 0,
      log2: [...this.log2],
    };
  }
}

/** Values below SUB get exact buckets; above, each octave is split in SUB equal parts. */
function fineIndex(v: number): number {
  if (v < SUB) return v;
  const e = Math.floor(Math.log2(v));
  const shift = e - Math.log2(SUB);
  return (shift + 1) * SUB + Math.floor(v / 2 ** shift) - SUB;
}

/** Midpoint of a fine bucket. */
function fineValue(k: number): number {
  if (k < SUB) return k;
  const shift = Math.floor(k / SUB) - 1;
  const lo = (SUB + (k % SUB)) * 2 ** shift;
  return lo + (2 ** shift - 1) / 2;
}

export class Aggregates {
  private readonly lastN: number;
  private readonly maxDepth: number;
  private readonly maxKeys: number;
  private readonly hits = new Map<string, number>();
  private readonly lines = new Map<string, number>();
  private readonly last = new Map<string, Map<string, ArgSample[]>>();
  private readonly latency = new Map<string, Histogram>();
  private readonly entryOf = new Map<string, LatencyPair>();
  private readonly exitOf = new Map<string, LatencyPair>();
  /** pair entry name → key (pid + thread or goroutine) → stack of entry timestamps. */
  private readonly open = new Map<string, Map<string, number[]>>();
  private unpaired = 0;
  private lost = 0;
  private pairing: Readonly<Record<string, HitValue>> | undefined;

  private readonly sites = new Map<string, ProbeSite>();

  constructor(sites: ReadonlyMap<string, ProbeSite> = new Map(), pairs: readonly LatencyPair[] = [], opts: AggregateOptions = {}) {
    this.lastN = opts.lastN ?? 16;
    this.maxDepth = opts.maxDepth ?? 256;
    this.maxKeys = opts.maxKeys ?? 65536;
    this.track(sites, pairs);
  }

  /**
   * Probes added while running: their source sites, and the session's pairs (known ones keep their open
   * entries; a pair that gained a probe, e.g. a return added after its entry, is extended).
   */
  track(sites: ReadonlyMap<string, ProbeSite>, pairs: readonly LatencyPair[]): void {
    for (const [k, v] of sites) this.sites.set(k, v);
    for (const p of pairs) {
      this.entryOf.set(p.entry, p);
      for (const x of Array.isArray(p.exit) ? p.exit : [p.exit]) this.exitOf.set(x, p);
      if (!this.open.has(p.entry)) this.open.set(p.entry, new Map());
    }
  }

  /**
   * Counts `hit` and remembers its arguments; `pairing` holds arguments that only pair entries with returns
   * (the session's hidden goroutine pointer), looked up before the hit's own. Returns the entry→return latency
   * in nanoseconds when `hit` is a return paired with its entry: the one pairing every consumer of hits uses.
   */
  add(hit: Hit, pairing?: Readonly<Record<string, HitValue>>): number | undefined {
    this.pairing = pairing;
    this.hits.set(hit.probe, (this.hits.get(hit.probe) ?? 0) + 1);
    const site = this.sites.get(hit.probe);
    if (site) {
      const k = `${site.file}:${site.line}`;
      this.lines.set(k, (this.lines.get(k) ?? 0) + 1);
    }
    this.remember(hit);
    const asEntry = this.entryOf.get(hit.probe);
    if (asEntry) this.enter(asEntry, hit);
    const asExit = this.exitOf.get(hit.probe);
    return asExit ? this.leave(asExit, hit) : undefined;
  }

  addLost(n: number): void {
    this.lost += n;
  }

  snapshot(): AggregateSnapshot {
    const lastValues: AggregateSnapshot['lastValues'] = {};
    for (const [probe, args] of this.last) {
      lastValues[probe] = {};
      for (const [name, ring] of args) lastValues[probe][name] = [...ring];
    }
    const latency: AggregateSnapshot['latency'] = {};
    for (const [probe, h] of this.latency) latency[probe] = h.stats();
    return {
      hits: Object.fromEntries(this.hits),
      lines: Object.fromEntries(this.lines),
      lastValues,
      latency,
      unpairedReturns: this.unpaired,
      lost: this.lost,
    };
  }

  /** The contract summary's `hits` and `latency` (ns) parts; the session adds lost, kernelHits and hosts. */
  summary(): { hits: Record<string, number>; latency: Record<string, { p50: number; p90: number; p99: number; max: number }> } {
    const latency: Record<string, { p50: number; p90: number; p99: number; max: number }> = {};
    for (const [probe, h] of this.latency) {
      latency[probe] = {
        p50: Math.round(h.quantile(0.5)),
        p90: Math.round(h.quantile(0.9)),
        p99: Math.round(h.quantile(0.99)),
        max: h.max,
      };
    }
    return { hits: Object.fromEntries(this.hits), latency };
  }

  private remember(hit: Hit): void {
    let args = this.last.get(hit.probe);
    if (!args) this.last.set(hit.probe, (args = new Map()));
    const put = (name: string, value: HitValue) => {
      let ring = args!.get(name);
      if (!ring) args!.set(name, (ring = []));
      ring.push(hit.cut?.includes(name) ? { ts: hit.ts, value, cut: true } : { ts: hit.ts, value });
      if (ring.length > this.lastN) ring.shift();
    };
    for (const [name, value] of Object.entries(hit.args)) put(name, value);
    if (hit.retval !== undefined) put('retval', hit.retval);
  }

  private key(pair: LatencyPair, hit: Hit): string | null {
    if (!pair.by) return `${hit.pid}:${hit.tid}`;
    const g = this.pairing?.[pair.by] ?? hit.args[pair.by];
    return g === null || g === undefined ? null : `${hit.pid}:g${String(g)}`;
  }

  private enter(pair: LatencyPair, hit: Hit): void {
    const key = this.key(pair, hit);
    if (key === null) return;
    const byKey = this.open.get(pair.entry)!;
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
    const stack = key === null ? undefined : this.open.get(pair.entry)!.get(key);
    const start = stack?.pop();
    if (start === undefined) {
      this.unpaired++;
      return undefined;
    }
    if (stack!.length === 0) this.open.get(pair.entry)!.delete(key!);
    let h = this.latency.get(pair.entry);
    if (!h) this.latency.set(pair.entry, (h = new Histogram()));
    // The trace clock prints microseconds: round away the float noise of the subtraction.
    const ns = Math.max(0, Math.round((hit.ts - start) * 1e9));
    h.add(ns);
    return ns;
  }
}

// One latency figure for every surface (the CLI summary, the lens, the hover, the Probes view and the panel): one
// type, one merge, one `since`, percentiles derived only when shown, so several targets' calls give one p50 wherever
// it is read. Tests: test/unit/core/session/latency.test.ts
import { log2Bucket } from '../../shared/hit';

/** Sub-buckets per power of two of the log-linear buckets: percentiles within about 6%. */
const SUB = 16;

/** The latencies of some calls, in nanoseconds. */
export interface Latency {
  count: number;
  /** Sum of the latencies (for a mean). */
  sum: number;
  min: number;
  max: number;
  /** log2 buckets: `log2[i]` counts latencies in [2^i, 2^(i+1)) ns (`log2[0]` also holds 0). */
  log2: number[];
  /**
   * Log-linear buckets (index → calls) that percentiles are read from; empty where the kernel timed the calls (hist
   * triggers keep log2 buckets only).
   */
  fine: Map<number, number>;
}

/** Percentiles of a latency, ns, as shown. */
export interface Percentiles {
  p50: number;
  p90: number;
  p99: number;
}

export function emptyLatency(): Latency {
  return { count: 0, sum: 0, min: Number.POSITIVE_INFINITY, max: 0, log2: new Array<number>(64).fill(0), fine: new Map() };
}

/** Counts one call of `ns` nanoseconds into `l`. */
export function addCall(l: Latency, ns: number): void {
  const v = Math.max(0, Math.round(ns));
  l.count++;
  l.sum += v;
  if (v > l.max) l.max = v;
  if (v < l.min) l.min = v;
  const b = log2Bucket(v);
  l.log2[b] = (l.log2[b] ?? 0) + 1;
  const k = fineIndex(v);
  l.fine.set(k, (l.fine.get(k) ?? 0) + 1);
}

/**
 * The latency the kernel's log2 buckets give: the maximum is the upper end of the highest bucket, the minimum the
 * lower end of the first, the sum that of each call's bucket's lower end (a lower bound within a factor of two).
 */
export function fromLog2(buckets: readonly number[]): Latency {
  const log2 = [...buckets];
  const count = log2.reduce((a, b) => a + b, 0);
  const lo = log2.findIndex((n) => n > 0);
  let top = log2.length;
  while (top > 0 && !log2[top - 1]) top--;
  return { count, sum: log2.reduce((s, n, i) => s + n * 2 ** i, 0), min: lo < 0 ? 0 : 2 ** lo, max: 2 ** top, log2, fine: new Map() };
}

/** `a` and `b`'s calls together (neither is changed). */
export function mergeLatency(a: Latency | undefined, b: Latency): Latency {
  if (!a) return copyLatency(b);
  const log2 = a.log2.slice();
  b.log2.forEach((n, i) => (log2[i] = (log2[i] ?? 0) + n));
  const fine = new Map(a.fine);
  for (const [k, n] of b.fine) fine.set(k, (fine.get(k) ?? 0) + n);
  return { count: a.count + b.count, sum: a.sum + b.sum, min: Math.min(a.min, b.min), max: Math.max(a.max, b.max), log2, fine };
}

export const copyLatency = (l: Latency): Latency => ({ ...l, log2: [...l.log2], fine: new Map(l.fine) });

/**
 * The calls of `now` that `base` (an earlier reading of the same latency) did not have; undefined when none. Counts,
 * sums and buckets subtract exactly; the maximum is exact when it was reached since, and otherwise bounded by the top
 * of the highest bucket that gained a call; the minimum likewise by the bottom of the lowest.
 */
export function latencySince(now: Latency, base: Latency | undefined): Latency | undefined {
  if (!base) return now.count > 0 ? copyLatency(now) : undefined;
  const count = now.count - base.count;
  if (count <= 0) return undefined;
  const log2 = now.log2.map((n, i) => n - (base.log2[i] ?? 0));
  const fine = new Map<number, number>();
  for (const [k, n] of now.fine) {
    const d = n - (base.fine.get(k) ?? 0);
    if (d > 0) fine.set(k, d);
  }
  let top = log2.length - 1;
  while (top > 0 && log2[top] <= 0) top--;
  let bottom = 0;
  while (bottom < top && log2[bottom] <= 0) bottom++;
  return {
    count,
    sum: now.sum - base.sum,
    min: Math.max(now.min, bottom === 0 ? 0 : 2 ** bottom),
    max: Math.min(now.max, 2 ** (top + 1) - 1),
    log2,
    fine,
  };
}

/**
 * The latencies at or below which the fractions `qs` (ascending) of the calls fall. From the log-linear buckets when
 * every call is in them; otherwise (the kernel timed some) the upper end of the log2 bucket each falls in.
 */
function quantiles(l: Latency, qs: readonly number[]): number[] {
  if (l.count === 0) return qs.map(() => 0);
  let inFine = 0;
  for (const n of l.fine.values()) inFine += n;
  const buckets: Array<[number, number]> =
    inFine === l.count
      ? [...l.fine].sort((a, b) => a[0] - b[0]).map(([k, n]) => [Math.min(l.max, Math.max(l.min, fineValue(k))), n])
      : l.log2.flatMap((n, i) => (n > 0 ? [[2 ** (i + 1), n] as [number, number]] : []));
  const out: number[] = [];
  let seen = 0;
  let i = 0;
  for (const q of qs) {
    const rank = Math.ceil(q * l.count);
    while (i < buckets.length && seen + buckets[i][1] < rank) seen += buckets[i++][1];
    out.push(i < buckets.length ? buckets[i][0] : l.max);
  }
  return out;
}

/** The latency at or below which a fraction `q` of the calls fall (see quantiles). */
export function quantile(l: Latency, q: number): number {
  return quantiles(l, [q])[0];
}

export function percentiles(l: Latency): Percentiles {
  const [p50, p90, p99] = quantiles(l, [0.5, 0.9, 0.99]);
  return { p50, p90, p99 };
}

/** The log2 buckets without their trailing empty ones, as the summary and the panel show them. */
export function trimmedLog2(l: Latency): number[] {
  let n = l.log2.length;
  while (n > 0 && l.log2[n - 1] === 0) n--;
  return l.log2.slice(0, n);
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

/** A probe's latency as the summary reports it (ns): percentiles, and the log2 buckets the panel and hover draw. */
export interface LatencySummary {
  count: number;
  p50: number;
  p90: number;
  p99: number;
  max: number;
  /** `log2[i]` counts calls that took [2^i, 2^(i+1)) ns (`log2[0]` also holds 0); no trailing empty buckets. */
  log2: number[];
}

export function latencySummary(l: Latency): LatencySummary {
  const p = percentiles(l);
  return { count: l.count, p50: Math.round(p.p50), p90: Math.round(p.p90), p99: Math.round(p.p99), max: l.max, log2: trimmedLog2(l) };
}

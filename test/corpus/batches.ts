// The corpus oracles check every function a workload calls, not only those one trace's bounds hold: the rest are
// traced in batches, each within the bounds, and every batch's counts are judged by the same rule.

/** Whether the batches beyond a test's first run go too (`PROBELENS_CORPUS_EVERY=1`; redis's always do). */
export const EVERY = process.env.PROBELENS_CORPUS_EVERY === '1';

/**
 * `names` in runs of at most `maxSites` sites and `maxHits` expected hits each, in the order given (a name whose
 * hits alone exceed the bound runs alone).
 */
export function batches(
  names: readonly string[],
  sitesOf: (n: string) => number,
  hitsOf: (n: string) => number,
  maxSites: number,
  maxHits: number,
): string[][] {
  const out: string[][] = [];
  let cur: string[] = [];
  let sites = 0;
  let hits = 0;
  for (const n of names) {
    if (cur.length > 0 && (sites + sitesOf(n) > maxSites || hits + hitsOf(n) > maxHits)) {
      out.push(cur);
      cur = [];
      sites = 0;
      hits = 0;
    }
    cur.push(n);
    sites += sitesOf(n);
    hits += hitsOf(n);
  }
  if (cur.length > 0) out.push(cur);
  return out;
}

/** What the batches found, function by function: exact, a lower bound named before tracing, not called, or wrong. */
export class Tally {
  exact = 0;
  lowerBound = 0;
  /** Called in the run that chose it, not in its batch's: nothing to compare. */
  notCalled = 0;
  readonly over: string[] = [];
  readonly off: string[] = [];
  batches = 0;

  add(
    names: readonly string[],
    got: ReadonlyMap<string, number>,
    expected: ReadonlyMap<string, number>,
    lowerBound: ReadonlySet<string>,
  ): void {
    this.batches++;
    for (const n of names) {
      const g = got.get(n) ?? 0;
      const e = expected.get(n) ?? 0;
      const line = `${n}: received ${g}, the program counted ${e}`;
      if (g > e) this.over.push(line);
      else if (e === 0) this.notCalled++;
      else if (lowerBound.has(n)) this.lowerBound++;
      else if (g !== e) this.off.push(line);
      else this.exact++;
    }
  }

  summary(of: number): string {
    return (
      `the other ${of} candidates in ${this.batches} batches: ${this.exact} exact, ${this.lowerBound} named a lower bound before tracing, ` +
      `${this.off.length} short unsaid, ${this.over.length} over, ${this.notCalled} not called in their batch's run`
    );
  }
}

/**
 * Waits until `count()` (the hits received so far) has not grown for `quiet` polls of 500 ms, at most `most` polls:
 * the stream lags the program, and the session's stop delivers what is left.
 */
export async function settle(count: () => number, quiet = 1, most = 120): Promise<void> {
  for (let last = count(), still = 0, i = 0; i < most && still < quiet; i++) {
    await new Promise((r) => setTimeout(r, 500));
    const now = count();
    still = now === last ? still + 1 : 0;
    last = now;
  }
}

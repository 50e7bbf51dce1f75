// Which copies of which functions hold an address: every site's code ranges in one list sorted by start, for
// line probes (the line table says which line an address is; only the sites say which copy of a function runs
// there). Copies nest (an inlined copy lies inside its caller's code), so a lookup returns all that contain it.
import type { FunctionSite, IndexedFunction } from './model';
import { addressNumber } from '../dwarf/format';

export interface CopyAt {
  fn: IndexedFunction;
  site: FunctionSite;
  /** Size of the range holding the address: the innermost copy has the smallest. */
  span: number;
}

export class CodeMap {
  private readonly lo: Float64Array;
  private readonly hi: Float64Array;
  /** Highest end among ranges 0..i: a backward scan stops once nothing earlier can reach the address. */
  private readonly reach: Float64Array;
  private readonly owner: Array<{ fn: IndexedFunction; site: FunctionSite }>;

  constructor(fns: readonly IndexedFunction[]) {
    const all: Array<[number, number, IndexedFunction, FunctionSite]> = [];
    for (const fn of fns) {
      for (const site of fn.sites) {
        const r =
          site.ranges ??
          (site.kind === 'entry' && fn.address === site.address && fn.size > 0
            ? [addressNumber(fn.address), addressNumber(fn.address) + fn.size]
            : []);
        for (let i = 0; i + 1 < r.length; i += 2) if (r[i + 1] > r[i]) all.push([r[i], r[i + 1], fn, site]);
      }
    }
    all.sort((a, b) => a[0] - b[0] || b[1] - a[1]);
    this.lo = Float64Array.from(all, (x) => x[0]);
    this.hi = Float64Array.from(all, (x) => x[1]);
    this.reach = new Float64Array(all.length);
    let m = -Infinity;
    all.forEach((x, i) => (this.reach[i] = m = Math.max(m, x[1])));
    this.owner = all.map((x) => ({ fn: x[2], site: x[3] }));
  }

  /** Every copy whose code contains `address`, innermost (smallest range) first. */
  at(address: number): CopyAt[] {
    let lo = 0;
    let hi = this.lo.length;
    while (lo < hi) {
      const mid = (lo + hi) >> 1;
      if (this.lo[mid] <= address) lo = mid + 1;
      else hi = mid;
    }
    const out: CopyAt[] = [];
    for (let i = lo - 1; i >= 0 && this.reach[i] > address; i--) {
      if (this.hi[i] > address) out.push({ ...this.owner[i], span: this.hi[i] - this.lo[i] });
    }
    return out.sort((a, b) => a.span - b.span);
  }
}

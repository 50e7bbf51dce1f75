// The check `define` runs on the sites it arms, whatever placed them (inlinedEntries.ts, or DWARF's entry pcs where
// those could not be proved): counts never exceed calls, so no armed site of a function may run again within the
// call another armed site began.
// Tests: test/unit/core/probes/inlinedEntries.test.ts, test/corpus/one-call-one-site.test.ts
import { build, SINK, Unavailable, type Graph } from './inlinedExits';
import type { InlinedEntryQuery } from './inlinedEntries';

export interface TwoSitesOneCall {
  /** An armed site… */
  from: bigint;
  /** …from which this armed site is reached without the call ending. */
  to: bigint;
}

/**
 * The check `define` runs on what it arms (independent of how the entries were placed): no armed site of the
 * function is reachable from another armed site (or from itself, around a loop) without passing a call-ending
 * edge. Control stays inside one call while it stays in the code of the copy the site is in (the calls it makes
 * return into it), and when it passes nothing but jumps into another copy's site; a return, and any edge out of that code ends the call as far as this check goes (the
 * most lenient reading of the caller's code scheduled in between, so what it finds is certain). The holder's
 * code is decoded as for the entries; undefined when it cannot be.
 */
export function twoSitesOneCall(
  q: InlinedEntryQuery,
  armed: ReadonlyArray<{ address: bigint; copy: number }>,
): TwoSitesOneCall[] | undefined {
  if (q.arch !== 'x86_64') return undefined;
  let g: Graph;
  try {
    g = build(q);
  } catch (e) {
    if (e instanceof Unavailable) return undefined;
    throw e;
  }
  const { insns, succ } = g;
  const inCopy = (n: number, k: number) => {
    const a = insns[n].address;
    return q.copies[k].ranges.some(([lo, hi]) => a >= lo && a < hi);
  };
  // A copy nested in another (a recursive call inlined into the function's own copy) lies wholly inside it.
  const nested = (inner: number, outer: number) =>
    q.copies[inner].ranges.length > 0 &&
    q.copies[inner].ranges.every(([lo, hi]) => q.copies[outer].ranges.some(([lo2, hi2]) => lo >= lo2 && hi <= hi2));
  const sites = new Map<number, number[]>();
  for (const x of armed) {
    const n = g.at.get(x.address);
    if (n !== undefined) sites.set(n, [...(sites.get(n) ?? []), x.copy]);
  }
  const out: TwoSitesOneCall[] = [];
  const found = (s: number, t: number) => {
    if (!out.some((o) => o.from === insns[s].address && o.to === insns[t].address))
      out.push({ from: insns[s].address, to: insns[t].address });
  };
  for (const [s, copies] of sites) {
    for (const k of copies) {
      // Within the code of the site's own copy (an entry pc outside its copy's code: from there on).
      const seen = new Uint8Array(insns.length);
      const work = [s];
      while (work.length) {
        const n = work.pop()!;
        for (const t of succ[n]) {
          if (t === SINK || seen[t] || !inCopy(t, k)) continue;
          seen[t] = 1;
          const there = sites.get(t);
          if (there?.some((c) => c === k || !nested(c, k))) found(s, t);
          else work.push(t);
        }
      }
    }
    // Into another copy's site by nothing but jumps: the same call.
    for (let n = s, i = 0; i < 64 && (insns[n].kind === 'jmp' || insns[n].kind === 'nop'); i++) {
      const t = succ[n][0];
      if (t === undefined || t === SINK) break;
      if (sites.has(t)) {
        found(s, t);
        break;
      }
      n = t;
    }
  }
  return out;
}

// Shapes of a function's inlined copies on the control flow of the code that holds them, which the entry analysis
// (inlinedEntries.ts) asks about: code that runs again with no entry between, copy code that begins the copy again
// after the caller's code (an unrolled loop under one DIE), and an entry pc that only runs into another.
// Tests: test/unit/core/probes/inlinedEntries.test.ts, test/unit/core/probes/inlinedEntries.placement.test.ts,
// test/unit/core/probes/inlinedEntries.loops.test.ts
import { SINK, type Graph } from './inlinedExits';

/** The copies' entry pcs, and the source line of an address (without it, no copy is taken to begin again). */
export interface CopiesOnLines {
  copies: ReadonlyArray<{ entry: bigint }>;
  lineOf?: (address: bigint) => string | undefined;
  /** The holder's code, to compare an instruction with a copy's first one (see sameOperation). */
  host?: ReadonlyArray<{ start: bigint; bytes: Uint8Array }>;
}

/**
 * Whether the instructions at `a` and `b` (both `len` bytes) do the same thing: the same bytes, or the same bytes but
 * for one 32-bit displacement that makes both address the same place relative to their own next instruction.
 */
function sameOperation(host: NonNullable<CopiesOnLines['host']>, a: bigint, b: bigint, len: number): boolean {
  const at = (x: bigint) => {
    const r = host.find((h) => x >= h.start && x + BigInt(len) <= h.start + BigInt(h.bytes.length));
    return r && r.bytes.subarray(Number(x - r.start), Number(x - r.start) + len);
  };
  const x = at(a);
  const y = at(b);
  if (!x || !y) return false;
  const diff = [...x.keys()].filter((i) => x[i] !== y[i]);
  if (diff.length === 0) return true;
  const first = diff[0];
  const last = diff[diff.length - 1];
  // The displacement's low bytes may agree (0x1db65a and 0x1db35a differ in one byte): it starts at or before the
  // first byte that differs, and spans the last.
  const d = (v: Uint8Array, i: number) => BigInt(new DataView(v.buffer, v.byteOffset + i, 4).getInt32(0, true));
  for (let i = first; i >= Math.max(0, last - 3); i--)
    if (i + 4 <= len && a + BigInt(len) + d(x, i) === b + BigInt(len) + d(y, i)) return true;
  return false;
}

/** Whether `n` can run again without a candidate running in between (a cycle through it that avoids them all). */
export function runsAgainWithoutEntry(g: Graph, n: number, probe: ReadonlyMap<number, unknown>): boolean {
  const seen = new Uint8Array(g.insns.length);
  const w = [n];
  while (w.length)
    for (const t of g.succ[w.pop()!]) {
      if (t === n) return true;
      if (t === SINK || seen[t] || probe.has(t)) continue;
      seen[t] = 1;
      w.push(t);
    }
  return false;
}

/**
 * Copy code that begins the copy again after the caller's code: it is no DWARF entry pc, its line is the line of its
 * copy's entry pc, it is entered from the caller's code only through conditional jumps (whose other path is the
 * caller's way out, as a loop's condition is), and the copy code that ran into that caller's code ran after an
 * entry of the same copy (within one iteration) and was on another line. GCC unrolled a loop around the call and
 * described both calls with one DIE: the first call ends where its code does.
 */
export function beginsAgain(
  g: Graph,
  q: CopiesOnLines,
  copyOf: Int32Array,
  inR: (n: number) => boolean,
  probe: ReadonlyMap<number, { copy: number; how: string }>,
  backEdge: (p: number, n: number) => boolean,
): Set<number> {
  const out = new Set<number>();
  const lineOf = q.lineOf;
  if (!lineOf) return out;
  const { insns, succ, pred } = g;
  const outside = (n: number) => !inR(n) && !probe.has(n);
  const entryLine = new Map<number, string | undefined>();
  const lineOfEntry = (k: number) => {
    if (!entryLine.has(k)) entryLine.set(k, lineOf(q.copies[k].entry));
    return entryLine.get(k);
  };
  // What runs after a candidate of each copy within one iteration.
  const after = new Map<number, Uint8Array>();
  const afterEntryOf = (k: number): Uint8Array => {
    let seen = after.get(k);
    if (seen) return seen;
    seen = new Uint8Array(insns.length);
    after.set(k, seen);
    const work = [...probe].filter(([, v]) => v.copy === k).map(([n]) => n);
    // A candidate found on a path (not DWARF's entry pc) counts only for what runs after it: alone, it may be the
    // set-up of the call it runs into across the caller's code (redis's lpEncodeBacklen: `mov $2,%r13d`, the
    // argument, then another copy's exit hook, then the call), which must not make that call a second one.
    for (const [n, v] of probe) if (v.copy === k && v.how === 'entry-pc') seen[n] = 1;
    while (work.length) {
      const n = work.pop()!;
      for (const t of succ[n])
        if (t !== SINK && !seen[t] && !backEdge(n, t)) {
          seen[t] = 1;
          work.push(t);
        }
    }
    return seen;
  };
  for (let t = 0; t < insns.length; t++) {
    const k = copyOf[t];
    if (!inR(t) || probe.get(t)?.how === 'entry-pc') continue;
    const line = lineOfEntry(k);
    if (line === undefined || lineOf(insns[t].address) !== line) continue;
    const fromOutside = pred[t].filter(outside);
    if (fromOutside.length === 0) continue;
    // Entered through a loop's condition; or, where the loop was unrolled whole (no test left between the calls), in
    // straight line at an instruction that does what the copy's first one does.
    const viaTest = fromOutside.every((p) => succ[p].length > 1 && succ[p].some((x) => x !== t));
    const entryAt = g.at.get(q.copies[k].entry);
    const again =
      q.host !== undefined &&
      entryAt !== undefined &&
      insns[entryAt].length === insns[t].length &&
      sameOperation(q.host, q.copies[k].entry, insns[t].address, insns[t].length);
    if (!viaTest && !again) continue;
    // The copy code that ran into this caller's code (backwards through caller's code alone, bounded).
    const left: number[] = [];
    const seen = new Set<number>(fromOutside);
    const work = [...fromOutside];
    while (work.length && seen.size < 256) {
      for (const p of pred[work.pop()!]) {
        if (seen.has(p)) continue;
        seen.add(p);
        if (outside(p)) work.push(p);
        else if (copyOf[p] === k) left.push(p);
      }
    }
    const ran = afterEntryOf(k);
    if (left.length > 0 && left.every((p) => ran[p] && lineOf(insns[p].address) !== line)) out.add(t);
  }
  return out;
}

/**
 * The candidate `e` runs into on every path without a call and without leaving the copies (GCC merged its call
 * with that one's), or undefined. Least fixpoint: an instruction qualifies once every successor is a candidate
 * other than `e` or qualifies itself; code in a loop never does.
 */
export function runsInto(
  g: Graph,
  e: number,
  probe: ReadonlyMap<number, unknown>,
  inR: (n: number) => boolean,
  isCall: (n: number) => boolean,
): number | undefined {
  const { succ, insns } = g;
  const passOnly = (n: number) => !isCall(n) && (insns[n].kind === 'jmp' || insns[n].kind === 'nop');
  const good = new Map<number, number>(); // instruction → the candidate it runs into
  const target = (n: number): number | undefined => (n !== e && probe.has(n) ? n : good.get(n));
  const settled = (n: number): number | undefined => {
    // Only control transfer: a copy whose code did anything else before reaching the other entry was a call.
    if (!passOnly(n) || succ[n].length === 0 || succ[n].includes(SINK)) return undefined;
    let into: number | undefined;
    for (const t of succ[n]) {
      const x = target(t);
      if (x === undefined || (into !== undefined && x !== into)) return undefined;
      into = x;
    }
    return into;
  };
  // Walk forward from e inside the copies, then settle backwards until nothing changes.
  const region: number[] = [];
  const seen = new Set<number>([e]);
  const work = [e];
  while (work.length) {
    const n = work.pop()!;
    region.push(n);
    if (region.length > 4096) return undefined;
    for (const t of succ[n])
      if (t !== SINK && !seen.has(t) && t !== e && !probe.has(t) && inR(t)) {
        seen.add(t);
        work.push(t);
      }
  }
  for (let changed = true; changed;) {
    changed = false;
    for (const n of region) {
      if (n === e || good.has(n)) continue;
      const x = settled(n);
      if (x !== undefined) {
        good.set(n, x);
        changed = true;
      }
    }
  }
  return settled(e);
}

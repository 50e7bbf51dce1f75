// Where calls of a function's inlined copies begin inside one function that holds them. DWARF gives each copy one
// entry pc, and that is not always where its calls begin: GCC duplicates a copy's code onto a second path (tail
// duplication) under the one DIE whose entry pc lies on the first path; it merges the code of two calls and leaves
// one DIE's entry pc as a `jmp` to the other's; it gives several DIEs one address. So, as for exits
// (inlinedExits.ts), the holder's code is decoded whole and its control flow built, every copy of the function in
// it marked, and entries placed and proved by a forward dataflow from the holder's entry of which copy's call may
// be open (or none):
// - the copies' DWARF entry pcs are the first candidates, one per address for DIEs of one code (DIEs at one address
//   whose code is disjoint are calls computed one after the other: each is armed there); an entry pc that runs by
//   jumps alone into another candidate is that call: it is not armed;
// - copy code that reaches its own copy's candidate within one iteration (argument set-up scheduled ahead) belongs
//   to no call yet. An iteration ends at a loop's back edge. Where that leaves a count a lower bound, the holder is
//   read again with iterations also ending, in a loop GCC enters at two places (irreducible: no back edge to a
//   dominator), at the edges back to the first of them (loops.ts), for set-up and for the caller's code between a
//   copy's code (below) alike, except copy code that can run again with no candidate between (a loop around the
//   call that its entry pc is outside of), which stays set-up as back edges alone say; that answer is taken only
//   when it proves the holder arming exactly the places the first one armed; where the first reading proves a holder
//   with such a loop, the second must agree, and a copy the two place differently may miss calls;
// - other copy code (a body) reached while no call is open begins a call there: a new entry (a duplicated path),
//   unless it only moves values and jumps until control leaves the copy (a tail the caller's code jumps into, such
//   as a register reload on the way back): that begins no call. A duplicate of a call does the call's work, so this
//   is proved where the copy's other code does work; where it is all moves, the copy's count is a lower bound;
//   reached while a call of another copy is open, it is code GCC merged between copies and continues that call;
// - outside code reached from a copy's body that leads back into the same copy's body within one iteration is the
//   caller's code scheduled in between: the call stays open; any other outside code ends it. Except where that
//   outside code is a test whose other path never comes back (a loop's condition) and the copy code it leads back
//   into is on the line of the copy's entry pc while the code that left was on another: that is the beginning of
//   the copy again, duplicated by unrolling a loop under the one DIE, and begins a new call there;
// - copy code that runs both inside one of its calls and after the code of an inlined copy of another function
//   (none of its calls open) is the two calls' identical tails merged into one (cross-jumping: GCC keeps the code
//   once and jumps to it from the other call): on the second path it ends the other function's call and begins
//   none of this one. Copy code reached only that way begins a call, as from the caller's code.
// Copy code that only moves values, only jumps or only loads the function's own address (see below) and runs both
// inside a call and outside any begins no call on the second path and continues the open one on the first: it is
// no work of a call wherever GCC attributed it (a frame reload GCC gave a copy, scheduled inside another function's
// copy), so it leaves the entries proved; work after it is judged as any copy code is.
// Set-up code that a path with no call open reaches and that also runs on a path that passes no entry may be a call
// whose DIE GCC merged away, unless it only moves values as a register allocator does (a spill to the frame, its
// reload, a register copy, a frame address: see onlyMoves in x86decoder.ts), only jumps, or only loads the address of
// the function's own out-of-line code (the argument -finstrument-functions passes its hooks, which GCC hoists out of
// loops and ahead of the caller's tests), which is no work of a call wherever GCC attributed it. Any other constant is
// not such a move: it may be all a call computes. Nor is work whose values nothing on those paths uses until an entry
// (deadSetup.ts): no register or frame slot it writes is read there, passed to a call (by the callee's prototype in
// DWARF), reachable through a frame address the holder takes, or left to the holder's caller; a call GCC merged away
// leaves a result its path uses, work hoisted onto a path that makes no call does not.
// Where all this leaves a holder's entries unproved, findInlinedEntriesProving asks again with callees proved never
// to return from their own code (provedNoReturn.ts) ending paths too, and takes that answer only when it proves the
// holder arming no place the first did not.
// An entry pc reached while its own call is open (a loop head, code shared with paths that make no call) is not
// armed, and its copy's calls go uncounted; copy code that runs both with and without a call open, computed jumps
// and undecodable code make the holder's entries unproved. Each of these is said with its reason.
import { deadSetUp } from './deadSetup';
import { build, probeableFrom, refusedByKernel, SINK, Unavailable, type HostRange, type InlinedExitQuery } from './inlinedExits';
import { beginsAgain, runsAgainWithoutEntry, runsInto } from './copyShapes';
import { hasIrreducibleLoop, loopBackEdges, loopClosingEdges } from './loops';

export interface InlinedEntryQuery {
  arch: 'x86_64' | 'aarch64';
  /** Every code range of the subprogram the copies sit in. */
  host: HostRange[];
  /** Where that subprogram is entered. */
  hostEntry: bigint;
  /** Every copy of one function inside it: its entry pc and its code ranges [lo, hi). */
  copies: Array<{
    entry: bigint;
    ranges: Array<[bigint, bigint]>;
    /** The source call the copy stands for (its parent DIE, call file:line:column); copies of one call share it. */
    call?: string;
    /** DWARF marks where the copy begins (DW_AT_entry_pc): GCC does, LLVM does not. */
    marked?: boolean;
  }>;
  noReturn?: InlinedExitQuery['noReturn'];
  readData?: InlinedExitQuery['readData'];
  kprobes?: InlinedExitQuery['kprobes'];
  /** The source line (file:line) of an address, from the line table; without it no copy is taken to begin again. */
  lineOf?: (address: bigint) => string | undefined;
  /**
   * The code ranges of the holder's inlined copies of other functions (those around the copies excepted): code
   * of a copy that such a copy's code runs into is taken for the two calls' merged tail (see the top). Without
   * it, such code is reported as running both inside a call and outside any.
   */
  others?: Array<Array<[bigint, bigint]>>;
  /**
   * The addresses of the function's own code out of line (its entry, its clones). Copy code that only loads one of
   * them does no work of a call: it is the argument of -finstrument-functions' hooks, which GCC hoists ahead of the
   * copy's code (out of a loop, ahead of the caller's test).
   */
  ownAddresses?: ReadonlySet<bigint>;
  /**
   * How many integer argument registers the callee of the call returning to `returnAddress` (calling `target`;
   * `external`: through a PLT stub) may read, from its prototype; undefined when not known (any of them).
   */
  argumentsOf?: (returnAddress: bigint, target: bigint, external: boolean) => number | undefined;
}

export interface InlinedEntry {
  /** Where it is armed: the entry's first instruction, or the one after it that the kernel can probe (see armAt). */
  address: bigint;
  /** The copy (index into the query's copies) whose code the entry is in. */
  copy: number;
  /** 'entry-pc': DWARF's entry pc; 'path': the first instruction of a path of the copy no entry pc is on. */
  how: 'entry-pc' | 'path';
}

export interface MergedCopy {
  copy: number;
  /** The copy whose entry counts its calls. */
  into: number;
  why: 'same-address' | 'chained';
}

/**
 * A copy some of whose calls may go uncounted: its DWARF entry pc is not armed (it also runs where no call begins),
 * or (`armed`) it is, but the copy's code also runs on a path that passes no entry.
 */
export interface NotArmed {
  copy: number;
  address: bigint;
  reason: string;
  armed?: true;
}

export type EntriesUnavailable =
  | 'arch'
  | 'undecodable'
  | 'indirect-jump'
  | 'unprobeable'
  | 'double' // an entry can be reached again while a call it began is open
  | 'ambiguous'; // code of a copy runs both inside a call and outside any

export type InlinedEntries =
  | { ok: true; entries: InlinedEntry[]; merged: MergedCopy[]; notArmed: NotArmed[] }
  | { ok: false; category: EntriesUnavailable; reason: string; address?: bigint };

const hex = (a: bigint) => `0x${a.toString(16)}`;
/** No call of the function is open. */
const NONE = -1;
/** No call of the function is open, and the code that ran last was an inlined copy of another function's. */
const FOREIGN = -2;
const MAX_ROUNDS = 64;

export function findInlinedEntries(q: InlinedEntryQuery): InlinedEntries {
  if (q.arch !== 'x86_64')
    return { ok: false, category: 'arch', reason: 'entries of inlined copies are proved by decoding x86-64 code only' };
  const first = attempt(q, false);
  if (!first.ok || !first.irreducible) return first;
  // The holder has a loop GCC enters at more than one place (irreducible: no back edge to a dominator closes it),
  // so a path can go round it with no back edge between. Read again with iterations also ending at such a loop's
  // edges back to its head (loops.ts).
  const second = attempt(q, true);
  const places = (r: Attempt, copy?: number) =>
    r.ok ? [...new Set(r.entries.filter((e) => copy === undefined || e.copy === copy).map((e) => e.address))].sort().join() : '';
  if (first.notArmed.length > 0)
    // Where the first reading leaves a copy's count a lower bound (the back edges it misses), the second answer is
    // taken when it proves the holder arming exactly the places the first one armed.
    return second.ok && second.notArmed.length === 0 && places(second) === places(first) ? second : first;
  // The first reading proved the holder; the proof holds only if the second agrees. Copy code that reaches its
  // copy's entry only round such a loop (in the next iteration) was taken for set-up of that call, and may be a
  // call of its own (redis's sdssplitargs: two hex_digit_to_int copies of one expression, both computed on each
  // path of a test, each DIE's entry pc on one path). Copies the readings place differently are counted from
  // below, at the places the first reading armed.
  if (second.ok && second.notArmed.length === 0 && places(second) === places(first)) return first;
  const why = second.ok
    ? 'its calls begin elsewhere when a loop GCC enters at two places (irreducible control flow) is read from its other entry'
    : `read from the other entry of a loop GCC enters at two places (irreducible control flow): ${second.reason}`;
  const notArmed: NotArmed[] = [];
  q.copies.forEach((c, k) => {
    if (second.ok && places(first, k) === places(second, k) && !second.notArmed.some((n) => n.copy === k)) return;
    notArmed.push({ copy: k, address: c.entry, reason: why, armed: true });
  });
  return { ...first, notArmed };
}

type Attempt = ReturnType<typeof attempt>;

/** One reading of the holder; `irreducible` says whether it has a loop whose closing edges are not all back edges. */
function attempt(q: InlinedEntryQuery, irreducible: boolean): InlinedEntries & { irreducible?: boolean } {
  try {
    return { ok: true, ...place(q, irreducible) };
  } catch (e) {
    if (e instanceof Unavailable) {
      const category = e.category as EntriesUnavailable;
      return { ok: false, category, reason: e.message, address: e.address };
    }
    throw e;
  }
}

function place(
  q: InlinedEntryQuery,
  irreducible: boolean,
): { entries: InlinedEntry[]; merged: MergedCopy[]; notArmed: NotArmed[]; irreducible: boolean } {
  const g = build(q);
  const { insns, succ, pred } = g;
  const N = insns.length;
  const hostEntry = g.at.get(q.hostEntry);
  if (hostEntry === undefined)
    throw new Unavailable('undecodable', `its function's entry ${hex(q.hostEntry)} is not the start of an instruction`, q.hostEntry);
  // Which copy each instruction is code of (-1: the holder's own).
  const copyOf = new Int32Array(N).fill(-1);
  for (let n = 0; n < N; n++) {
    const a = insns[n].address;
    const c = q.copies.findIndex((cp) => cp.ranges.some(([lo, hi]) => a >= lo && a < hi));
    copyOf[n] = c;
  }
  // Instructions in the code of other functions' inlined copies (outside this function's copies).
  const foreign = new Uint8Array(N);
  const others = (q.others ?? []).filter((rs) => !q.copies.some((c) => rs.some(([lo, hi]) => c.entry >= lo && c.entry < hi)));
  // Instructions are sorted by address: each range marks the run of them it holds (found by binary search).
  const firstAtOrAfter = (a: bigint) => {
    let lo = 0;
    let hi = N;
    while (lo < hi) {
      const mid = (lo + hi) >> 1;
      if (insns[mid].address < a) lo = mid + 1;
      else hi = mid;
    }
    return lo;
  };
  for (const rs of others)
    for (const [lo, hi] of rs) for (let n = firstAtOrAfter(lo); n < N && insns[n].address < hi; n++) if (copyOf[n] < 0) foreign[n] = 1;
  // Copy code reached only from other functions' copies (never with a call open): it begins a call there.
  const foreignBegins = new Set<number>();
  // Copy code that does no work of a call: it only moves values as a register allocator does, only loads the
  // function's own address (for the profiling hooks), or only jumps.
  const noWork = (n: number) =>
    insns[n].moves === true ||
    insns[n].kind === 'jmp' ||
    (insns[n].loadsAddress !== undefined && q.ownAddresses?.has(insns[n].loadsAddress!) === true);
  // Copies left unarmed: their code is then treated as the caller's (no entry is invented for it).
  const dropped = new Set<number>();
  const inR = (n: number) => copyOf[n] >= 0 && !dropped.has(copyOf[n]);
  const isCall = (n: number) => insns[n].kind === 'call' || insns[n].kind === 'call-indirect';

  // Candidates: one per entry pc address.
  const merged: MergedCopy[] = [];
  const probe = new Map<number, { copy: number; how: InlinedEntry['how']; also?: number[] }>();
  // DIEs at one address are one call when they describe the same code (GCC duplicated the DIE); DIEs whose code is
  // disjoint are calls GCC computed one after the other and marked at one place: each is a call there.
  const overlap = (a: number, b: number) =>
    q.copies[a].ranges.some(([lo, hi]) => q.copies[b].ranges.some(([lo2, hi2]) => lo < hi2 && lo2 < hi)) ||
    q.copies[a].ranges.length === 0 ||
    q.copies[b].ranges.length === 0;
  q.copies.forEach((c, k) => {
    const n = g.at.get(c.entry);
    if (n === undefined) throw new Unavailable('undecodable', `a copy's entry ${hex(c.entry)} is not the start of an instruction`, c.entry);
    const had = probe.get(n);
    if (!had) probe.set(n, { copy: k, how: 'entry-pc' });
    else if (overlap(had.copy, k) || had.also?.some((o) => overlap(o, k))) merged.push({ copy: k, into: had.copy, why: 'same-address' });
    else (had.also ??= []).push(k);
  });
  // An entry pc that runs only into another candidate (no call, not leaving the copies) is that call's.
  for (let changed = true; changed;) {
    changed = false;
    for (const [e, info] of probe) {
      const into = runsInto(g, e, probe, inR, isCall);
      if (into === undefined) continue;
      probe.delete(e);
      merged.push({ copy: info.copy, into: probe.get(into)!.copy, why: 'chained' });
      for (const m of merged) if (m.into === info.copy) m.into = probe.get(into)!.copy;
      changed = true;
    }
  }

  const backEdge = loopBackEdges(g, hostEntry);
  const closing = irreducible ? loopClosingEdges(g, hostEntry) : backEdge;
  // Only where a loop is entered at more than one place can the two readings differ.
  const hasIrreducible = irreducible || hasIrreducibleLoop(g, hostEntry, backEdge);
  const rep = (k: number): number => {
    for (let m = merged.find((x) => x.copy === k); m; m = merged.find((x) => x.copy === k)) k = m.into;
    return k;
  };
  // Whether the copy's code from n, up to where control leaves the copy (or reaches one of its entries), only moves
  // values and jumps: no instruction of it computes anything a call of the copy would.
  const tailOnly = (n: number, copy: number): boolean => {
    const seen = new Set<number>([n]);
    const wl = [n];
    while (wl.length) {
      const m = wl.pop()!;
      if (!noWork(m)) return false;
      for (const t of succ[m])
        if (t !== SINK && !seen.has(t) && !probe.has(t) && inR(t) && rep(copyOf[t]) === copy) {
          seen.add(t);
          wl.push(t);
        }
    }
    return true;
  };
  const notArmed: NotArmed[] = [];
  // LLVM marks no entry: one source call's code split over several DIEs (an edge counter both arms of a match jump
  // to, the `?` error path of two copies of one call) gives a DIE a first address that runs only from the code of
  // the call's other copies, within the call their entries count. Arming it counts that call twice. Were it a second
  // call made straight after the first (an unrolled loop with none of the caller's code between), it goes uncounted:
  // said.
  for (const [n, info] of [...probe]) {
    const c = q.copies[info.copy];
    if (c.call === undefined || c.marked || info.also || pred[n].length === 0) continue;
    let into: number | undefined;
    const within = pred[n].every((p) => {
      const j = copyOf[p];
      if (j < 0 || dropped.has(j) || rep(j) === rep(info.copy) || q.copies[j].call !== c.call || q.copies[j].marked) return false;
      into ??= rep(j);
      return true;
    });
    if (!within || into === undefined || ![...probe.values()].some((v) => v !== info && rep(v.copy) === into)) continue;
    probe.delete(n);
    merged.push({ copy: info.copy, into, why: 'chained' });
    for (const m of merged) if (m.into === info.copy) m.into = into;
    notArmed.push({
      copy: info.copy,
      address: insns[n].address,
      armed: true,
      reason: `its first address ${hex(insns[n].address)} runs only from the code of other copies of the same call (no entry marked in DWARF): counted as their call, and a second call made there with none of the caller's code between would go uncounted`,
    });
  }
  // An entry pc that only jumps out of the copy, in a copy whose other code does work, is no beginning of a call: a
  // call does the copy's work. It is the caller's jump the compiler attributed to the copy (LLVM gives the jump to a
  // shared exit the location of one of the branches it merged). Its copy's calls then begin where its code is first
  // reached (duplicated paths, found below); the code that began them may be the caller's by DWARF, so what they
  // count is a lower bound. (An entry pc that moves values before leaving is a call whose work was set up ahead.)
  const jumpsOut = (n: number, copy: number): boolean => {
    const seen = new Set<number>();
    for (let m = n; !seen.has(m);) {
      seen.add(m);
      if (insns[m].kind !== 'jmp' || succ[m].length !== 1) return false;
      const t = succ[m][0];
      if (t === SINK || !inR(t) || rep(copyOf[t]) !== copy) return true;
      m = t;
    }
    return false;
  };
  for (const [n, info] of [...probe]) {
    const own = new Set([info.copy, ...(info.also ?? [])].map(rep));
    if (!jumpsOut(n, rep(info.copy))) continue;
    let works = false;
    for (let m = 0; m < N && !works; m++) works = inR(m) && own.has(rep(copyOf[m])) && !noWork(m);
    if (!works) continue;
    probe.delete(n);
    for (const k of [info.copy, ...(info.also ?? [])])
      notArmed.push({
        copy: k,
        address: insns[n].address,
        reason: `its entry pc ${hex(insns[n].address)} only jumps out of the copy, which does its work elsewhere: the compiler's attribution of the caller's code, not where calls begin (counted where the copy's code is first reached, from below)`,
      });
  }
  // An entry pc outside its copy's own code ranges is the caller's instruction GCC put the copy's start on. Where
  // control can go from it both into the copy's code and, within one iteration, past it (SQLite's isDate: the `ja`
  // of the test that decides whether sqlite3_value_double is called), arming it counts the runs of the caller's
  // test, not the calls: the copy's calls are counted where its code is first reached, from below (as above). One
  // its copy's code runs before (two merged tolower copies, the second's entry pc after both) stays the call's.
  const ownCode = (n: number, ks: ReadonlySet<number>) => {
    const a = insns[n].address;
    return q.copies.some((c, k) => ks.has(rep(k)) && c.ranges.some(([lo, hi]) => a >= lo && a < hi));
  };
  const decides = (n: number, ks: ReadonlySet<number>): boolean => {
    let into = false;
    let past = false;
    const seen = new Set<number>([n]);
    const wl = [n];
    while (wl.length) {
      const m = wl.pop()!;
      for (const t of succ[m]) {
        if (t === SINK || t === n || backEdge(m, t)) past = true;
        else if (ownCode(t, ks) || (probe.has(t) && ks.has(rep(probe.get(t)!.copy)))) into = true;
        else if (!seen.has(t)) {
          seen.add(t);
          wl.push(t);
        }
      }
    }
    return into && past;
  };
  for (const [n, info] of [...probe]) {
    const own = new Set([info.copy, ...(info.also ?? [])].map(rep));
    if (q.copies[info.copy].ranges.length === 0 || ownCode(n, own) || !decides(n, own)) continue;
    probe.delete(n);
    for (const k of [info.copy, ...(info.also ?? [])])
      notArmed.push({
        copy: k,
        address: insns[n].address,
        reason: `its entry pc ${hex(insns[n].address)} is the caller's code, outside the copy's, and control goes from it both into the copy and past it (arming it would count runs that make no call): counted where the copy's code is first reached, from below`,
      });
  }
  let dead: ReturnType<typeof deadSetUp> | undefined;
  // Copy code reached with no call open that only moves values and jumps until control leaves the copy: a tail the
  // caller's code jumps into (a register reload on its way back), not the beginning of a call (see tailOnly).
  const tails = new Set<number>();

  for (let round = 0; round < MAX_ROUNDS; round++) {
    // Set-up: code of a copy that runs ahead of its candidate on some path: it reaches the candidate of its own
    // copy within one iteration (no edge that closes a loop between, however GCC enters the loop: code that reaches
    // it only around a loop comes after a call, not before one), through any code but that candidate.
    // Copy code that begins the copy again after the caller's code (an unrolled loop): a call begins there, so
    // the code before it is the previous call's, not set-up of this one.
    const restart = beginsAgain(g, q, copyOf, inR, probe, backEdge);
    const setUpWithin = (ends: (p: number, n: number) => boolean) => {
      const setup = new Uint8Array(N);
      for (const [e, info] of probe) {
        const own = new Set([info.copy, ...(info.also ?? [])].map(rep));
        const seen = new Set<number>([e]);
        const w = [e];
        while (w.length) {
          const n = w.pop()!;
          for (const p of pred[n]) {
            // Through another copy's entry (copies computed one after the other), never back through this one.
            if (seen.has(p) || p === e || ends(p, n) || (restart.has(n) && !inR(p))) continue;
            seen.add(p);
            if (inR(p) && own.has(rep(copyOf[p]))) setup[p] = 1;
            w.push(p);
          }
        }
      }
      return setup;
    };
    // An iteration ends at a loop's back edge, and (asked again: see findInlinedEntries) in a loop GCC enters at more
    // than one place at an edge back to the first of those places (loops.ts). Except for copy code that can run again without any entry running in between
    // (a loop around the call that its entry pc is outside of): whether each round of it is the call or set-up of
    // the next cannot be told there, and it stays set-up as far as back edges alone say.
    const setup = setUpWithin(closing);
    const byBackEdges = setUpWithin(backEdge);
    for (let n = 0; n < N; n++) if (byBackEdges[n] && !setup[n] && runsAgainWithoutEntry(g, n, probe)) setup[n] = 1;
    const body = (n: number) => probe.has(n) || (inR(n) && !setup[n] && !tails.has(n));
    // Hops: outside code reached from a copy's body and leading back into the body of the same copy (not through
    // a candidate), within one iteration (as for set-up, however GCC enters the loop): code reached around a loop
    // runs after the call, not in the middle of it.
    // Code between two different copies ends the first one's call.
    const outsideCode = (n: number) => !inR(n) && !probe.has(n);
    // For a hop of copy l, another copy's set-up is passed as the caller's code is: it begins no call (SQLite's
    // sqlite3BtreeIntegrityCheck: one get4byte copy's `bswap` comes after the next copy's argument loads).
    const between = (n: number, l: number) => outsideCode(n) || (inR(n) && setup[n] === 1 && !probe.has(n) && rep(copyOf[n]) !== l);
    const label = (n: number) => (probe.has(n) ? rep(probe.get(n)!.copy) : rep(copyOf[n]));
    const fromBody = new Map<number, Set<number>>();
    const toBody = new Map<number, Set<number>>();
    const mark = (m: Map<number, Set<number>>, n: number, l: number): boolean => {
      let set = m.get(n);
      if (!set) m.set(n, (set = new Set()));
      if (set.has(l)) return false;
      set.add(l);
      return true;
    };
    const w1: Array<[number, number]> = [];
    const fwd = (n: number, l: number) => {
      for (const t of succ[n]) if (t !== SINK && between(t, l) && !closing(n, t) && mark(fromBody, t, l)) w1.push([t, l]);
    };
    for (let n = 0; n < N; n++) if (body(n)) fwd(n, label(n));
    while (w1.length) fwd(...w1.pop()!);
    const w2: Array<[number, number]> = [];
    const bwd = (n: number, l: number) => {
      for (const p of pred[n]) if (between(p, l) && !closing(p, n) && fromBody.get(p)?.has(l) && mark(toBody, p, l)) w2.push([p, l]);
    };
    for (let n = 0; n < N; n++) if (body(n) && !probe.has(n) && !restart.has(n)) bwd(n, label(n));
    while (w2.length) bwd(...w2.pop()!);
    const hop = (n: number) => outsideCode(n) && (toBody.get(n)?.size ?? 0) > 0;

    // The dataflow: the state at an instruction is the set of copies whose call may be open there (NONE: no call
    // open). A copy's body first reached with none of its own calls open begins a call there: a new entry.
    const state = new Map<number, Set<number>>();
    const fresh = new Set<number>();
    let double: number | undefined;
    // Copy code found running both inside a call and outside any: the entries are unproved, unless this round
    // still passed code after another function's copy on provisionally (see below), when the next round decides.
    let ambiguous: number | undefined;
    const w: number[] = [];
    const seed = (n: number, s: ReadonlySet<number>) => {
      let cur = state.get(n);
      if (!cur) state.set(n, (cur = new Set()));
      let grew = false;
      for (const x of s)
        if (!cur.has(x)) {
          cur.add(x);
          grew = true;
        }
      if (grew) w.push(n);
    };
    const only = (x: number) => new Set([x]);
    seed(hostEntry, only(NONE));
    while (w.length && double === undefined) {
      const n = w.pop()!;
      const s = state.get(n)!;
      let out: Set<number>;
      if (probe.has(n)) {
        if (s.has(label(n))) double = n;
        out = only(label(n));
      } else if (body(n)) {
        // Reached with no call open (after another function's copy: only where that begins a call, see below).
        const none = s.has(NONE) || (s.has(FOREIGN) && foreignBegins.has(n));
        const open = s.size - (s.has(NONE) ? 1 : 0) - (s.has(FOREIGN) ? 1 : 0);
        if (none && open > 0) {
          // A move, a jump or the hooks' own-address load does no work of a call (see the top): on the path with
          // no call open it begins none, and on the other it continues the open one. Any work after it decides.
          if (!noWork(n)) ambiguous ??= n;
          out = new Set(s);
        } else if (none) {
          fresh.add(n);
          out = only(label(n));
        } else out = new Set(s); // code two copies share (GCC merged their tails): still the open call
      } else if (inR(n)) out = new Set(s);
      else if (hop(n)) {
        const through = toBody.get(n)!;
        out = new Set([...s].map((x) => (through.has(x) ? x : NONE)));
      } else out = only(foreign[n] ? FOREIGN : NONE);
      for (const t of succ[n]) if (t !== SINK) seed(t, out);
    }
    if (double !== undefined) {
      // An entry pc that runs again while a call is open is code the call shares with other paths (a tokenizer's
      // state change, a loop head): arming it would count more than the calls. Its copy is left unarmed.
      const info = probe.get(double)!;
      const at = insns[double].address;
      if (info.how !== 'entry-pc')
        throw new Unavailable('double', `the entry ${hex(at)} can be reached again while a call it began is open`, at);
      probe.delete(double);
      const gone = new Set([info.copy, ...(info.also ?? [])].map(rep));
      for (let k = 0; k < q.copies.length; k++) if (gone.has(rep(k))) dropped.add(k);
      for (const k of [info.copy, ...(info.also ?? [])])
        notArmed.push({
          copy: k,
          address: at,
          reason: `its entry pc ${hex(at)} also runs while a call is open, or on paths that make no call (arming it would count more than the calls)`,
        });
      continue;
    }
    // Copy code reached after another function's copy and never inside a call of this one is no merged tail: the
    // first of it begins a call (as from the caller's code), and the next round follows that call.
    const onlyForeign = (n: number) =>
      body(n) && !probe.has(n) && !foreignBegins.has(n) && state.get(n)?.size === 1 && state.get(n)!.has(FOREIGN);
    const heads = [...state.keys()].filter((n) => onlyForeign(n) && pred[n].some((p) => !onlyForeign(p)));
    const begin = heads.length > 0 ? heads : [...state.keys()].filter(onlyForeign);
    for (const n of begin) foreignBegins.add(n);
    if (begin.length > 0) continue;
    if (ambiguous !== undefined) {
      const at = insns[ambiguous].address;
      throw new Unavailable('ambiguous', `the copy's code at ${hex(at)} runs both inside a call and outside any`, at);
    }
    // A new entry is armed only where the code it begins does work of a call before it leaves the copy.
    const tailsNow = [...fresh].filter((n) => tailOnly(n, label(n)));
    if (tailsNow.length > 0) {
      for (const n of tailsNow) tails.add(n);
      continue;
    }
    if (fresh.size === 0) {
      // The kernel refuses a uprobe on a LOCK- or segment-prefixed instruction, silently (inlinedExits.ts): an
      // Arc::clone's `lock incq` is an inlined copy's first instruction. Such an entry is armed at the instruction
      // after it where that one is reached from it alone, so every run of the first is counted there, once.
      const armAt = (n: number): number => {
        const r = probeableFrom(g, q.host, n, (next) => next === hostEntry || probe.has(next), q.kprobes);
        if (!r.ok) refusedByKernel(q, insns[r.at].address, 'entry');
        return r.at;
      };
      // A candidate found on a path that runs with no branch into another of the same copy: both would count every
      // run. Either it is set-up of the other's call (redis's lpEncodeBacklen in lpPrev: `mov $1,%r15d`, the
      // argument, then another copy's exit hook, then the call) or the two are two calls, which cannot be told
      // apart. The later one, where the call surely is under way, is kept; the copy's count is a lower bound unless
      // the first only makes constants and moves (sdsHdrSize in _sdsnewlen: `mov $3,%r15d; mov $1,%r13d`).
      for (const [n, v] of [...probe]) {
        if (v.how === 'entry-pc') continue;
        for (let m = n, steps = 0; steps < 64 && succ[m].length === 1 && succ[m][0] !== SINK; steps++) {
          m = succ[m][0];
          const w = probe.get(m);
          if (!w) continue;
          if (m !== n && rep(w.copy) === rep(v.copy)) {
            probe.delete(n);
            // Copy code that only makes constants and moves before it leaves is the other call's arguments: exact.
            let setUpOnly = true;
            for (
              let c = n, k = 0;
              k++ < 64 && inR(c) && rep(copyOf[c]) === rep(v.copy) && setUpOnly && succ[c].length === 1;
              c = succ[c][0]
            )
              setUpOnly = noWork(c) || insns[c].constant === true;
            if (!setUpOnly)
              for (const k of [v.copy, ...(v.also ?? [])])
                notArmed.push({
                  copy: k,
                  address: insns[m].address,
                  reason: `its code at ${hex(insns[n].address)} runs with no branch into its entry ${hex(insns[m].address)}: it is counted there, once, and if it was a call of its own that call goes uncounted`,
                  armed: true,
                });
          }
          break;
        }
      }
      const entries = [...probe].flatMap(([n, v]): InlinedEntry[] =>
        [v.copy, ...(v.also ?? [])].map((copy) => ({ address: insns[armAt(n)].address, copy, how: v.how })),
      );
      // Set-up code from which control can leave the holder without passing an entry: on that path the copy's
      // code ran and no entry did. It may be a call whose own DIE GCC dropped (two calls merged into one
      // computation ahead of the caller's test) or work hoisted onto a path that makes no call; the two cannot be
      // told apart, so the copy's count is only a lower bound.
      // Per copy, in address order: its set-up code that runs where no call is open and from which control can
      // leave the holder without passing an entry.
      const leaking = new Map<number, number[]>();
      for (let n = 0; n < N; n++) {
        // Moves and jumps do no work of their own (see the top).
        // Only code some path reaches with no call open: after an entry it is that call's (its loop's next round).
        const reached = state.get(n);
        if (!reached || !(reached.has(NONE) || reached.has(FOREIGN))) continue;
        if (!setup[n] || noWork(n)) continue;
        const seen = new Uint8Array(N);
        const wl = [n];
        seen[n] = 1;
        let leaves = false;
        while (wl.length && !leaves) {
          for (const t of succ[wl.pop()!]) {
            if (t === SINK) leaves = true;
            else if (!seen[t] && !probe.has(t)) {
              seen[t] = 1;
              wl.push(t);
            }
          }
        }
        if (!leaves) continue;
        const k = rep(copyOf[n]);
        leaking.set(k, [...(leaking.get(k) ?? []), n]);
      }
      for (const [k, starts] of leaking) {
        // Nothing the set-up computes is used on those paths: it is work hoisted onto them, no call (deadSetup.ts).
        dead ??= deadSetUp(q, g, hostEntry);
        if (dead((n) => setup[n] === 1 && inR(n) && rep(copyOf[n]) === k && !noWork(n), probe, starts)) continue;
        const n = starts[0];
        notArmed.push({
          copy: copyOf[n],
          address: insns[n].address,
          reason: `its code at ${hex(insns[n].address)} also runs on a path that passes no entry of it (a call whose DIE GCC merged away, or work hoisted ahead of the call)`,
          armed: true,
        });
      }
      // Copy code reached only while another copy's call is open, never in a call of its own copy, is taken to
      // continue that call (code GCC merged or interleaved between the copies). Where it runs on, through its own
      // copy's code, into code its own calls run, it may as well be the start of its own call duplicated after the
      // other's end (SQLite's createCollation: one sqlite3FindCollSeq copy's exit hook runs into the next copy's
      // entry hook, then jumps into that copy's body): such a call goes uncounted, so the count is a lower bound.
      const saidOther = new Set<number>();
      const intoOwnCall = (n: number, k: number): boolean => {
        const seen = new Set<number>([n]);
        const wl = [n];
        while (wl.length) {
          for (const t of succ[wl.pop()!]) {
            if (t === SINK || seen.has(t) || probe.has(t) || !inR(t) || label(t) !== k) continue;
            if (state.get(t)?.has(k)) return true;
            seen.add(t);
            wl.push(t);
          }
        }
        return false;
      };
      for (let n = 0; n < N; n++) {
        const s = state.get(n);
        if (!s || probe.has(n) || !body(n) || s.has(NONE) || s.has(FOREIGN) || s.has(label(n))) continue;
        const k = label(n);
        if (saidOther.has(k) || !intoOwnCall(n, k)) continue;
        saidOther.add(k);
        notArmed.push({
          copy: copyOf[n],
          address: insns[n].address,
          reason: `its code at ${hex(insns[n].address)} is reached only while a call of another copy is open and runs into its own calls' code: counted as the other call's, and if it begins a call of its own that call goes uncounted`,
          armed: true,
        });
      }
      // A copy whose other code does work has no call made of moves alone: a duplicate of its call would do that work
      // too. A copy whose code is all moves (a function that returns its argument) may: its count is a lower bound.
      const works = new Set<number>();
      for (let n = 0; n < N; n++) if (inR(n) && !tails.has(n) && !noWork(n)) works.add(rep(copyOf[n]));
      const saidTail = new Set<number>();
      for (const n of [...tails].sort((a, b) => a - b)) {
        const k = rep(copyOf[n]);
        if (saidTail.has(k) || works.has(k)) continue;
        saidTail.add(k);
        notArmed.push({
          copy: copyOf[n],
          address: insns[n].address,
          reason: `its code at ${hex(insns[n].address)} only moves values and jumps, as all of the copy's code does, and is reached where no call of it is open: taken for the copy's tail, not a call (a call there goes uncounted)`,
          armed: true,
        });
      }
      entries.sort((a, b) => (a.address < b.address ? -1 : a.address > b.address ? 1 : 0));
      return { entries, merged, notArmed, irreducible: hasIrreducible };
    }
    for (const n of fresh) probe.set(n, { copy: copyOf[n], how: 'path' });
  }
  throw new Unavailable('ambiguous', `the copies' entries did not settle after ${MAX_ROUNDS} rounds`);
}

/**
 * findInlinedEntries, and where that leaves the entries unproved, again with `proved` (callees proved never to
 * return from their own code: provedNoReturn.ts) ending paths too. That answer is taken when it proves the holder
 * and arms no place the first one armed not (unproved: no place but the copies' entry pcs): paths a callee's proof
 * takes away can leave copy code reached only where no call is open, which would begin a call there.
 */
export function findInlinedEntriesProving(
  q: InlinedEntryQuery,
  proved: (target: bigint) => boolean,
): { result: InlinedEntries; query: InlinedEntryQuery } {
  const r = findInlinedEntries(q);
  if (r.ok && r.notArmed.length === 0) return { result: r, query: q };
  const q2: InlinedEntryQuery = { ...q, noReturn: (t) => q.noReturn?.(t) === true || proved(t) };
  const r2 = findInlinedEntries(q2);
  const before = new Set(r.ok ? r.entries.map((e) => e.address) : q.copies.map((c) => c.entry));
  if (r2.ok && r2.notArmed.length === 0 && r2.entries.every((e) => before.has(e.address))) return { result: r2, query: q2 };
  return { result: r, query: q };
}

// A function is all of its code: its out-of-line entry, its clones and split parts (concrete copies that share
// its abstract origin) and every inlined copy. This turns one FunctionInfo of the DWARF pass into its sites,
// using the symbol table to say which concrete copy is which (DWARF marks none of them) and where a copy
// described only by DW_AT_ranges begins.
import type { ConcreteCopy, Dwarf, FunctionInfo, InlinedInstance } from '../dwarf';
import type { FunctionSite, SiteKind } from './model';
import { siteRank } from '../../shared/site';
import { addressBig, addressNumber, KERNEL_FOLD } from '../dwarf/format';
import type { SymbolGroup } from '../binary/symbols';

/**
 * Symbol names by address (every alias of each address). Only looked up, never walked: the unit cache records
 * each unit's look-ups (unitReuse.ts) and checks them again before reusing the unit.
 */
export interface SymbolsByAddress {
  get(address: number): readonly string[] | undefined;
  has(address: number): boolean;
}

/**
 * The names at each address of the symbol groups (sorted by address, as ElfFile.functionSymbols gives them),
 * looked up by address number as a Map of them by addressNumber would answer, by binary search: nothing is
 * built per symbol, which matters when a few functions' copies are placed among a kernel's 46,000 symbols.
 */
export function symbolLookup(groups: readonly SymbolGroup[]): SymbolsByAddress {
  const names = (i: number): readonly string[] => groups[i].symbols.map((s) => s.name);
  // Below KERNEL_FOLD and in a kernel's top 4 GiB a number stands for one address (addressNumber, addressBig);
  // anywhere else two addresses may share one, and the later group of a number answers, as in a Map filled in order.
  const n = groups.length;
  const firstAtFold = lowerBound(groups, FOLD_START);
  if ((firstAtFold < n && groups[firstAtFold].address < KERNEL_TOP) || (n > 0 && groups[n - 1].address >= KERNEL_TOP + TOMBSTONE_START)) {
    const byNumber = new Map<number, readonly string[]>();
    groups.forEach((g, j) => byNumber.set(addressNumber(g.address), names(j)));
    return byNumber;
  }
  const find = (address: number): number => {
    if (!Number.isInteger(address) || address < 0) return -1;
    const a = addressBig(address);
    const i = lowerBound(groups, a);
    return i < n && groups[i].address === a ? i : -1;
  };
  return {
    get: (address) => {
      const i = find(address);
      return i < 0 ? undefined : names(i);
    },
    has: (address) => find(address) >= 0,
  };
}

const FOLD_START = BigInt(KERNEL_FOLD);
const KERNEL_TOP = 0xffffffff00000000n;
const TOMBSTONE_START = 0xfffffff0n;

/** The first group at or above `a`. */
function lowerBound(groups: readonly SymbolGroup[], a: bigint): number {
  let lo = 0,
    hi = groups.length;
  while (lo < hi) {
    const mid = (lo + hi) >> 1;
    if (groups[mid].address < a) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

// GCC's suffixes for code it made from a function: hot/cold split blocks, partial-inlining parts, and IPA clones
// (SRA, constant propagation; LLVM's `.specialized`). `.lto_priv.N`/`.localalias` rename the function itself.
const COLD = /\.cold(\.\d+)?$/;
const PART = /\.part\.\d+/;
const CLONE = /\.(isra|constprop|specialized|clone)\.\d+/;

export function symbolKind(name: string): SiteKind | 'cold' {
  // Every suffix has a dot, and most names none (a kernel's 46,000 function symbols pass here).
  if (!name.includes('.')) return 'entry';
  if (COLD.test(name)) return 'cold';
  if (PART.test(name)) return 'part';
  if (CLONE.test(name)) return 'clone';
  return 'entry';
}

/** The kind of an out-of-line copy by the names at its address; undefined when no symbol is there. */
function copyKind(names: readonly string[] | undefined): { kind: SiteKind; symbol: string } | undefined {
  if (!names?.length) return undefined;
  let best: { kind: SiteKind; symbol: string } | undefined;
  for (const n of names) {
    const k = symbolKind(n);
    if (k === 'cold') continue;
    if (!best || siteRank(k) < siteRank(best.kind)) best = { kind: k, symbol: n };
  }
  return best;
}

export interface CopyPlacement {
  copy: ConcreteCopy;
  site: FunctionSite;
}

/**
 * Places each concrete copy: its entry is the first candidate a (non-.cold) symbol confirms, else DWARF's own
 * first candidate. With symbols the names say entry/clone/part; without, the first copy is the entry.
 */
export function placeCopies(f: FunctionInfo, symbols: SymbolsByAddress): CopyPlacement[] {
  const out: CopyPlacement[] = [];
  for (const c of f.copies) {
    if (c.entryCandidates.length === 0) continue;
    const confirmed = c.entryCandidates.find((a) => copyKind(symbols.get(a)) !== undefined);
    const address = confirmed ?? c.entryCandidates[0];
    const named = copyKind(symbols.get(address));
    out.push({
      copy: c,
      site: {
        kind: named?.kind ?? 'entry',
        address: addressBig(address),
        dieOffset: c.dieOffset,
        unitOffset: c.unitOffset,
        symbol: named && named.kind !== 'entry' ? named.symbol : undefined,
        ranges: c.ranges.length ? c.ranges : undefined,
      },
    });
  }
  // One out-of-line entry: unnamed copies beside a named entry are clones the symbol table does not describe.
  let entries = out.filter((p) => p.site.kind === 'entry');
  if (entries.length > 1) {
    const named = entries.find((p) => symbols.has(addressNumber(p.site.address))) ?? entries[0];
    for (const p of entries) if (p !== named) p.site.kind = 'clone';
    entries = [named];
  }
  out.sort((a, b) => siteRank(a.site.kind) - siteRank(b.site.kind) || Number(a.site.address - b.site.address));
  for (const p of out) if (p.site.kind === 'part') p.site.caller = f.name;
  return out;
}

/** The inlined copies of `f` as sites (copies whose code was discarded have no ranges and are left out). */
export function inlinedSites(dw: Dwarf, f: FunctionInfo, nameOf: (die: number) => string | undefined): FunctionSite[] {
  if (f.inlinedDies.length === 0) return [];
  const out: FunctionSite[] = [];
  // The DIEs that are this function itself: its abstract origin (what an enclosing inlined copy of it names) and
  // its out-of-line copies.
  const own = new Set([f.dieOffset, f.originOffset, ...f.copies.map((c) => c.dieOffset)]);
  const all = dw.inlinedInstances(f);
  const callKey = (i: InlinedInstance) => `${i.subprogramDie}:${i.callerDie}:${i.callFile}:${i.callLine}:${i.callColumn}`;
  const entered = new Set(all.filter((i) => i.hasEntryPc && i.ranges.length > 0).map(callKey));
  // GCC can emit a copy with an entry marker but an empty code range (high_pc 0) when every instruction of it was
  // scheduled into the surrounding code: the call still begins at the marker, and perf probe arms it there. A copy
  // with neither ranges nor a marker inside its function's code was discarded.
  const inCallerCode = (i: InlinedInstance): boolean => {
    if (i.entryPc === undefined || i.subprogramDie === undefined) return false;
    const r = dw.codeRangesOf(i.subprogramDie);
    for (let k = 0; k < r.length; k += 2) if (i.entryPc >= r[k] && i.entryPc < r[k + 1]) return true;
    return false;
  };
  const fragments: InlinedInstance[] = [];
  const byCall = new Map<string, number>();
  for (const i of all) {
    if (i.entryPc === undefined) continue;
    if (i.ranges.length === 0 && !(i.hasEntryPc && inCallerCode(i))) continue;
    // GCC 12 can leave an inlined copy of a function inside the function itself (inside each out-of-line and
    // each inlined copy of it) whose call is at the declaration's own file:line:column: the body of a wrapper it
    // made of the function. Every -finstrument-functions function has one; plain -O2 builds of redis have some
    // too. A real recursive call is never at the declaration's name. That copy is reached only through the
    // enclosing copy's entry, which already counts the call.
    const body =
      i.callerDie !== undefined &&
      own.has(i.callerDie) &&
      f.column > 0 &&
      i.callFile === f.file &&
      i.callLine === f.line &&
      i.callColumn === f.column;
    if (body) continue;
    // GCC marks where each inlined copy begins (DW_AT_entry_pc from its inline-entry marker). When code of copies
    // of one source call inside one function was merged (cross-jumping, tail merging), the marker stays with one
    // copy; the others keep only fragments (an instruction scheduled ahead of the shared code, often on a path
    // that never calls the function), and the calls they stood for run through the marked copy's entry.
    if (!i.hasEntryPc && entered.has(callKey(i))) {
      fragments.push(i);
      continue;
    }
    if (i.hasEntryPc && i.ranges.length > 0) byCall.set(callKey(i), i.dieOffset);
    out.push({
      kind: 'inlined',
      address: addressBig(i.entryPc),
      dieOffset: i.dieOffset,
      unitOffset: i.unitOffset,
      caller: i.callerDie !== undefined ? nameOf(i.callerDie) : undefined,
      file: i.callFile || undefined,
      line: i.callLine || undefined,
      ranges: i.ranges.length ? [...i.ranges] : undefined,
    });
  }
  // A fragment's code runs as part of the call its marked copy stands for: it is that copy's code.
  for (const i of fragments) {
    const die = byCall.get(callKey(i));
    const into = out.find((s) => s.dieOffset === die);
    if (into && i.ranges.length) into.ranges = [...(into.ranges ?? []), ...i.ranges];
  }
  out.sort((a, b) => (a.address < b.address ? -1 : a.address > b.address ? 1 : a.dieOffset - b.dieOffset));
  return out;
}

/** Names of every DIE a function is known by (abstract origin, each copy), for "inlined into CALLER". */
export function functionNamesByDie(fns: readonly FunctionInfo[]): Map<number, string> {
  const m = new Map<number, string>();
  for (const f of fns) {
    m.set(f.dieOffset, f.name);
    m.set(f.originOffset, f.name);
    for (const c of f.copies) m.set(c.dieOffset, f.name);
  }
  return m;
}

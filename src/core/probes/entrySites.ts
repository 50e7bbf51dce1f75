// Which sites a function entry probe arms for a function's inlined copies: the entries findInlinedEntries proves
// on the decoded code of each function holding copies, instead of one DWARF entry pc per DIE. Copies whose
// entries cannot be proved are named with the reason, and the function's count is then a lower bound.
// Tests: test/unit/core/probes/inlinedEntries.fixture.test.ts, test/corpus/one-call-one-site.test.ts
import { callSitesIn, integerArguments } from '../dwarf/callSites';
import type { BinaryIndex } from '../index/binaryIndex';
import type { FunctionSite, IndexedFunction } from '../index/model';
import { findInlinedEntriesProving, type findInlinedEntries, type InlinedEntryQuery } from './inlinedEntries';
import { twoSitesOneCall } from './oneCallCheck';
import { build, kernelRefusal, probeableFrom, refusalSentence, Unavailable, type HostRange } from './inlinedExits';
import { kernelOf } from './kernelProbes';
import { entryByDie, noReturnTest } from './inlinedReturns';
import { siteContext } from './variables';
import { addressBig, addressNumber } from '../dwarf/format';
import { AT } from '../dwarf/constants';
import { num } from '../dwarf/unit';

export interface ProvedEntries {
  /** The sites to arm: out-of-line ones as they are, inlined copies at their proved entries. */
  sites: FunctionSite[];
  /** Copies merged into another's entry, and copies whose entries could not be proved (and why). */
  notes: string[];
  /** Some calls may go uncounted: the count is at least the number of calls seen, not exactly it. */
  lowerBound: boolean;
  /** Per copy (its DWARF entry pc) whose entries could not be proved: the reason. */
  unproved: Array<{ site: FunctionSite; reason: string }>;
}

const hex = (a: bigint | number) => `0x${a.toString(16)}`;

/** Whether x86-64 code begins with an unconditional direct jump (`jmp rel8/rel32`, with a BND or NOTRACK prefix). */
const jumpsOnly = (b: Uint8Array): boolean => {
  let i = 0;
  while (i < b.length && (b[i] === 0xf2 || b[i] === 0x3e)) i++;
  return b[i] === 0xeb || b[i] === 0xe9;
};

function describe(s: FunctionSite): string {
  return `the inlined copy ${hex(s.address)} in ${s.caller ?? '?'}${s.file ? ` (${s.file.replace(/^.*\//, '')}:${s.line ?? '?'})` : ''}`;
}

/** Flat [lo, hi, lo, hi…] code ranges as [lo, hi) pairs. */
function pairs(flat: readonly number[]): Array<[bigint, bigint]> {
  const out: Array<[bigint, bigint]> = [];
  for (let i = 0; i + 1 < flat.length; i += 2) out.push([addressBig(flat[i]), addressBig(flat[i + 1])]);
  return out;
}

/** The copy's own code ranges: the site's (fragments of the same call included), else its DIE's. */
function copyRanges(s: FunctionSite, codeRangesOf: (die: number) => number[]): Array<[bigint, bigint]> {
  return pairs(s.ranges ?? codeRangesOf(s.dieOffset));
}

/** The source call a copy stands for (the copy or function around it, call file:line:column) and whether DWARF marks its entry. */
function callOf(
  dw: Awaited<ReturnType<typeof siteContext>>['access']['dwarf'],
  s: FunctionSite,
  parentOf: ReadonlyMap<number, number>,
): { call?: string; marked?: boolean } {
  try {
    const d = dw.dieAt(s.dieOffset);
    const parent = parentOf.get(s.dieOffset);
    const line = num(d, AT.call_line);
    if (parent === undefined || line === undefined) return { marked: d.has(AT.entry_pc) };
    return { call: `${parent}:${num(d, AT.call_file) ?? 0}:${line}:${num(d, AT.call_column) ?? 0}`, marked: d.has(AT.entry_pc) };
  } catch {
    return {};
  }
}

/**
 * The prototype's integer argument registers of a call in the holder (see InlinedEntryQuery.argumentsOf): for a call
 * through a PLT stub (a function of another object), its DWARF call site's callee; for a call of a function's own
 * entry, that function's own DIE (a clone GCC changed the arguments of has another entry); else unknown.
 */
function argumentsIn(index: BinaryIndex, dw: Awaited<ReturnType<typeof siteContext>>['access']['dwarf'], holder: number) {
  let sites: Map<number, number> | undefined;
  return (returnAddress: bigint, target: bigint, external: boolean): number | undefined => {
    try {
      if (!external) {
        const fn = index.functionContaining(target);
        return fn?.address === target && fn.dieOffset >= 0 ? integerArguments(dw, fn.dieOffset) : undefined;
      }
      sites ??= callSitesIn(dw, holder);
      const origin = sites.get(Number(returnAddress));
      return origin === undefined ? undefined : integerArguments(dw, origin);
    } catch {
      return undefined;
    }
  };
}

/**
 * An out-of-line site whose first instruction the kernel refuses a uprobe on (a LOCK prefix: `Arc::clone`'s `lock
 * incq`, an atomic counter), moved to the next instruction that only it leads to, which runs exactly as often; or
 * why it cannot be armed. A site the kernel takes is returned as it is.
 */
function armableOutOfLine(s: FunctionSite, f: IndexedFunction, image: CodeImage): FunctionSite | string {
  const ranges =
    s.ranges && s.ranges.length > 0
      ? pairs(s.ranges)
      : s.address === f.address && f.size > 0
        ? [[s.address, s.address + BigInt(f.size)] as [bigint, bigint]]
        : [];
  const at = probeableAddress(image, s.address, ranges);
  return typeof at === 'string' || at === s.address ? (typeof at === 'string' ? at : s) : { ...s, address: at, fileOffset: undefined };
}

type CodeImage = { functionBytes(r: { address: bigint; size: bigint }): Uint8Array };

/**
 * `address` if the kernel takes a uprobe there, else the next instruction that only it leads to (within `ranges`,
 * the code it is part of), which runs exactly as often; or why there is none.
 */
function probeableAddress(image: CodeImage, address: bigint, ranges: Array<[bigint, bigint]>): bigint | string {
  const read = (a: bigint, size: number) => {
    try {
      return image.functionBytes({ address: a, size: BigInt(size) });
    } catch {
      return undefined;
    }
  };
  const first = read(address, 15);
  const refusal = first && kernelRefusal([{ start: address, bytes: first }], address);
  if (!refusal) return address;
  const why = refusalSentence(refusal, `the instruction at ${hex(address)}`);
  if (ranges.length === 0) return `${why}, and its code's extent is not known`;
  try {
    const host = ranges.map(([lo, hi]) => ({ start: lo, bytes: image.functionBytes({ address: lo, size: hi - lo }) }));
    const g = build({ host, readData: read });
    const n = g.at.get(address);
    const r = n === undefined ? undefined : probeableFrom(g, host, n);
    return r?.ok ? g.insns[r.at].address : `${why}, and the instruction after it is also reached from elsewhere`;
  } catch (e) {
    if (e instanceof Unavailable) return `${why}, and its code cannot be followed: ${e.message}`;
    throw e;
  }
}

/**
 * Where a line probe at `address` in `fn` can be armed: there, or after the LOCK-prefixed instructions the kernel
 * refuses (see probeableAddress); or why nowhere. x86-64 user code only.
 */
export async function probeableLineAddress(
  index: BinaryIndex,
  fn: IndexedFunction | undefined,
  address: bigint,
  debugDirs?: string[],
): Promise<bigint | string> {
  if (index.arch !== 'x86_64' || kernelOf(index)) return address;
  const { image } = (await siteContext(index, debugDirs)).access;
  const entry = fn?.sites.find((s) => s.kind === 'entry' && s.address === fn.address);
  const ranges =
    entry?.ranges && entry.ranges.length > 0
      ? pairs(entry.ranges)
      : fn?.address !== undefined && fn.size > 0
        ? [[fn.address, fn.address + BigInt(fn.size)] as [bigint, bigint]]
        : [];
  return probeableAddress(image, address, ranges);
}

/** Why the kernel's uprobes cannot take the instruction at `address` (see kernelRefusal), if they cannot. */
export async function instructionRefusal(index: BinaryIndex, address: bigint, debugDirs?: string[]): Promise<'prefix' | 'vex' | undefined> {
  if (index.arch !== 'x86_64' || kernelOf(index)) return undefined;
  const { image } = (await siteContext(index, debugDirs)).access;
  let first: Uint8Array;
  try {
    first = image.functionBytes({ address, size: 15n });
  } catch {
    return undefined;
  }
  return kernelRefusal([{ start: address, bytes: first }], address);
}

const linesOf = new WeakMap<object, Map<bigint, string | undefined>>();

/** Where the calls of `f`'s inlined copies begin, holder by holder (see inlinedEntries.ts). */
export async function provedEntrySites(
  index: BinaryIndex,
  f: IndexedFunction,
  sites: FunctionSite[],
  debugDirs?: string[],
): Promise<ProvedEntries> {
  const inlined = sites.filter((s) => s.kind === 'inlined');
  // Uprobes only: a kprobe takes a LOCK-prefixed instruction.
  const uprobes = index.arch === 'x86_64' && !kernelOf(index);
  if (inlined.length === 0 && !uprobes) return { sites, notes: [], lowerBound: false, unproved: [] };
  const ctx = await siteContext(index, debugDirs);
  const { dwarf: dw, image } = ctx.access;
  const byHolder = new Map<number, FunctionSite[]>();
  const notes: string[] = [];
  const unproved: ProvedEntries['unproved'] = [];
  let lowerBound = false;
  const out: FunctionSite[] = [];
  for (const s of sites.filter((x) => x.kind !== 'inlined')) {
    const moved = uprobes ? armableOutOfLine(s, f, image) : s;
    if (typeof moved !== 'string') out.push(moved);
    else {
      lowerBound = true;
      unproved.push({ site: s, reason: moved });
      notes.push(`the ${s.kind} ${hex(s.address)} is not armed: ${moved}`);
    }
  }
  if (inlined.length === 0) return { sites: out, notes: notes.map((n) => `${f.name}: ${n}`), lowerBound, unproved };
  for (const s of inlined) {
    const h = dw.enclosingSubprogram(s.dieOffset) ?? -1;
    byHolder.set(h, [...(byHolder.get(h) ?? []), s]);
  }
  const readData = (address: bigint, size: number): Uint8Array | undefined => {
    try {
      return image.functionBytes({ address, size: BigInt(size) });
    } catch {
      return undefined;
    }
  };
  const noReturn = noReturnTest(index, ctx);
  const noReturnProved = noReturnTest(index, ctx, true);
  // The entry analysis asks the line of each holder instruction in every round, and holders recur across functions.
  let lines = linesOf.get(dw);
  if (!lines) linesOf.set(dw, (lines = new Map()));
  const known = lines;
  const lineOf = (address: bigint): string | undefined => {
    if (known.has(address)) return known.get(address);
    const r = dw.lineAt(addressNumber(address));
    const line = r && `${r.file}:${r.line}`;
    known.set(address, line);
    return line;
  };
  const ownAddresses = new Set(sites.filter((s) => s.kind !== 'inlined').map((s) => s.address));
  if (f.address !== undefined) ownAddresses.add(f.address);
  for (const [holder, copies] of byHolder) {
    const hostEntry = holder < 0 ? undefined : entryByDie(index).get(holder);
    let q: InlinedEntryQuery | undefined;
    if (hostEntry !== undefined) {
      const hostFlat = dw.codeRangesOf(holder);
      const host: HostRange[] = [];
      for (let i = 0; i < hostFlat.length; i += 2) {
        const address = addressBig(hostFlat[i]);
        host.push({ start: address, bytes: image.functionBytes({ address, size: BigInt(hostFlat[i + 1] - hostFlat[i]) }) });
      }
      const mine = new Set(copies.map((c) => c.dieOffset));
      const inHolder = dw.inlinedCopiesIn(holder);
      const others = inHolder.filter((o) => !mine.has(o.die) && o.ranges.length > 0).map((o) => pairs(o.ranges));
      const parentOf = new Map(inHolder.map((o) => [o.die, o.parent]));
      q = {
        arch: index.arch,
        kprobes: !uprobes,
        host,
        hostEntry,
        copies: copies.map((c) => ({ entry: c.address, ranges: copyRanges(c, (d) => dw.codeRangesOf(d)), ...callOf(dw, c, parentOf) })),
        noReturn,
        readData,
        lineOf,
        others,
        ownAddresses,
        argumentsOf: argumentsIn(index, dw, holder),
      };
    }
    // Where the entries are unproved, callees proved never to return from their own code end paths too.
    const found = q ? findInlinedEntriesProving(q, noReturnProved) : undefined;
    if (found) q = found.query;
    const r: ReturnType<typeof findInlinedEntries> = found
      ? found.result
      : { ok: false, category: 'undecodable', reason: 'the function it is inlined into has no code of its own in the index' };
    const mine: FunctionSite[] = [];
    const mineCopy: number[] = []; // the copy (index into copies) each armed site is of
    if (!r.ok) {
      // Not proved: DWARF's entry pcs, one per address, and the count says it may be short.
      lowerBound = true;
      const seen = new Set<bigint>();
      for (const c of copies) {
        unproved.push({ site: c, reason: r.reason });
        // An entry the analysis found running again while a call is open would count more than the calls.
        if (seen.has(c.address) || (r.category === 'double' && r.address === c.address)) continue;
        seen.add(c.address);
        // A probe the kernel refuses (inlinedExits.ts) would be defined and never fire: not armed, and said.
        const first = index.arch === 'x86_64' ? readData(c.address, 15) : undefined;
        const refusal = uprobes && first ? kernelRefusal([{ start: c.address, bytes: first }], c.address) : undefined;
        if (refusal) {
          notes.push(`${describe(c)} is not armed: ${refusalSentence(refusal, 'its first instruction')}`);
          continue;
        }
        // Unproved, an entry pc that is only a jump may be the caller's jump to code it shares with the copy (LLVM
        // gives it the copy's location), run on paths that make no call: arming it could count more than the calls.
        if (first && jumpsOnly(first)) {
          notes.push(`${describe(c)} is not armed: its entry pc is only a jump, which without a proof may run where no call begins`);
          continue;
        }
        mine.push(c);
        mineCopy.push(copies.indexOf(c));
      }
      notes.push(
        `entries not proved at ${copies.length} inlined cop${copies.length === 1 ? 'y' : 'ies'} in ${copies[0].caller ?? '?'}: ${r.reason}`,
      );
    } else {
      for (const e of r.entries) {
        const c = copies[e.copy];
        mine.push(e.address === c.address ? c : { ...c, address: e.address, fileOffset: undefined });
        mineCopy.push(e.copy);
      }
      for (const m of r.merged)
        notes.push(
          `${describe(copies[m.copy])} is armed once with ${describe(copies[m.into])} (${m.why === 'same-address' ? 'one address' : 'its entry runs into the other with no call between'})`,
        );
      for (const n of r.notArmed) {
        lowerBound = true;
        unproved.push({ site: copies[n.copy], reason: n.reason });
        notes.push(`${describe(copies[n.copy])} ${n.armed ? 'may miss calls' : 'is not armed'}: ${n.reason}`);
      }
    }
    // Counts never exceed calls: a site another armed site reaches within one call is left out (contracts.md,
    // "Function sites"). Independent of how the sites were placed, so it also guards the unproved ones.
    const check = q
      ? twoSitesOneCall(
          q,
          mine.map((x, i) => ({ address: x.address, copy: mineCopy[i] })),
        )
      : undefined;
    for (const v of check ?? []) {
      const k = mine.findIndex((x) => x.address === v.to);
      if (k < 0) continue;
      const [gone] = mine.splice(k, 1);
      mineCopy.splice(k, 1);
      lowerBound = true;
      unproved.push({ site: gone, reason: `it can run within the call begun at ${hex(v.from)}` });
      notes.push(`${describe(gone)} is not armed: it can run within the call begun at ${hex(v.from)} (it would count that call twice)`);
    }
    out.push(...mine);
  }
  const rank = { entry: 0, clone: 1, part: 2, inlined: 3 } as const;
  out.sort((a, b) => rank[a.kind] - rank[b.kind] || (a.address < b.address ? -1 : a.address > b.address ? 1 : 0));
  return { sites: out, notes: notes.map((n) => `${f.name}: ${n}`), lowerBound, unproved };
}

// The exits of one inlined site of an indexed binary: its own code ranges and its enclosing function's (from
// DWARF), their bytes, and which direct calls never return, handed to findInlinedExits.
import type { BinaryIndex } from '../index/binaryIndex';
import type { FunctionSite } from '../index/model';
import { inherited } from '../dwarf/functions';
import { findInlinedExits, type HostRange, type InlinedExits } from './inlinedExits';
import { kernelOf } from './kernelProbes';
import { LayoutNoReturn, type CodeRange } from './layoutNoReturn';
import { ProvedNoReturn } from './provedNoReturn';
import { siteContext, type SiteContext } from './variables';
import { addressBig } from '../dwarf/format';

const DW_AT_NORETURN = 0x87;

// Functions that never return though a libc header may not say so to DWARF (and PLT stubs have no DIE to ask).
const NO_RETURN = new Set([
  'abort',
  'exit',
  '_exit',
  '_Exit',
  'quick_exit',
  '__assert_fail',
  '__stack_chk_fail',
  '__fortify_fail',
  '__chk_fail',
  'pthread_exit',
  'longjmp',
  'siglongjmp',
  '__longjmp_chk',
  '__cxa_throw',
  '__cxa_rethrow',
  '_Unwind_Resume',
  'runtime.gopanic',
  'runtime.throw',
  'runtime.panicIndex',
]);

/** Entry address of each out-of-line copy's subprogram DIE (entry, clone, part), per index. */
const entries = new WeakMap<BinaryIndex, Map<number, bigint>>();

export function entryByDie(index: BinaryIndex): Map<number, bigint> {
  const known = entries.get(index);
  if (known) return known;
  const m = new Map<number, bigint>();
  index.forEachOwnSite((s) => s.dieOffset >= 0 && m.set(s.dieOffset, s.address));
  entries.set(index, m);
  return m;
}

/** Each out-of-line function copy's code ranges (.cold blocks included), listed and by entry address, per index. */
const rangesOfIndex = new WeakMap<BinaryIndex, { list: CodeRange[][]; byEntry: Map<bigint, CodeRange[]> }>();

function functionRanges(index: BinaryIndex, ctx: SiteContext): { list: CodeRange[][]; byEntry: Map<bigint, CodeRange[]> } {
  const known = rangesOfIndex.get(index);
  if (known) return known;
  const got: { list: CodeRange[][]; byEntry: Map<bigint, CodeRange[]> } = { list: [], byEntry: new Map() };
  const dw = ctx.access.dwarf;
  index.forEachOwnSite((s, size) => {
    const flat = s.ranges ?? (s.dieOffset >= 0 ? dw.codeRangesOf(s.dieOffset) : []);
    const ranges: CodeRange[] = [];
    for (let i = 0; i + 1 < flat.length; i += 2) ranges.push({ start: addressBig(flat[i]), end: addressBig(flat[i + 1]) });
    if (ranges.length === 0 && s.kind === 'entry' && size > 0) ranges.push({ start: s.address, end: s.address + BigInt(size) });
    if (ranges.length === 0) return;
    got.list.push(ranges);
    if (!got.byEntry.has(s.address)) got.byEntry.set(s.address, ranges);
  });
  rangesOfIndex.set(index, got);
  return got;
}

function reader(ctx: SiteContext): (start: bigint, size: number) => Uint8Array | undefined {
  return (start, size) => {
    try {
      return ctx.access.image.functionBytes({ address: start, size: BigInt(size) });
    } catch {
      return undefined; // not in a loaded segment
    }
  };
}

/** Callees the compiler treated as never returning (see layoutNoReturn.ts), per index. */
const byLayout = new WeakMap<BinaryIndex, LayoutNoReturn>();

function neverReturnsByLayout(index: BinaryIndex, ctx: SiteContext): LayoutNoReturn {
  let set = byLayout.get(index);
  if (set) return set;
  set = new LayoutNoReturn(functionRanges(index, ctx).list, reader(ctx), (t) => index.functionContaining(t)?.address === t);
  byLayout.set(index, set);
  return set;
}

/** Callees proved never to return from their own code (see provedNoReturn.ts), per index. */
const byProof = new WeakMap<BinaryIndex, ProvedNoReturn>();

/**
 * Whether a direct call to `target` never returns: a function known not to (by name: libc's, the runtimes'), one
 * DWARF marks DW_AT_noreturn, one the compiler laid out as never returning (layoutNoReturn.ts), or (with `proved`)
 * one whose own code never returns (provedNoReturn.ts). Entries ask for the last where the rest leaves a holder
 * unproved (entrySites.ts); exits do not yet: ending paths there leaves code only the old paths reached, which the
 * exit proof takes to run in either state (in the instrumented redis 49 fewer inlined copies would have proved exits:
 * 65 more `unpaired`, 17 fewer `shared-target`).
 */
export function noReturnTest(index: BinaryIndex, ctx: SiteContext, proved = false): (target: bigint) => boolean {
  const dw = ctx.access.dwarf;
  const known = (target: bigint): boolean => {
    const fn = index.functionContaining(target);
    if (!fn || fn.address !== target) return false;
    if (NO_RETURN.has(fn.name) || fn.aliases?.some((a) => NO_RETURN.has(a))) return true;
    if (neverReturnsByLayout(index, ctx).has(target)) return true;
    if (fn.dieOffset < 0) return false;
    return inherited(dw, dw.dieAt(fn.dieOffset), (d) => (d.has(DW_AT_NORETURN) ? true : undefined)) === true;
  };
  if (!proved) return known;
  let proof = byProof.get(index);
  if (!proof) {
    const { byEntry } = functionRanges(index, ctx);
    proof = new ProvedNoReturn((t) => byEntry.get(t), reader(ctx), known);
    byProof.set(index, proof);
  }
  const judge = proof;
  return (target) => known(target) || judge.has(target);
}

/** Where calls of the inlined copy `site` end, or why that cannot be known (see inlinedExits.ts). */
export async function inlinedSiteExits(index: BinaryIndex, site: FunctionSite, debugDirs?: string[]): Promise<InlinedExits> {
  const ctx = await siteContext(index, debugDirs);
  const { dwarf: dw, image } = ctx.access;
  const flat = dw.codeRangesOf(site.dieOffset);
  const copy: Array<[bigint, bigint]> = [];
  for (let i = 0; i < flat.length; i += 2) copy.push([addressBig(flat[i]), addressBig(flat[i + 1])]);
  const holder = dw.enclosingSubprogram(site.dieOffset);
  const hostEntry = holder === undefined ? undefined : entryByDie(index).get(holder);
  if (holder === undefined || hostEntry === undefined)
    return { ok: false, category: 'undecodable', reason: 'the function it is inlined into has no code of its own in the index' };
  const hostFlat = dw.codeRangesOf(holder);
  const host: HostRange[] = [];
  for (let i = 0; i < hostFlat.length; i += 2) {
    const address = addressBig(hostFlat[i]);
    host.push({ start: address, bytes: image.functionBytes({ address, size: BigInt(hostFlat[i + 1] - hostFlat[i]) }) });
  }
  const readData = (address: bigint, size: number): Uint8Array | undefined => {
    try {
      return image.functionBytes({ address, size: BigInt(size) });
    } catch {
      return undefined; // not in a loaded segment: no table there
    }
  };
  const kprobes = kernelOf(index) !== undefined;
  return findInlinedExits({
    arch: index.arch,
    host,
    hostEntry,
    copy,
    entry: site.address,
    noReturn: noReturnTest(index, ctx),
    readData,
    kprobes,
  });
}

/** "returns unavailable at N inlined copies: reason; …" for the copies whose exits could not be proved. */
export function unavailableNote(copies: ReadonlyArray<{ reason: string }>): string {
  const n = copies.length;
  const shown = copies.slice(0, 3).map((c) => c.reason);
  return (
    `returns are unavailable at ${n} inlined cop${n === 1 ? 'y' : 'ies'}, whose calls this return probe does not see (${shown.join('; ')}` +
    `${n > 3 ? `; and ${n - 3} more` : ''})`
  );
}

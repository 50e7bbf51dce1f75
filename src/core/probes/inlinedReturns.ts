// The exits of one inlined site of an indexed binary: its own code ranges and its enclosing function's (from
// DWARF), their bytes, and which direct calls never return, handed to findInlinedExits.
import type { BinaryIndex } from '../index/binaryIndex';
import type { FunctionSite } from '../index/model';
import { inherited } from '../dwarf/functions';
import { findInlinedExits, type HostRange, type InlinedExits } from './inlinedExits';
import { siteContext, type SiteContext } from './variables';

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
  let m = entries.get(index);
  if (!m) {
    m = new Map();
    for (const f of index.functions()) for (const s of f.sites) if (s.kind !== 'inlined' && s.dieOffset >= 0) m.set(s.dieOffset, s.address);
    entries.set(index, m);
  }
  return m;
}

export function noReturnTest(index: BinaryIndex, ctx: SiteContext): (target: bigint) => boolean {
  const dw = ctx.access.dwarf;
  return (target) => {
    const fn = index.functionContaining(target);
    if (!fn || fn.address !== target) return false;
    if (NO_RETURN.has(fn.name) || fn.aliases?.some((a) => NO_RETURN.has(a))) return true;
    if (fn.dieOffset < 0) return false;
    return inherited(dw, dw.dieAt(fn.dieOffset), (d) => (d.has(DW_AT_NORETURN) ? true : undefined)) === true;
  };
}

/** Where calls of the inlined copy `site` end, or why that cannot be known (see inlinedExits.ts). */
export async function inlinedSiteExits(index: BinaryIndex, site: FunctionSite, debugDirs?: string[]): Promise<InlinedExits> {
  const ctx = await siteContext(index, debugDirs);
  const { dwarf: dw, image } = ctx.access;
  const flat = dw.codeRangesOf(site.dieOffset);
  const copy: Array<[bigint, bigint]> = [];
  for (let i = 0; i < flat.length; i += 2) copy.push([BigInt(flat[i]), BigInt(flat[i + 1])]);
  const holder = dw.enclosingSubprogram(site.dieOffset);
  const hostEntry = holder === undefined ? undefined : entryByDie(index).get(holder);
  if (holder === undefined || hostEntry === undefined)
    return { ok: false, category: 'undecodable', reason: 'the function it is inlined into has no code of its own in the index' };
  const hostFlat = dw.codeRangesOf(holder);
  const host: HostRange[] = [];
  for (let i = 0; i < hostFlat.length; i += 2) {
    const address = BigInt(hostFlat[i]);
    host.push({ start: address, bytes: image.functionBytes({ address, size: BigInt(hostFlat[i + 1] - hostFlat[i]) }) });
  }
  const readData = (address: bigint, size: number): Uint8Array | undefined => {
    try {
      return image.functionBytes({ address, size: BigInt(size) });
    } catch {
      return undefined; // not in a loaded segment: no table there
    }
  };
  return findInlinedExits({ arch: index.arch, host, hostEntry, copy, entry: site.address, noReturn: noReturnTest(index, ctx), readData });
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

// The variables visible at a probe site and where each is at that address, as tracefs fetch text: what
// `probelens vars` lists and what "Trace this line" offers.
// Tests: test/unit/cli/inspect.test.ts, test/unit/core/probes/inlinedEntries.fixture.test.ts, test/unit/vscode/model/structFields.test.ts
import type { BinaryIndex } from '../index/binaryIndex';
import { openDebugAccess, type DebugAccess } from '../index/debugAccess';
import { callFrameInfo, type CallFrameInfo } from '../unwind';
import { registerName } from '../dwarf';
import { entryCfa, fetchForLocation, tracefsRegister, type FrameContext } from '../fetchargs/fetch';
import type { ResolvedSite } from './resolve';
import { addressBig, addressNumber } from '../dwarf/format';

export interface SiteVariable {
  name: string;
  type: string;
  /** Fetch argument text for the value, or "optimized out" / "unavailable: reason". */
  location: string;
  kind: 'param' | 'local';
  /** Type DIE offset, for field access (not serialised to users). */
  typeOffset?: number;
  /** The location is the calling convention's guess: DWARF gives none (IndexedParam.inferred). */
  inferred?: boolean;
}

export interface SiteContext {
  access: DebugAccess;
  cfi: CallFrameInfo | undefined;
}

const contexts = new WeakMap<BinaryIndex, Promise<SiteContext>>();

export function siteContext(index: BinaryIndex, debugDirs?: string[]): Promise<SiteContext> {
  let c = contexts.get(index);
  if (!c) {
    c = openDebugAccess(index.path, debugDirs).then((access) => ({ access, cfi: callFrameInfo(access.image) }));
    contexts.set(index, c);
  }
  return c;
}

/** Frame context at `pc`: the CFA from CFI (at a function's entry it is known without CFI). */
export function frameAt(ctx: SiteContext, index: BinaryIndex, fnDie: number, entryPc: number | undefined, pc: number): FrameContext {
  const arch = index.arch;
  const { dwarf, image } = ctx.access;
  let cfa: FrameContext['cfa'];
  if (pc === entryPc) cfa = entryCfa(arch);
  else {
    const rule = ctx.cfi?.cfaAt(pc);
    const reg = rule ? tracefsRegister(arch, registerName(arch, rule.reg)) : undefined;
    if (rule && reg) cfa = { reg, offset: rule.offset };
  }
  const frameBase = dwarf.frameBaseAt(fnDie, pc);
  return { arch, cfa, frameBase, fetchOffsetOf: (a) => image.fetchOffsetOf(addressBig(a), addressBig(pc)) };
}

export async function variablesAtSite(index: BinaryIndex, site: ResolvedSite, debugDirs?: string[]): Promise<SiteVariable[]> {
  const fn = site.fn;
  if (site.site && site.site.kind !== 'entry' && site.site.dieOffset >= 0 && (site.address === site.site.address || site.kind === 'line'))
    return variablesAtCopy(index, site, debugDirs);
  if (!fn || fn.dieOffset < 0) return [];
  const ctx = await siteContext(index, debugDirs);
  const pc = addressNumber(site.address);
  const entry = fn.address !== undefined ? addressNumber(fn.address) : undefined;
  const frame = frameAt(ctx, index, fn.dieOffset, entry, pc);
  const vars = ctx.access.dwarf.variablesAt(fn.dieOffset, pc);
  return vars.map((v): SiteVariable => {
    // At the entry pc, parameters come from the index, which applies the calling convention where DWARF's
    // location only becomes true after the prologue.
    if (pc === entry && v.kind === 'param') {
      const p = fn.params.find((x) => x.name === v.name);
      if (p) return { name: v.name, type: v.type, location: p.location, kind: 'param', typeOffset: v.typeOffset, inferred: p.inferred };
    }
    return siteVariable(v, frame);
  });
}

function siteVariable(v: ReturnType<DebugAccess['dwarf']['variablesAt']>[number], frame: FrameContext): SiteVariable {
  const r = fetchForLocation(v.location, frame);
  const location = r.ok ? (r.isValue ? r.fetch : r.address) : r.reason === 'optimized out' ? 'optimized out' : `unavailable: ${r.reason}`;
  return { name: v.name, type: v.type, location, kind: v.kind, typeOffset: v.typeOffset };
}

/**
 * At a clone, a part or an inlined copy, the variables are that copy's own (its DIE's children, with their own
 * location lists); no calling convention applies there, so whatever DWARF does not say is unavailable.
 */
async function variablesAtCopy(index: BinaryIndex, site: ResolvedSite, debugDirs?: string[]): Promise<SiteVariable[]> {
  const copy = site.site!;
  const ctx = await siteContext(index, debugDirs);
  const pc = addressNumber(site.address);
  // An inlined copy's frame base is its enclosing subprogram's; a clone or part is its own subprogram.
  const holder = copy.kind === 'inlined' ? index.functionContaining(site.address) : undefined;
  const frameDie = copy.kind === 'inlined' ? (holder && holder.dieOffset >= 0 ? holder.dieOffset : copy.dieOffset) : copy.dieOffset;
  const frame = frameAt(ctx, index, frameDie, copy.kind === 'inlined' ? undefined : addressNumber(copy.address), pc);
  // GCC's location views: at an inlined copy's entry pc several location entries may start; the call begins at
  // the copy's entry view. Elsewhere in the copy (a line probe) the machine state at the pc is view 0's.
  const view = copy.kind === 'inlined' && pc === addressNumber(copy.address) ? ctx.access.dwarf.entryViewOf(copy.dieOffset) : 0;
  return ctx.access.dwarf.variablesAt(copy.dieOffset, pc, view).map((v) => siteVariable(v, frame));
}

/**
 * Parameters and locals visible at `address` and where each is there (fetch text or why not), decoded on demand
 * from the binary's DWARF (the full index does not hold locals).
 */
export async function variablesAtAddress(
  index: BinaryIndex,
  address: bigint,
  debugDirs?: string[],
): Promise<Array<{ name: string; type: string; location: string; kind: 'param' | 'local' }>> {
  const fn = index.functionContaining(address);
  if (!fn) return [];
  const at = index.lineForAddress(address);
  const kind = address === fn.address ? 'entry' : 'line';
  return (await variablesAtSite(index, { kind, fn, address, file: at?.file, line: at?.line }, debugDirs)).map(
    ({ name, type, location, kind: k }) => ({ name, type, location, kind: k }),
  );
}

// The probe compiler: probe specs + a binary's index → uprobe definitions (structures, rendered to tracefs text
// only when sent), computed entirely on the user's side (perf probe -D's idea) so only definitions travel to a
// target. A spec's sites share one tracefs event as its probe points (see sharePoints).
import type { BinaryIndex } from '../index/binaryIndex';
import type { IndexedUsdt } from '../index/model';
import { eventName, UNBOUND_GROUP, uniqueEventName, type FetchArg, type ProbeDefinition } from './definition';
import { compileArg, entryVars, retvalArg, withStringHeads, type CompiledArg } from './args';
import { ArgError } from './places';
import { resolvePoint, ResolveError, type ResolvedSite } from './resolve';
import { findReturnSites } from './returns';
import { inlinedSiteExits, unavailableNote } from './inlinedReturns';
import { instructionRefusal, probeableLineAddress, provedEntrySites } from './entrySites';
import { refusalSentence } from './inlinedExits';
import { parseSpec, type ProbeSpec } from './spec';
import { siteContext, variablesAtSite } from './variables';
import type { ProbeKind } from '../../shared/hit';
import { describeSite } from '../../shared/hitText';
import { GOROUTINE_ARG, pairKey, siteAddress, toSite, type Site } from '../../shared/site';
import { CompileError, DEFAULT_MAX_SITES, TooManySitesError } from './sites';
import { refusedSitesNote } from './kernel';
import { CALLER_ARG, kernelOf, kernelProbe, KernelRefusal, readKernelOf } from './kernelProbes';
import { nameRecord } from '../../shared/names';

export { CALLER_ARG, kernelOf } from './kernelProbes';

export { GO_STRING_PREVIEW, STRING_HEAD_BYTES, type CompiledArg } from './args';
export { CompileError, DEFAULT_MAX_SITES, DISARM_MS_PER_SITE, teardownText, TooManySitesError } from './sites';

/**
 * One probe point: a site of a spec (or one exit of it) and its definition. Points of one spec that fetch the
 * same argument names and types share one tracefs event (`definition.event`); `event` is the point's own name,
 * unique in the session, which its hits carry as `probe`.
 */
export interface CompiledProbe {
  event: string;
  group: string;
  definition: ProbeDefinition;
  /** The point's number among the points of its tracefs event (the record's `probelens_site`), when there are several. */
  siteId?: number;
  kind: ProbeKind;
  /** The spec text it came from, and which probe of a multi-site spec this is. */
  spec: string;
  function?: string;
  file?: string;
  line?: number;
  address: bigint;
  fileOffset: bigint;
  args: CompiledArg[];
  /** Entry and return probes of one function share a key, for latency pairing. */
  pairKey?: string;
  /** What pairs entry with return: the thread, or on Go the goroutine (the `g` pointer in R14). */
  pairBy: 'tid' | 'goroutine';
  /** Arguments left out and why (optimized out at this address, …). */
  warnings: string[];
  /** Which copy of the function's code this event is armed on; every hit of the event carries it. */
  site?: Site;
  /** Arguments of the spec this site cannot fetch (the copy dropped the parameter, …) and why. */
  unavailable?: Array<{ name: string; reason: string }>;
  /**
   * Some calls of the function may go uncounted (inlined copies whose entries, or for a return probe exits, could not
   * be proved; see warnings).
   */
  lowerBound?: true;
  /** A kernel probe's source of truth: the vmlinux's DWARF, or the running kernel's BTF and kallsyms (kernelBtf.ts). */
  kernelSource?: 'dwarf' | 'btf';
}

export interface CompileOptions {
  /** Default UNBOUND_GROUP: a session binds the definitions to its agent's group when it sends them. */
  group?: string;
  /** Event names already taken in the session (probes added to a running session get fresh ones). */
  usedEvents?: Set<string>;
  /** The binary's path on the target (defaults to the index's local path). */
  targetPath?: string;
  debugDirs?: string[];
  /** The target kernel supports semaphore (REF_CTR_OFFSET) probes (README mentions ref_ctr_offset). */
  refCtrOffset?: boolean;
  /** A spec resolving to more sites than this is refused with TooManySitesError (default DEFAULT_MAX_SITES). */
  maxSites?: number;
  /** The target kernel supports immediate fetch arguments (`\\imm`), which constants folded by the compiler need. */
  immediates?: boolean;
  /** Site addresses ("0x…", as ProbeSite.address) not to arm. */
  disabledSites?: ReadonlySet<string>;
  /**
   * Whether each spec's points share events (default true, with immediates); false leaves every point an event of
   * its own, for a caller that shares them across specs itself (sharePoints).
   */
  shareEvents?: boolean;
  /** Kernel function entries also fetch their return address (CALLER_ARG), for counts by caller (`--by caller`). */
  callers?: boolean;
}

interface Ctx {
  index: BinaryIndex;
  opts: CompileOptions;
  used: Set<string>;
  go: boolean;
}

export async function compileProbes(specs: Array<string | ProbeSpec>, index: BinaryIndex, opts: CompileOptions): Promise<CompiledProbe[]> {
  const ctx: Ctx = { index, opts, used: opts.usedEvents ?? new Set(), go: index.isGo };
  // A kernel image's sites become kprobes (kernel.ts); only an ET_EXEC, or an ET_REL module (a .ko), can be one.
  if (index.data.elfType === 'EXEC' || index.data.elfType === 'REL') await readKernelOf(index, opts.debugDirs);
  const out: CompiledProbe[] = [];
  for (const s of specs) {
    const spec = typeof s === 'string' ? parseSpec(s) : s;
    try {
      out.push(...(await compileSpec(spec, ctx)));
    } catch (e) {
      if (e instanceof ResolveError || e instanceof ArgError) throw new CompileError(spec.text, e.message);
      throw e;
    }
  }
  return out;
}

async function compileSpec(spec: ProbeSpec, ctx: Ctx): Promise<CompiledProbe[]> {
  const disabled = ctx.opts.disabledSites;
  if (spec.point.kind === 'function' && spec.point.module !== undefined) {
    // `MODULE:FUNC` on a module's .ko names that module; anywhere else it names nothing this binary holds.
    const own = kernelOf(ctx.index)?.module;
    if (own === undefined)
      throw new ResolveError(
        `${spec.point.module}:${spec.point.func} names a kernel module's function: give that module's .ko (with its debug information) or 'kernel', not ${ctx.index.path}`,
      );
    if (own !== spec.point.module) throw new ResolveError(`${ctx.index.path} is the module ${own}, not ${spec.point.module}`);
  }
  const proved = await provedEntries(spec, resolvePoint(spec.point, ctx.index), ctx);
  const { notes, lowerBound } = proved;
  const resolved = await probeablePoints(spec, proved.resolved, ctx, notes);
  const sites = disabled?.size ? resolved.filter((s) => !s.site || !disabled.has(siteAddress(s.address))) : resolved;
  if (sites.length === 0)
    throw new ResolveError(
      resolved.length > 0
        ? `every site of this spec is disabled`
        : `none of its copies' entries can be proved, so none is armed: ${[...notes.values()].flat().join('; ') || 'no reason was given'}`,
    );
  // With several sites an argument a copy does not have is left out there, not a reason to refuse the spec.
  const lenient = sites.filter((s) => s.site).length > 1;
  const out: CompiledProbe[] = [];
  const noReturns: Array<{ site: ResolvedSite; reason: string }> = [];
  // Disarming costs the kernel one synchronisation per event: with immediates a spec's sites share events
  // (sharePoints), so its teardown no longer grows with its sites; without them each site is an event of its own.
  const limit = ctx.opts.immediates === false ? (ctx.opts.maxSites ?? DEFAULT_MAX_SITES) : Number.POSITIVE_INFINITY;
  if (sites.length > limit) throw new TooManySitesError(spec.text, sites.length, limit);
  const refused: Array<{ site: ResolvedSite; reason: string }> = [];
  for (const site of sites) {
    try {
      if (site.kind === 'usdt') out.push(compileUsdt(spec, site.usdt!, ctx));
      else if (site.kind === 'return' && site.site?.kind === 'inlined') {
        const r = await compileInlinedReturns(spec, site, ctx, lenient);
        if ('reason' in r) noReturns.push({ site, reason: r.reason });
        else out.push(...r);
      } else if (site.kind === 'return' && ctx.go) out.push(...(await compileGoReturns(spec, site, ctx)));
      else out.push(await compileSite(spec, site, ctx, lenient));
    } catch (e) {
      // A site of many that the kernel must not be probed at (a copy in .noinstr.text) is left out, and named.
      if (!(e instanceof KernelRefusal) || sites.length < 2) throw e;
      refused.push({ site, reason: e.why });
    }
  }
  if (refused.length > 0 && out.length === 0) throw new ResolveError(`cannot probe the kernel at any site: ${refused[0].reason}`);
  for (const fn of new Set(refused.map((r) => r.site.fn?.name))) {
    const mine = refused.filter((r) => r.site.fn?.name === fn).map((r) => ({ where: whereSite(r.site), why: r.reason }));
    for (const p of out) if (p.function === fn) p.warnings.push(refusedSitesNote(fn ?? spec.text, mine));
    for (const p of out) if (p.function === fn) p.lowerBound = true;
  }
  if (lenient) {
    for (const a of spec.args) {
      const missing = out.map((p) => p.unavailable?.find((u) => u.name === a.name));
      if (missing.every((m) => m !== undefined)) throw new ArgError(missing[0]!.reason);
    }
  }
  for (const [fn, list] of notes) for (const p of out) if (p.function === fn) p.warnings.push(...list);
  for (const p of out) if (p.function !== undefined && lowerBound.has(p.function)) p.lowerBound = true;
  if (noReturns.length > 0) {
    // Never silently fewer: a copy whose exits cannot be proved is named, and so is why.
    if (out.length === 0) throw new ResolveError(`the returns of this spec cannot be probed: ${unavailableNote(noReturns)}`);
    for (const fn of new Set(noReturns.map((n) => n.site.fn!))) {
      const note = unavailableNote(noReturns.filter((n) => n.site.fn === fn));
      // The returns there go uncounted: the function's count of returns is a lower bound.
      for (const p of out)
        if (p.function === fn.name) {
          p.warnings.push(`${fn.name}: ${note}`);
          p.lowerBound = true;
        }
    }
  }
  return ctx.opts.immediates === false || ctx.opts.shareEvents === false ? out : sharePoints(out, ctx.used);
}

/** The hidden immediate that names a record's point among the points of a shared event. */
export const SITE_ARG = 'probelens_site';

/**
 * One tracefs event per group of points (a spec's, or a whole session's: see CompileOptions.shareEvents) that fetch the same argument names and types (kernel rule
 * for appending a point to an event), named after the probe (`<fn>`, `<fn>__return`, `<file>_L<line>`: the plain
 * name its entry point has, or a fresh one when that point is not in the group); each point then also fetches its number as
 * the immediate SITE_ARG, which its records carry and the session maps back to the point (and so to its site).
 * USDT probes stay one event each.
 */
export function sharePoints(probes: CompiledProbe[], used: Set<string>): CompiledProbe[] {
  const groups = new Map<string, CompiledProbe[]>();
  for (const p of probes) {
    if (p.kind === 'usdt') continue;
    const key = [p.kind, p.definition.kind, ...p.definition.args.map((a) => `${a.name}:${a.type ?? ''}`)].join(' ');
    const g = groups.get(key);
    if (g) g.push(p);
    else groups.set(key, [p]);
  }
  for (const g of groups.values()) {
    if (g.length < 2) continue;
    const p0 = g[0];
    const base =
      (p0.kind === 'line' ? lineBaseName(p0.file, p0.line) : (p0.function ?? 'probe')) + (p0.kind === 'return' ? '__return' : '');
    const event = g.some((p) => p.event === eventName(base)) ? eventName(base) : uniqueEventName(base, used);
    g.forEach((p, i) => {
      const fetch = `\\${i}`;
      p.siteId = i;
      p.args = [...p.args, { name: SITE_ARG, fetch, type: 'u32', display: 'unsigned', hidden: true }];
      p.definition = { ...p.definition, event, args: [...p.definition.args, { name: SITE_ARG, fetch, type: 'u32' }] };
    });
  }
  return probes;
}

/**
 * A function entry probe arms each inlined copy where its calls are proved to begin (entrySites.ts), not at one
 * DWARF entry pc per DIE; what could not be proved is said in the probes' warnings.
 */
async function provedEntries(
  spec: ProbeSpec,
  resolved: ResolvedSite[],
  ctx: Ctx,
): Promise<{ resolved: ResolvedSite[]; notes: Map<string, string[]>; lowerBound: Set<string> }> {
  const p = spec.point;
  const notes = new Map<string, string[]>();
  const lowerBound = new Set<string>();
  if (p.kind !== 'function' || p.ret || p.relLine !== undefined || p.offset !== undefined) return { resolved, notes, lowerBound };
  const out: ResolvedSite[] = [];
  for (const fn of new Set(resolved.map((r) => r.fn!))) {
    const mine = resolved.filter((r) => r.fn === fn);
    // Out-of-line sites are checked too on x86-64 user code: the kernel refuses a uprobe on a LOCK prefix.
    const uprobeX86 = ctx.index.arch === 'x86_64' && !kernelOf(ctx.index);
    if (!mine.some((r) => r.site?.kind === 'inlined') && !(uprobeX86 && mine.every((r) => r.site))) {
      out.push(...mine);
      continue;
    }
    const proved = await provedEntrySites(
      ctx.index,
      fn,
      mine.map((r) => r.site!),
      ctx.opts.debugDirs,
    );
    const template = mine[0];
    for (const s of proved.sites) out.push({ ...template, address: s.address, site: s });
    const list = [...proved.notes];
    if (proved.lowerBound) lowerBound.add(fn.name);
    if (proved.lowerBound) list.push(`${fn.name}: its count is a lower bound (calls at the copies named above may go uncounted)`);
    if (list.length) notes.set(fn.name, list);
  }
  return { resolved: out, notes, lowerBound };
}

const hex = (a: bigint) => `0x${a.toString(16)}`;

/**
 * Line points (and `FUNC:RLN`) on an instruction the kernel refuses a uprobe on (a LOCK prefix: `refs++` done
 * atomically) are armed at the next instruction only it leads to, which runs as often, and say so; one that has
 * none is left out with the reason. A `FUNC+OFFS` names its instruction exactly: there the refusal is the error.
 */
async function probeablePoints(spec: ProbeSpec, resolved: ResolvedSite[], ctx: Ctx, notes: Map<string, string[]>): Promise<ResolvedSite[]> {
  const p = spec.point;
  const line = p.kind === 'line' || (p.kind === 'function' && !p.ret && p.relLine !== undefined);
  const offset = p.kind === 'function' && !p.ret && p.offset !== undefined;
  if (!line && !offset) return resolved;
  const out: ResolvedSite[] = [];
  const said: string[] = [];
  // Warnings reach the probes of the function the address is in (see compileSpec).
  const say = (r: ResolvedSite, what: string) => {
    const key = r.fn?.name ?? spec.text;
    notes.set(key, [...(notes.get(key) ?? []), `${spec.text}: ${what}`]);
  };
  for (const r of resolved) {
    const at = await probeableLineAddress(ctx.index, r.fn, r.address, ctx.opts.debugDirs);
    if (at === r.address) out.push(r);
    else if (typeof at === 'string') {
      if (offset) throw new ResolveError(at);
      said.push(`${hex(r.address)} is not armed: ${at}`);
      say(r, said[said.length - 1]);
    } else {
      const why = (await instructionRefusal(ctx.index, r.address, ctx.opts.debugDirs)) ?? 'prefix';
      if (offset)
        throw new ResolveError(`${refusalSentence(why, `the instruction at ${hex(r.address)}`)}; ${hex(at)} after it runs as often`);
      said.push(
        why === 'prefix'
          ? `armed at ${hex(at)}, after the instruction at ${hex(r.address)} that the kernel refuses a uprobe on (a LOCK prefix)`
          : `armed at ${hex(at)}, after the instruction at ${hex(r.address)}, which uprobes step wrongly (VEX-encoded)`,
      );
      say(r, said[said.length - 1]);
      out.push({ ...r, address: at });
    }
  }
  if (out.length === 0 && resolved.length > 0) throw new ResolveError(said.join('; '));
  return out;
}

/** A line probe's name before any site suffix: the file's stem and the line, `sites_L93`. */
export function lineBaseName(file: string | undefined, line: number | undefined): string {
  return `${(file ?? 'line').replace(/^.*\//, '').replace(/\.[^.]*$/, '')}_L${line}`;
}

function baseName(site: ResolvedSite): string {
  if (site.kind === 'line') return lineBaseName(site.file, site.line);
  return site.fn?.name ?? 'probe';
}

function siteEventName(site: ResolvedSite): string {
  const s = site.site;
  if (!s || s.kind === 'entry') return baseName(site);
  return `${baseName(site)}_${s.kind}_${s.address.toString(16)}`;
}

async function compileSite(spec: ProbeSpec, site: ResolvedSite, ctx: Ctx, lenient = false): Promise<CompiledProbe> {
  const { index, opts } = ctx;
  const fn = site.fn!;
  const warnings: string[] = [];
  const unavailable: Array<{ name: string; reason: string }> = [];
  const args: CompiledArg[] = [];
  const isReturn = site.kind === 'return';
  const atEntry = site.kind === 'entry' && site.address === fn.address && (!site.site || site.site.kind === 'entry');
  const vars = atEntry ? entryVars(fn) : await variablesAtSite(index, site, opts.debugDirs);
  for (const a of spec.args) {
    try {
      args.push(...(await compileArg(a, site, fn, vars, ctx, warnings)));
    } catch (e) {
      if (!lenient || !(e instanceof ArgError)) throw e;
      unavailable.push({ name: a.name, reason: e.message });
      warnings.push(`${a.name} unavailable at ${whereSite(site)}: ${e.message}`);
    }
  }
  if (ctx.go && site.kind === 'entry') args.push(GOROUTINE);
  const fileOffset =
    (site.site?.address === site.address ? site.site.fileOffset : undefined) ??
    (site.address === fn.address && fn.fileOffset !== undefined ? fn.fileOffset : await fileOffsetOf(index, site.address, opts.debugDirs));
  const event = uniqueEventName(`${siteEventName(site)}${isReturn ? '__return' : ''}`, ctx.used);
  const s = site.site;
  return finish(
    {
      event,
      group: opts.group ?? UNBOUND_GROUP,
      kind: site.kind === 'line' ? 'line' : isReturn ? 'return' : 'entry',
      spec: spec.text,
      function: fn.name,
      file: site.file,
      line: site.line,
      address: site.address,
      fileOffset,
      args,
      // Entry and return pair per site (an inlined copy's exits are plain probes sharing its key).
      pairKey: site.kind === 'line' ? undefined : pairKey(fn.name, s?.address ?? fn.address),
      pairBy: ctx.go ? 'goroutine' : 'tid',
      warnings,
      site: s ? toSite(s) : undefined,
      unavailable: unavailable.length ? unavailable : undefined,
    },
    isReturn ? 'r' : 'p',
    opts,
    index,
  );
}

/** Where a resolved site is, for messages (the shared describer's words). */
function whereSite(site: ResolvedSite): string {
  return site.site ? describeSite(toSite(site.site)) : siteAddress(site.address);
}

/**
 * The task's name fetched at the hit: trace_pipe prints comm from a small pid→name cache filled at read time,
 * which a busy machine's short-lived processes evict ("<...>").
 */
/** The goroutine (`g`, in R14 on amd64) that pairs a Go function's entries with its returns. */
const GOROUTINE: CompiledArg = { name: GOROUTINE_ARG, fetch: '%r14', type: 'x64', display: 'hex', hidden: true };

const COMM_ARG: CompiledArg = { name: 'probelens_comm', fetch: '$comm', type: 'string', display: 'string', hidden: true };

function finish(
  p: Omit<CompiledProbe, 'definition'>,
  kind: 'p' | 'r',
  opts: CompileOptions,
  index: BinaryIndex,
  refCtr?: bigint,
): CompiledProbe {
  p = { ...p, args: withStringHeads(p.args) };
  const k = kernelOf(index);
  const kprobe = k ? kernelProbe(p, kind, k) : undefined;
  if (kprobe) {
    p = { ...p, args: kprobe.args };
    if (opts.callers && kind === 'p' && p.kind === 'entry' && !p.args.some((a) => a.name === CALLER_ARG.name))
      p = { ...p, args: [...p.args, CALLER_ARG] };
  }
  // A process's own memory is all user memory: uprobes read any string with `string`.
  else if (p.args.some((a) => a.type === 'ustring'))
    p = { ...p, args: p.args.map((a) => (a.type === 'ustring' ? { ...a, type: 'string' } : a)) };
  if (!p.args.some((a) => a.name === COMM_ARG.name)) p = { ...p, args: [...p.args, COMM_ARG] };
  const fetchArgs: FetchArg[] = p.args.map((a) => ({ name: a.name, fetch: a.fetch, type: a.type }));
  const definition: ProbeDefinition = {
    kind,
    group: opts.group ?? UNBOUND_GROUP,
    event: p.event,
    target: kprobe?.target ?? {
      type: 'uprobe',
      path: opts.targetPath ?? index.path,
      offset: p.fileOffset,
      ...(refCtr !== undefined ? { refCtrOffset: refCtr } : {}),
    },
    args: fetchArgs,
  };
  return { ...p, definition, ...(kprobe ? { kernelSource: 'dwarf' as const } : {}) };
}

async function fileOffsetOf(index: BinaryIndex, address: bigint, debugDirs?: string[]): Promise<bigint> {
  const { access } = await siteContext(index, debugDirs);
  return BigInt(access.image.fileOffsetOf(address));
}

/**
 * Return probes of an inlined copy: a plain uprobe at each of its exits (inlinedExits.ts), or why there are none.
 * No register holds a result there, so `$retval` and variables are unavailable; `$comm` and raw fetches work.
 */
async function compileInlinedReturns(
  spec: ProbeSpec,
  site: ResolvedSite,
  ctx: Ctx,
  lenient: boolean,
): Promise<CompiledProbe[] | { reason: string }> {
  const fn = site.fn!;
  const s = site.site!;
  const found = await inlinedSiteExits(ctx.index, s, ctx.opts.debugDirs);
  if (!found.ok) return { reason: `${whereSite(site)}: ${found.reason}` };
  if (found.exits.length === 0) return { reason: `${whereSite(site)}: it never returns (every path ends in a call that does not)` };
  const args: CompiledArg[] = [];
  const unavailable: Array<{ name: string; reason: string }> = [];
  const warnings: string[] = [];
  for (const a of spec.args) {
    if (a.kind === 'raw' || (a.kind === 'special' && a.which === 'comm')) {
      args.push(...(await compileArg(a, site, fn, [], ctx, warnings)));
      continue;
    }
    const what = a.kind === 'special' && a.which === 'retval' ? 'the return value' : 'variables';
    const reason = `${what} cannot be fetched at the exits of an inlined copy (it has no return instruction or register)`;
    if (!lenient) throw new ArgError(`${a.name}: ${reason}`);
    unavailable.push({ name: a.name, reason });
    warnings.push(`${a.name} unavailable at ${whereSite(site)}: ${reason}`);
  }
  if (ctx.go) args.push(GOROUTINE);
  const { access } = await siteContext(ctx.index, ctx.opts.debugDirs);
  return found.exits.map((exit) =>
    returnPoint(ctx, spec, site, `${siteEventName(site)}__return`, exit.address, access.image.fileOffsetOf(exit.address), {
      args,
      pairKey: pairKey(fn.name, s.address),
      pairBy: ctx.go ? 'goroutine' : 'tid',
      warnings: [...warnings],
      site: toSite(s),
      unavailable: unavailable.length ? unavailable : undefined,
    }),
  );
}

/** A return probed by a plain uprobe on one exit instruction (`p`, not a uretprobe) of `site`'s function. */
function returnPoint(
  ctx: Ctx,
  spec: ProbeSpec,
  site: ResolvedSite,
  base: string,
  address: bigint,
  fileOffset: number,
  rest: Pick<CompiledProbe, 'args' | 'pairKey' | 'pairBy' | 'warnings' | 'site' | 'unavailable'>,
): CompiledProbe {
  const probe: Omit<CompiledProbe, 'definition'> = {
    event: uniqueEventName(base, ctx.used),
    group: ctx.opts.group ?? UNBOUND_GROUP,
    kind: 'return',
    spec: spec.text,
    function: site.fn!.name,
    file: site.file,
    line: site.line,
    address,
    fileOffset: BigInt(fileOffset),
    ...rest,
  };
  return finish(probe, 'p', ctx.opts, ctx.index);
}

async function compileGoReturns(spec: ProbeSpec, site: ResolvedSite, ctx: Ctx): Promise<CompiledProbe[]> {
  // A uretprobe rewrites the return address on the stack, and Go moves stacks: "unexpected return pc".
  // Probe every RET instruction instead; at a RET the first result is in RAX (ABIInternal).
  const fn = site.fn!;
  const { access } = await siteContext(ctx.index, ctx.opts.debugDirs);
  if (ctx.index.arch !== 'x86_64' && ctx.index.arch !== 'aarch64') throw new ArgError(`unsupported architecture for Go return probes`);
  const code = access.image.functionBytes({ address: fn.address!, size: BigInt(fn.size) });
  const found = findReturnSites(ctx.index.arch, code, fn.address!);
  if (found.undecodable) {
    // Probing only the RETs before an undecodable instruction would silently miss returns.
    throw new ArgError(
      `${fn.name}: cannot decode its code at 0x${found.undecodable.address.toString(16)} (${found.undecodable.reason}), so its returns cannot all be found`,
    );
  }
  if (found.returns.length === 0) {
    throw new ArgError(
      `${fn.name} has no RET instruction${found.tailJumps.length ? ' (it leaves by tail calls)' : ''}, so its returns cannot be probed in a Go binary (uretprobes crash Go programs); probe the functions it jumps to instead`,
    );
  }
  const out: CompiledProbe[] = [];
  const tailNote = found.tailJumps.length
    ? [`${fn.name} also leaves by ${found.tailJumps.length} tail jump(s), which return probes on its RETs do not see`]
    : [];
  for (const ret of found.returns) {
    const args: CompiledArg[] = [];
    for (const a of spec.args) {
      if (a.kind === 'special' && a.which === 'retval')
        args.push(await retvalArg(a.name, fn, ctx, ctx.index.arch === 'x86_64' ? '%ax' : '%x0'));
      else throw new ArgError(`only $retval can be fetched on a Go function's return (got ${a.text})`);
    }
    args.push(GOROUTINE);
    out.push(
      returnPoint(ctx, spec, site, `${fn.name}__return`, ret, access.image.fileOffsetOf(ret), {
        args,
        pairKey: pairKey(fn.name, fn.address),
        pairBy: 'goroutine',
        warnings: tailNote,
      }),
    );
  }
  return out;
}

const X86_USDT_REG: Record<string, string> = nameRecord({
  rax: 'ax',
  eax: 'ax',
  ax: 'ax',
  al: 'ax',
  rbx: 'bx',
  ebx: 'bx',
  bx: 'bx',
  bl: 'bx',
  rcx: 'cx',
  ecx: 'cx',
  cx: 'cx',
  cl: 'cx',
  rdx: 'dx',
  edx: 'dx',
  dx: 'dx',
  dl: 'dx',
  rsi: 'si',
  esi: 'si',
  si: 'si',
  sil: 'si',
  rdi: 'di',
  edi: 'di',
  di: 'di',
  dil: 'di',
  rbp: 'bp',
  ebp: 'bp',
  bp: 'bp',
  rsp: 'sp',
  esp: 'sp',
  sp: 'sp',
  rip: 'ip',
});

function usdtRegister(arch: string, r: string): string | undefined {
  if (arch === 'x86_64') {
    const m = /^r(8|9|1[0-5])[dwb]?$/.exec(r);
    if (m) return `r${m[1]}`;
    return X86_USDT_REG[r];
  }
  const m = /^[xw]([0-9]|[12][0-9]|30)$/.exec(r);
  if (m) return `x${m[1]}`;
  return r === 'sp' ? 'sp' : undefined;
}

function compileUsdt(spec: ProbeSpec, u: IndexedUsdt, ctx: Ctx): CompiledProbe {
  if (u.semaphoreFileOffset !== undefined && ctx.opts.refCtrOffset === false) {
    throw new ArgError(
      `USDT probe ${u.provider}:${u.name} is guarded by a semaphore, and the target kernel has no uprobe reference counters (Linux 4.20+ lists ref_ctr_offset in tracefs README)`,
    );
  }
  const arch = ctx.index.arch;
  const noteArgs: CompiledArg[] = u.args.map((a, i) => {
    const name = `arg${i + 1}`;
    const bits = a.size * 8;
    const type = `${a.signed ? 's' : 'u'}${bits}`;
    const op = a.parsed;
    if (op.kind === 'register') {
      const r = usdtRegister(arch, op.register);
      if (!r) throw new ArgError(`USDT argument ${name} is in ${op.register}, which uprobes cannot fetch`);
      return { name, fetch: `%${r}`, type, display: a.signed ? 'signed' : 'unsigned' };
    }
    if (op.kind === 'memory') {
      const r = usdtRegister(arch, op.base);
      if (!r || op.index || op.symbol)
        throw new ArgError(`USDT argument ${name} (${a.operand}) uses an addressing mode uprobes cannot fetch`);
      return { name, fetch: `${op.offset < 0 ? '-' : '+'}${Math.abs(op.offset)}(%${r})`, type, display: a.signed ? 'signed' : 'unsigned' };
    }
    if (op.kind === 'constant') throw new ArgError(`USDT argument ${name} is the constant ${op.value}; it needs no probe`);
    throw new ArgError(`USDT argument ${name} has an operand ProbeLens cannot read (${a.operand})`);
  });
  // ARGs name the note's operands: arg1…argN, optionally renamed (NAME=argN) or typed (argN:string).
  const args: CompiledArg[] =
    spec.args.length === 0
      ? noteArgs
      : spec.args.map((a) => {
          if (a.kind !== 'var' || !/^arg[0-9]+$/.test(a.base) || a.path.length > 0)
            throw new ArgError(`USDT probes take arg1…arg${noteArgs.length} (got ${a.text})`);
          const base = noteArgs[Number(a.base.slice(3)) - 1];
          if (!base) throw new ArgError(`${u.provider}:${u.name} has ${noteArgs.length} argument(s); there is no ${a.base}`);
          if (a.type === 'string') return { name: a.name, fetch: `+0(${base.fetch})`, type: 'string', display: 'string' };
          return {
            ...base,
            name: a.name,
            ...(a.type ? { type: a.type, display: a.type.startsWith('s') ? 'signed' : a.type.startsWith('x') ? 'hex' : 'unsigned' } : {}),
          };
        });
  const event = uniqueEventName(`${u.provider}_${u.name}`, ctx.used);
  return finish(
    {
      event,
      group: ctx.opts.group ?? UNBOUND_GROUP,
      kind: 'usdt',
      spec: spec.text,
      address: u.address,
      fileOffset: u.fileOffset,
      args,
      pairBy: 'tid',
      warnings: [],
      function: `${u.provider}:${u.name}`,
    },
    'p',
    ctx.opts,
    ctx.index,
    u.semaphoreFileOffset,
  );
}

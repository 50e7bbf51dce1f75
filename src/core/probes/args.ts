// Probe arguments: a spec's ARGs → tracefs fetch arguments at one site, from that site's own variables (DWARF
// locations there) and types; $retval from the function's return type.
// Tests: test/unit/core/probes/compiler.test.ts, test/unit/core/session/cutStrings.test.ts, test/integration/args.test.ts
import type { TypeDesc } from '../dwarf';
import { inherited } from '../dwarf/functions';
import type { BinaryIndex } from '../index/binaryIndex';
import type { IndexedFunction } from '../index/model';
import { isGoResult } from '../index/fromDwarf';
import { stripQualifiers } from '../fetchargs/fetch';
import { ArgError, deref, member, placeFromLocation, scalarFetch, valueFetch, type Place, type TypedFetch } from './places';
import type { ResolvedSite } from './resolve';
import { describeSite } from '../../shared/hitText';
import { toSite } from '../../shared/site';
import type { ProbeArg } from './spec';
import { siteContext, variablesAtSite, type SiteVariable } from './variables';
import { unreachable } from '../../shared/unreachable';
import { addressNumber } from '../dwarf/format';

export interface CompiledArg {
  name: string;
  fetch: string;
  type: string;
  display: TypedFetch['display'];
  /** Go strings: the name of the hidden argument holding the length to cut the string at. */
  lengthArg?: string;
  /**
   * C strings: the name of the hidden argument holding the string's first STRING_HEAD_BYTES as raw memory. The
   * kernel faults a string fetch of 4,096 bytes or more; the head then shows its beginning, marked cut.
   */
  headArg?: string;
  /** Present in the definition for ProbeLens's own use (Go string lengths, goroutine pairing), not shown. */
  hidden?: boolean;
  /** Read from the calling convention's registers: DWARF gives no location for this parameter at all. */
  inferred?: boolean;
}

/** What argument compilation needs of the compiler's context. */
export interface ArgCtx {
  index: BinaryIndex;
  opts: { debugDirs?: string[]; immediates?: boolean };
  go: boolean;
}

/** Bytes of a Go string fetched per hit (a longer one is shown by these, marked cut). */
export const GO_STRING_PREVIEW = 64;

/** Bytes of a C string's beginning fetched beside it, shown (marked cut) when the string itself is too long. */
export const STRING_HEAD_BYTES = 64;

/**
 * Gives every string read through a pointer (`+OFFS(…):string`, `:ustring`) a hidden companion reading its first
 * STRING_HEAD_BYTES as 8-byte words: the kernel reads strings of at most 4,095 bytes and records a longer one as a
 * fault, while the words still hold the beginning (see presentHit). `$comm` and immediates need none.
 */
export function withStringHeads(args: readonly CompiledArg[]): CompiledArg[] {
  const out: CompiledArg[] = [];
  const taken = new Set(args.map((a) => a.name));
  for (const a of args) {
    if ((a.type !== 'string' && a.type !== 'ustring') || !/^[+-]u?\d/.test(a.fetch) || a.headArg) {
      out.push(a);
      continue;
    }
    let head = `${a.name}__head`;
    for (let i = 2; taken.has(head); i++) head = `${a.name}__head${i}`;
    taken.add(head);
    out.push({ ...a, headArg: head });
    out.push({ name: head, fetch: a.fetch, type: `x64[${STRING_HEAD_BYTES / 8}]`, display: 'hex', hidden: true });
  }
  return out;
}

export function entryVars(fn: IndexedFunction): SiteVariable[] {
  return fn.params.map((p) => ({ name: p.name, type: p.type, location: p.location, kind: 'param' as const, inferred: p.inferred }));
}

async function describer(ctx: ArgCtx): Promise<(o: number | undefined) => TypeDesc> {
  const { access } = await siteContext(ctx.index, ctx.opts.debugDirs);
  return (o) => access.dwarf.typeOf(o);
}

/** Type DIE offset of a variable visible at the site (entry params carry none in the index: look them up). */
async function typeOffsetOf(v: SiteVariable, site: ResolvedSite, ctx: ArgCtx): Promise<number | undefined> {
  if (v.typeOffset !== undefined) return v.typeOffset;
  const vars = await variablesAtSite(ctx.index, site, ctx.opts.debugDirs);
  return vars.find((x) => x.name === v.name)?.typeOffset;
}

/** Where an argument is fetched, for messages: the line, or the function (with its definition) and the copy. */
function siteWhere(site: ResolvedSite): string {
  if (site.kind === 'line') return `line ${site.line}`;
  const fn = site.fn;
  const def = fn?.file ? ` (${fn.file.replace(/^.*\//, '')}${fn.line ? `:${fn.line}` : ''})` : '';
  return `${fn?.name ?? '?'}${def} ${site.site ? describeSite(toSite(site.site)) : 'entry'}`;
}

export async function compileArg(
  a: ProbeArg,
  site: ResolvedSite,
  fn: IndexedFunction,
  vars: SiteVariable[],
  ctx: ArgCtx,
  warnings: string[],
): Promise<CompiledArg[]> {
  if (a.kind === 'raw') {
    const m = /^(.*?)(?::([a-z0-9@/[\]]+))?$/.exec(a.fetch)!;
    const type = m[2] ?? 'x64';
    return [
      {
        name: a.name,
        fetch: m[1],
        type,
        display: type === 'string' ? 'string' : type.startsWith('s') ? 'signed' : type.startsWith('u') ? 'unsigned' : 'hex',
      },
    ];
  }
  if (a.kind === 'special') {
    switch (a.which) {
      case 'comm':
        return [{ name: a.name, fetch: '$comm', type: 'string', display: 'string' }];
      case 'retval':
        return [await retvalArg(a.name, fn, ctx, site.kind === 'return' ? '$retval' : '%ax')];
      case 'params':
      case 'vars': {
        const out: CompiledArg[] = [];
        for (const v of vars.filter((x) => a.which === 'vars' || x.kind === 'param')) {
          try {
            out.push(...(await compileVar({ kind: 'var', name: v.name, base: v.name, path: [], text: v.name }, site, vars, ctx)));
          } catch (e) {
            if (!(e instanceof ArgError)) throw e;
            warnings.push(`${v.name} left out: ${e.message}`);
          }
        }
        return out;
      }
      default:
        return unreachable(a.which, 'special argument');
    }
  }
  return compileVar(a, site, vars, ctx);
}

async function compileVar(
  a: Extract<ProbeArg, { kind: 'var' }>,
  site: ResolvedSite,
  vars: SiteVariable[],
  ctx: ArgCtx,
): Promise<CompiledArg[]> {
  const out = await compileVarAt(a, site, vars, ctx);
  // A value reached through a guessed location is a guess too (fields of an inferred pointer included).
  return vars.find((x) => x.name === a.base)?.inferred ? out.map((o) => ({ ...o, inferred: true })) : out;
}

async function compileVarAt(
  a: Extract<ProbeArg, { kind: 'var' }>,
  site: ResolvedSite,
  vars: SiteVariable[],
  ctx: ArgCtx,
): Promise<CompiledArg[]> {
  const v = vars.find((x) => x.name === a.base);
  const where = siteWhere(site);
  if (!v) {
    const known = vars.map((x) => x.name).join(', ') || 'none';
    if (site.kind === 'line') throw new ArgError(`no variable '${a.base}' is visible at ${where} (visible: ${known})`);
    // Same-name functions of other units (or other versions of a function) need not share parameters.
    throw new ArgError(`${where} has no parameter or variable '${a.base}' (it has: ${known})`);
  }
  const start = placeFromLocation(v.location);
  if ('unavailable' in start) throw new ArgError(`'${a.base}' cannot be fetched at ${where}: ${start.unavailable}`);
  if (start.kind === 'imm' && ctx.opts.immediates === false)
    throw new ArgError(
      `'${a.base}' is the constant ${start.value} at ${where}, and the target kernel has no immediate fetch arguments (Linux 5.4+ lists \\imm-value in tracefs README)`,
    );
  const describe = await describer(ctx);
  let type = describe(await typeOffsetOf(v, site, ctx));
  let place: Place | { bits: string; reg: string } = start;
  let path = a.base;
  for (const step of a.path) {
    if ('bits' in place) throw new ArgError(`${path} is a bitfield inside a register; it has no members`);
    const s = stripQualifiers(type, describe);
    if (step.op === '[]') {
      if (s.kind === 'pointer') {
        const el = describe(s.targetOffset);
        place = deref(place, step.index * (stripQualifiers(el, describe).byteSize ?? 1), path);
        type = el;
      } else if (s.kind === 'array') {
        const el = describe(s.targetOffset);
        place = member(
          place,
          step.index * (stripQualifiers(el, describe).byteSize ?? 1),
          stripQualifiers(el, describe).byteSize ?? 8,
          path,
        );
        type = el;
      } else throw new ArgError(`${path} is not a pointer or array (${type.name}); [${step.index}] does not apply`);
      path += `[${step.index}]`;
      continue;
    }
    // `.` on a pointer dereferences it, as Go and Rust spell field access through pointers.
    let agg = s;
    if (s.kind === 'pointer' || s.kind === 'reference') {
      agg = stripQualifiers(describe(s.targetOffset), describe);
      place = deref(place, 0, path);
    } else if (step.op === '->') {
      throw new ArgError(`${path} is not a pointer (${type.name}); use ${path}.${step.field}`);
    }
    if (!agg.members) throw new ArgError(`${path} is not a struct, union or class (${type.name}), so it has no field '${step.field}'`);
    const m = agg.members.find((x) => x.name === step.field);
    if (!m) throw new ArgError(`${agg.name} has no field '${step.field}' (fields: ${agg.members.map((x) => x.name).join(', ')})`);
    if (m.offset === undefined) throw new ArgError(`${agg.name}.${step.field} has no fixed offset`);
    const mt = describe(m.typeOffset);
    place = member(place, m.offset, stripQualifiers(mt, describe).byteSize ?? 8, path);
    if (m.bitSize !== undefined) {
      const container = (stripQualifiers(mt, describe).byteSize ?? 4) * 8;
      const bitOff = (m.bitOffset ?? 0) - m.offset * 8;
      if ('bits' in place) throw new ArgError(`${path}.${step.field} is a bitfield inside a register, which ProbeLens cannot fetch`);
      return [
        {
          name: a.name,
          fetch: valueFetch(place, path),
          type: `b${m.bitSize}@${bitOff}/${container}`,
          display: stripQualifiers(mt, describe).signed ? 'signed' : 'unsigned',
        },
      ];
    }
    type = mt;
    path += `${step.op === '->' ? '->' : '.'}${step.field}`;
  }
  if ('bits' in place) {
    const st = stripQualifiers(type, describe);
    return [{ name: a.name, fetch: place.reg, type: place.bits, display: st.signed ? 'signed' : 'unsigned' }];
  }
  // Go strings: (pointer, length) — fetch the bytes and the length, and cut the bytes at the length.
  const st = stripQualifiers(type, describe);
  if (ctx.go && st.name === 'string' && st.kind === 'struct' && !a.type) {
    const ptr = member(place, 0, 8, path);
    const len = member(place, 8, 8, path);
    if ('bits' in ptr || 'bits' in len) throw new ArgError(`${path}: unexpected Go string layout`);
    const lenName = `${a.name}__len`;
    // Not `:string`: Go's string data has no NUL, and the kernel refuses (faults) a string with no NUL in its
    // first 4 KiB — which Go's packed rodata usually is. Fetch a fixed byte preview and cut it at the length.
    return [
      { name: a.name, fetch: `+0(${valueFetch(ptr, path)})`, type: `u8[${GO_STRING_PREVIEW}]`, display: 'string', lengthArg: lenName },
      { name: lenName, fetch: valueFetch(len, path), type: 's64', display: 'signed', hidden: true },
    ];
  }
  const f = scalarFetch(place, type, describe, path, a.type);
  return [{ name: a.name, ...f }];
}

async function returnTypeOf(fn: IndexedFunction, ctx: ArgCtx): Promise<TypeDesc | undefined> {
  if (fn.dieOffset < 0) return undefined;
  const { access } = await siteContext(ctx.index, ctx.opts.debugDirs);
  const dw = access.dwarf;
  const DW_AT_type = 0x49;
  const off = inherited(dw, dw.dieAt(fn.dieOffset), (d) => d.unit.ref(d, DW_AT_type));
  if (off !== undefined) return dw.typeOf(off);
  if (ctx.go && fn.address !== undefined) {
    // Go declares results as parameters marked DW_AT_variable_parameter (~r0, or the result's name).
    const result = dw.variablesAt(fn.dieOffset, addressNumber(fn.address)).find((v) => v.kind === 'param' && isGoResult(dw, v.dieOffset));
    if (result?.typeOffset !== undefined) return dw.typeOf(result.typeOffset);
  }
  return undefined;
}

export async function retvalArg(name: string, fn: IndexedFunction, ctx: ArgCtx, fetch: string): Promise<CompiledArg> {
  const t = await returnTypeOf(fn, ctx);
  if (!t) return { name, fetch, type: 'x64', display: 'hex' };
  const describe = await describer(ctx);
  const s = stripQualifiers(t, describe);
  if (s.kind === 'void') throw new ArgError(`${fn.name} returns void; drop $retval`);
  if (s.kind === 'base' && s.float)
    throw new ArgError(`${fn.name} returns a floating-point value (in an SSE register), which uprobes cannot fetch`);
  try {
    const f = scalarFetch({ kind: 'reg', reg: fetch }, t, describe, '$retval');
    return { name, ...f };
  } catch {
    return { name, fetch, type: 'x64', display: 'hex' };
  }
}

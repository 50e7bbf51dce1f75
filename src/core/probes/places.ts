// Where a value is, as something tracefs can fetch, and how member/element/pointer access moves it:
//   reg:  the value is in a register (%di);
//   mem:  the value is in memory at base + off, base being a fetch expression yielding an address;
//   parts: an aggregate passed in several registers (SysV small structs, Go strings/slices);
//   abs:  a global at @+N;
//   imm:  the compiler folded the value to a constant, fetched as an immediate (\\N).
// A fetch argument for the value itself is then `%di`, `+off(base)` or `@+N`.
// Tests: test/unit/core/probes/compiler.test.ts, test/integration/args.test.ts
import type { TypeDesc } from '../dwarf';
import { fetchTypeOf, stripQualifiers } from '../fetchargs/fetch';
import { unreachable } from '../../shared/unreachable';

export type Place =
  | { kind: 'reg'; reg: string }
  | { kind: 'mem'; base: string; off: number }
  | { kind: 'abs'; off: bigint }
  | { kind: 'parts'; regs: string[] }
  | { kind: 'imm'; value: bigint };

export class ArgError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'ArgError';
  }
}

/** Parses a location text produced by the index/variables ("%di", "+8(%sp)", "-20(%bp)", "@+4096", "%ax,%bx", "*%x1"). */
export function placeFromLocation(location: string): Place | { unavailable: string } {
  if (location === 'optimized out') return { unavailable: 'optimized out' };
  if (location.startsWith('unavailable')) return { unavailable: location.replace(/^unavailable:\s*/, '') };
  if (location.startsWith('*')) {
    // Passed by reference (AArch64 large structs): the register holds the aggregate's address.
    const inner = placeFromLocation(location.slice(1));
    if ('unavailable' in inner || inner.kind !== 'reg') return { unavailable: `unsupported location ${location}` };
    return { kind: 'mem', base: inner.reg, off: 0 };
  }
  if (location.includes(',')) return { kind: 'parts', regs: location.split(',') };
  let m = /^(%[a-z0-9]+)$/.exec(location);
  if (m) return { kind: 'reg', reg: m[1] };
  m = /^([+-])([0-9]+)\((.+)\)$/.exec(location);
  if (m) return { kind: 'mem', base: m[3], off: (m[1] === '-' ? -1 : 1) * Number(m[2]) };
  m = /^@\+([0-9]+)$/.exec(location);
  if (m) return { kind: 'abs', off: BigInt(m[1]) };
  m = /^\\([0-9]+)$/.exec(location);
  if (m) return { kind: 'imm', value: BigInt(m[1]) };
  return { unavailable: `unsupported location ${location}` };
}

const memText = (off: number, base: string) => `${off < 0 ? '-' : '+'}${Math.abs(off)}(${base})`;

/** Fetch text yielding the value held at a place (a scalar). */
export function valueFetch(p: Place, what: string): string {
  switch (p.kind) {
    case 'reg':
      return p.reg;
    case 'mem':
      return memText(p.off, p.base);
    case 'abs':
      return `@+${p.off}`;
    case 'imm':
      return `\\${p.value}`;
    case 'parts':
      throw new ArgError(`${what} is passed in several registers (${p.regs.join(', ')}); fetch one of its fields`);
    default:
      return unreachable(p, 'place');
  }
}

/** The place of the value a pointer-typed place points to, at byte offset `off`. */
export function deref(p: Place, off: number, what: string): Place {
  // A folded pointer constant is a link-time address (and in a PIE not where the memory is at run time).
  if (p.kind === 'imm')
    throw new ArgError(`${what} is the constant 0x${p.value.toString(16)} folded by the compiler; what it points to cannot be read`);
  return { kind: 'mem', base: valueFetch(p, what), off };
}

/** The place of a member at byte `off` inside an aggregate held at `p`. */
export function member(p: Place, off: number, size: number, what: string): Place | { bits: string; reg: string } {
  switch (p.kind) {
    case 'mem':
      return { kind: 'mem', base: p.base, off: p.off + off };
    case 'abs':
      return { kind: 'abs', off: p.off + BigInt(off) };
    case 'imm':
      throw new ArgError(`${what} is a constant folded by the compiler; ProbeLens fetches only whole constants, not their fields`);
    case 'reg':
    case 'parts': {
      const regs = p.kind === 'reg' ? [p.reg] : p.regs;
      const r = regs[Math.floor(off / 8)];
      if (!r) throw new ArgError(`${what}: field at offset ${off} is beyond the registers the value is passed in`);
      if (off % 8 === 0 && size === 8) return { kind: 'reg', reg: r };
      // A narrower field inside a register: tracefs bitfield types extract it (b<width>@<bit offset>/<container>).
      return { bits: `b${size * 8}@${(off % 8) * 8}/64`, reg: r };
    }
    default:
      return unreachable(p, 'place');
  }
}

export interface TypedFetch {
  fetch: string;
  type: string;
  /** How to show the value: signed/unsigned decimal, hex, string, Go string (pointer + length arg). */
  display: 'signed' | 'unsigned' | 'hex' | 'string';
}

/** The fetch for a scalar value of type `t` at place `p`; strings are read through char pointers. */
export function scalarFetch(
  p: Place,
  t: TypeDesc,
  describe: (o: number | undefined) => TypeDesc,
  what: string,
  override?: string,
): TypedFetch {
  const s = stripQualifiers(t, describe);
  if (override) {
    if (override === 'string' || override === 'ustring') {
      if (p.kind === 'imm') deref(p, 0, what);
      // A string is read at the address the value holds: +0(value).
      return { fetch: `+0(${valueFetch(p, what)})`, type: override, display: 'string' };
    }
    return {
      fetch: valueFetch(p, what),
      type: override,
      display: override.startsWith('s') ? 'signed' : override.startsWith('x') ? 'hex' : 'unsigned',
    };
  }
  if (s.kind === 'array') {
    const el = stripQualifiers(describe(s.targetOffset), describe);
    if (el.kind === 'base' && el.char && el.byteSize === 1 && (p.kind === 'mem' || p.kind === 'abs')) {
      // A char array is read in place: the string starts at the array's own address.
      return { fetch: p.kind === 'mem' ? memText(p.off, p.base) : `@+${p.off}`, type: 'string', display: 'string' };
    }
    throw new ArgError(`${what} is an array (${t.name}); fetch an element with ${what}[N]`);
  }
  if (s.kind === 'struct' || s.kind === 'union' || s.kind === 'class') {
    const names = (s.members ?? [])
      .slice(0, 6)
      .map((m) => m.name)
      .join(', ');
    throw new ArgError(
      `${what} is a ${s.kind} (${t.name}); fetch a field, e.g. ${what}.${(s.members ?? [])[0]?.name ?? 'field'} (fields: ${names})`,
    );
  }
  if (s.kind === 'base' && s.float)
    throw new ArgError(`${what} is floating-point (${t.name}); uprobe fetch arguments have no floating-point type`);
  const type = fetchTypeOf(s, describe);
  if (!type) throw new ArgError(`${what} has type ${t.name}, which ProbeLens cannot fetch`);
  if (type === 'string') {
    if (p.kind === 'imm') deref(p, 0, what);
    return { fetch: `+0(${valueFetch(p, what)})`, type, display: 'string' };
  }
  return { fetch: valueFetch(p, what), type, display: type.startsWith('s') ? 'signed' : type.startsWith('x') ? 'hex' : 'unsigned' };
}

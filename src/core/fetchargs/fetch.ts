// Translating DWARF facts into tracefs fetch arguments: register names, location descriptions at a given pc,
// and types (fetch type suffix, calling-convention class). Shared by the index (parameter locations at entry)
// and the probe compiler (arguments, struct fields, line-probe variables).
// Tests: test/unit/core/probes/compiler.test.ts, test/unit/core/index/oracles.test.ts, test/integration/capture.test.ts, test/integration/args.test.ts
import type { LocDesc, TypeDesc } from '../dwarf';
import { DwarfTypeLimitError } from '../dwarf/types';
import type { AbiType } from './abi';
import { nameRecord } from '../../shared/names';

/** No real program passes a 64 KiB struct by value; tracefs could not fetch it (128 arguments) anyway. */
const MAX_BY_VALUE = 64 * 1024;

export type Arch = 'x86_64' | 'aarch64';

const X86_REG: Record<string, string> = nameRecord({
  rax: 'ax',
  rbx: 'bx',
  rcx: 'cx',
  rdx: 'dx',
  rsi: 'si',
  rdi: 'di',
  rbp: 'bp',
  rsp: 'sp',
  rip: 'ip',
  r8: 'r8',
  r9: 'r9',
  r10: 'r10',
  r11: 'r11',
  r12: 'r12',
  r13: 'r13',
  r14: 'r14',
  r15: 'r15',
});

/** tracefs register name (without %) for a DWARF register name, or undefined when uprobes cannot read it. */
export function tracefsRegister(arch: Arch, dwarfName: string): string | undefined {
  if (arch === 'x86_64') return X86_REG[dwarfName];
  if (/^x([0-9]|[12][0-9]|30)$/.test(dwarfName) || dwarfName === 'sp') return dwarfName;
  return undefined;
}

export type FetchResult =
  | { ok: true; fetch: string; /** true when fetch yields the value itself, false when it is the value's address */ isValue: true }
  | { ok: true; address: string; isValue: false }
  | { ok: false; reason: string };

export interface FrameContext {
  arch: Arch;
  /** The CFA at this pc as register + offset (at a function's entry: %sp+8 on x86-64, %sp+0 on AArch64). */
  cfa?: { reg: string; offset: number };
  /** The function's frame base description (DW_AT_frame_base), usually { kind: 'cfa' }. */
  frameBase?: LocDesc;
  /**
   * The `@+N` operand for a global at a link-time address. The kernel resolves N against the probed file's
   * mapping of the probe's own (code) segment, so N is not simply the global's file offset.
   */
  fetchOffsetOf?: (address: number) => bigint;
}

const memAt = (offset: number, base: string): string => `${offset >= 0 ? '+' : '-'}${Math.abs(offset)}(${base})`;

export function entryCfa(arch: Arch): { reg: string; offset: number } {
  return arch === 'x86_64' ? { reg: 'sp', offset: 8 } : { reg: 'sp', offset: 0 };
}

/**
 * Where a variable described by `loc` is: a fetch for its value (registers) or for its address (memory), so
 * a caller can dereference with a type or add a member offset.
 */
export function fetchForLocation(loc: LocDesc, ctx: FrameContext): FetchResult {
  switch (loc.kind) {
    case 'register': {
      const r = tracefsRegister(ctx.arch, loc.name);
      return r
        ? { ok: true, fetch: `%${r}`, isValue: true }
        : { ok: false, reason: `the value is in ${loc.name}, which uprobes cannot fetch` };
    }
    case 'breg': {
      const r = tracefsRegister(ctx.arch, loc.name);
      return r
        ? { ok: true, address: memAt(loc.offset, `%${r}`), isValue: false }
        : { ok: false, reason: `based on ${loc.name}, which uprobes cannot fetch` };
    }
    case 'breg-value': {
      const r = tracefsRegister(ctx.arch, loc.name);
      if (r && loc.offset === 0) return { ok: true, fetch: `%${r}`, isValue: true };
      return {
        ok: false,
        reason: `the value is computed (${loc.name}${loc.offset >= 0 ? '+' : ''}${loc.offset}), which a fetch argument cannot express`,
      };
    }
    case 'fbreg': {
      const fb = ctx.frameBase;
      if (!fb || fb.kind === 'cfa') {
        if (!ctx.cfa) return { ok: false, reason: 'the frame base (CFA) at this address is unknown' };
        return { ok: true, address: memAt(ctx.cfa.offset + loc.offset, `%${ctx.cfa.reg}`), isValue: false };
      }
      if (fb.kind === 'breg' || fb.kind === 'breg-value' || fb.kind === 'register') {
        const r = tracefsRegister(ctx.arch, fb.name);
        const base = fb.kind === 'register' ? 0 : fb.offset;
        if (r) return { ok: true, address: memAt(base + loc.offset, `%${r}`), isValue: false };
      }
      return { ok: false, reason: `unsupported frame base (${fb.kind})` };
    }
    case 'cfa':
      return ctx.cfa
        ? { ok: false, reason: 'the value is the CFA itself, which a fetch argument cannot express' }
        : { ok: false, reason: 'the CFA here is unknown' };
    case 'address':
      if (!ctx.fetchOffsetOf) return { ok: false, reason: 'a global whose offset is unknown' };
      try {
        return { ok: true, address: `@+${ctx.fetchOffsetOf(loc.address)}`, isValue: false };
      } catch (e) {
        return { ok: false, reason: `a global the probe cannot address (${e instanceof Error ? e.message : String(e)})` };
      }
    case 'optimized-out':
      return { ok: false, reason: 'optimized out' };
    case 'value':
      // The compiler folded the value to this constant (DW_AT_const_value, DW_OP_litN/constN + stack_value):
      // an immediate fetch argument (`\IMM`) yields it; the fetch type then cuts it to the variable's size.
      return { ok: true, fetch: immediateFetch(loc.value), isValue: true };
    case 'implicit': {
      // DW_OP_implicit_value: the value's bytes in target (little-endian) order; up to 8 fit an immediate.
      if (loc.bytes.length === 0 || loc.bytes.length > 8)
        return { ok: false, reason: `an implicit value of ${loc.bytes.length} bytes folded by the compiler` };
      let v = 0n;
      for (let i = loc.bytes.length - 1; i >= 0; i--) v = (v << 8n) | BigInt(loc.bytes[i]);
      return { ok: true, fetch: immediateFetch(v), isValue: true };
    }
    case 'tls':
      return { ok: false, reason: 'thread-local storage, which uprobes cannot address' };
    case 'entry-value':
      return { ok: false, reason: 'only known as the value on entry (DW_OP_entry_value)' };
    case 'pieces':
      return { ok: false, reason: 'split across several places (DW_OP_piece)' };
    case 'unsupported':
      return { ok: false, reason: loc.why };
  }
}

/** `\N`: a tracefs immediate fetch argument holding a constant's bit pattern (negative ones as 64-bit two's complement). */
export function immediateFetch(value: number | bigint): string {
  return `\\${BigInt.asUintN(64, BigInt(value)).toString(10)}`;
}

/** Follows typedef/const/volatile/restrict/atomic to the type that decides layout. */
export function stripQualifiers(t: TypeDesc, describe: (offset: number | undefined) => TypeDesc): TypeDesc {
  let cur = t;
  for (let i = 0; i < 32 && ['typedef', 'const', 'volatile', 'restrict', 'atomic'].includes(cur.kind); i++)
    cur = describe(cur.targetOffset);
  return cur;
}

/** The fetch type suffix for a scalar of type `t` (already stripped), or undefined when not a scalar. */
export function fetchTypeOf(
  t: TypeDesc,
  describe: (offset: number | undefined) => TypeDesc,
  opts: { stringsForCharPointers?: boolean } = {},
): string | undefined {
  const size = t.byteSize ?? 0;
  const bits = size === 1 ? 8 : size === 2 ? 16 : size === 4 ? 32 : size === 8 ? 64 : undefined;
  switch (t.kind) {
    case 'base':
      if (t.float || bits === undefined) return undefined;
      if (t.bool) return `u${bits}`;
      return `${t.signed ? 's' : 'u'}${bits}`;
    case 'enum':
      return bits ? `${t.signed ? 's' : 'u'}${bits}` : undefined;
    case 'pointer': {
      if (opts.stringsForCharPointers !== false) {
        const pointee = stripQualifiers(describe(t.targetOffset), describe);
        if (pointee.kind === 'base' && pointee.char && pointee.byteSize === 1) return 'string';
      }
      return `x${bits ?? 64}`;
    }
    case 'reference':
      return `x${bits ?? 64}`;
    default:
      return undefined;
  }
}

/** Calling-convention class of a parameter type (stripped), for placing it in registers/stack at entry. */
export function abiTypeOf(t: TypeDesc, describe: (offset: number | undefined) => TypeDesc, go: boolean): AbiType {
  const size = t.byteSize ?? 8;
  if (go && t.kind === 'struct') {
    if (t.name === 'string') return { kind: 'go-string' };
    if (t.name.startsWith('[]')) return { kind: 'go-slice' };
    if (
      t.name === 'interface {}' ||
      t.name.startsWith('interface') ||
      t.name === 'error' ||
      t.name.startsWith('runtime.iface') ||
      t.name.startsWith('runtime.eface')
    )
      return { kind: 'go-interface' };
  }
  switch (t.kind) {
    case 'base':
      return t.float ? { kind: 'float', size } : { kind: 'int', size };
    case 'struct':
    case 'class':
    case 'union':
    case 'array': {
      // A by-value size from hostile DWARF must not drive the loops below (or the placement's per-eightbyte ones).
      if (size > MAX_BY_VALUE)
        throw new DwarfTypeLimitError(t.offset ?? 0, 'too large', `${size} bytes passed by value; the limit is ${MAX_BY_VALUE}`);
      if (go) {
        // Go's register ABI assigns each (flattened) field its own register.
        const fields: ('int' | 'float')[] = [];
        for (const m of t.members ?? []) {
          const mt = stripQualifiers(describe(m.typeOffset), describe);
          fields.push(mt.kind === 'base' && mt.float ? 'float' : 'int');
        }
        return { kind: 'aggregate', size, eightbytes: fields };
      }
      const n = Math.ceil(size / 8);
      const eightbytes: ('int' | 'float')[] = Array.from({ length: n }, () => 'float' as const);
      const mark = (i: number, c: 'int' | 'float') => {
        if (i >= 0 && i < n && c === 'int') eightbytes[i] = 'int';
      };
      const members = t.members ?? [];
      if (t.kind === 'array' || members.length === 0) eightbytes.fill('int');
      for (const m of members) {
        const mt = stripQualifiers(describe(m.typeOffset), describe);
        const msize = mt.byteSize ?? 8;
        const off = m.offset ?? 0;
        const cls = mt.kind === 'base' && mt.float ? 'float' : 'int';
        const last = Math.min(n - 1, Math.floor((off + Math.max(1, msize) - 1) / 8));
        for (let b = Math.floor(off / 8); b <= last; b++) mark(b, cls);
      }
      return { kind: 'aggregate', size, eightbytes };
    }
    default:
      return { kind: 'int', size: Math.min(size, 8) || 8 };
  }
}

// Where a function's arguments are at its entry instruction, by calling convention. Used when DWARF has no
// location valid at the entry pc (common at -O2, where gcc describes parameters only after the prologue).
// Sources: System V AMD64 ABI §3.2.3 (classification), AAPCS64 §6.8 (parameter passing), Go internal ABI
// (src/cmd/compile/abi-internal.md: amd64 integer registers RAX RBX RCX RDI RSI R8 R9 R10 R11).
// Floating-point registers cannot be fetched by uprobe fetchargs, so FP arguments come back as 'float'.
import { unreachable } from '../../shared/unreachable';

export type Arch = 'x86_64' | 'aarch64';
export type CallingConvention = 'sysv' | 'aapcs64' | 'go-regabi' | 'go-stack';

/** What the ABI needs to know of an argument's type. */
export type AbiType =
  | { kind: 'int'; size: number } // integers, pointers, enums, bools, chars
  | { kind: 'float'; size: number }
  | { kind: 'aggregate'; size: number; eightbytes: ('int' | 'float')[] } // struct/union by value
  | { kind: 'go-string' } // Go string: (ptr, len)
  | { kind: 'go-slice' } // Go slice: (ptr, len, cap)
  | { kind: 'go-interface' }; // Go interface: (type, data)

/** A place holding (part of) an argument at function entry, as tracefs fetcharg text. */
export type ArgPart = { where: 'reg'; reg: string; fetch: string } | { where: 'stack'; spOffset: number; fetch: string };

export type ArgPlacement = { ok: true; parts: ArgPart[]; byReference?: boolean } | { ok: false; reason: string };

const SYSV_INT = ['di', 'si', 'dx', 'cx', 'r8', 'r9'];
const GO_INT = ['ax', 'bx', 'cx', 'di', 'si', 'r8', 'r9', 'r10', 'r11'];

const reg = (r: string): ArgPart => ({ where: 'reg', reg: r, fetch: `%${r}` });
const stack = (off: number): ArgPart => ({ where: 'stack', spOffset: off, fetch: `+${off}(%sp)` });

/**
 * Places each argument of a call at the function's first instruction. On x86-64 the return address is at
 * 0(%sp), so the first stack-passed eightbyte is at +8(%sp); on AArch64 the caller's outgoing area starts at
 * 0(sp). `hasHiddenReturnPointer` reserves the first integer register for a returned-in-memory aggregate.
 */
export function placeArguments(conv: CallingConvention, types: AbiType[], opts: { hasHiddenReturnPointer?: boolean } = {}): ArgPlacement[] {
  switch (conv) {
    case 'sysv':
      return placeSysV(types, opts.hasHiddenReturnPointer ?? false);
    case 'aapcs64':
      return placeAapcs64(types);
    case 'go-regabi':
      return placeGoRegabi(types);
    case 'go-stack':
      return placeGoStack(types);
    default:
      return unreachable(conv, 'calling convention');
  }
}

function placeSysV(types: AbiType[], hidden: boolean): ArgPlacement[] {
  let nextInt = hidden ? 1 : 0;
  let nextSse = 0;
  let stackOff = 8;
  const onStack = (size: number): ArgPart[] => {
    const parts: ArgPart[] = [];
    for (let b = 0; b < size; b += 8) parts.push(stack(stackOff + b));
    stackOff += Math.ceil(size / 8) * 8;
    return parts;
  };
  return types.map((t): ArgPlacement => {
    if (t.kind === 'int') {
      if (t.size > 8) {
        // __int128 takes two integer registers or goes to memory whole.
        if (nextInt + 2 <= SYSV_INT.length) return { ok: true, parts: [reg(SYSV_INT[nextInt++]), reg(SYSV_INT[nextInt++])] };
        return { ok: true, parts: onStack(16) };
      }
      if (nextInt < SYSV_INT.length) return { ok: true, parts: [reg(SYSV_INT[nextInt++])] };
      return { ok: true, parts: onStack(8) };
    }
    if (t.kind === 'float') {
      if (nextSse < 8) {
        nextSse++;
        return { ok: false, reason: 'floating-point argument is in an SSE register, which uprobes cannot fetch' };
      }
      return { ok: true, parts: onStack(8) };
    }
    if (t.kind === 'aggregate') {
      // Aggregates over 16 bytes (or with unaligned fields, which callers report as size>16) go to memory.
      if (t.size > 16 || t.size === 0) return { ok: true, parts: onStack(t.size) };
      const needInt = t.eightbytes.filter((c) => c === 'int').length;
      const needSse = t.eightbytes.length - needInt;
      if (nextInt + needInt > SYSV_INT.length || nextSse + needSse > 8) return { ok: true, parts: onStack(t.size) };
      const parts: ArgPart[] = [];
      for (const c of t.eightbytes) {
        if (c === 'int') parts.push(reg(SYSV_INT[nextInt++]));
        else {
          nextSse++;
          return { ok: false, reason: 'part of this struct is passed in an SSE register, which uprobes cannot fetch' };
        }
      }
      return { ok: true, parts };
    }
    return { ok: false, reason: `a Go ${t.kind.slice(3)} does not occur in the System V C ABI` };
  });
}

function placeAapcs64(types: AbiType[]): ArgPlacement[] {
  let ngrn = 0;
  let nsrn = 0;
  let nsaa = 0;
  const onStack = (size: number, align = 8): ArgPart[] => {
    nsaa = Math.ceil(nsaa / align) * align;
    const parts: ArgPart[] = [];
    for (let b = 0; b < size; b += 8) parts.push(stack(nsaa + b));
    nsaa += Math.ceil(size / 8) * 8;
    return parts;
  };
  const x = (n: number): ArgPart => reg(`x${n}`);
  return types.map((t): ArgPlacement => {
    if (t.kind === 'float') {
      if (nsrn < 8) {
        nsrn++;
        return { ok: false, reason: 'floating-point argument is in a SIMD register, which uprobes cannot fetch' };
      }
      return { ok: true, parts: onStack(8) };
    }
    if (t.kind === 'aggregate' && t.size > 16) {
      // Larger composites are copied by the caller and passed by reference (AAPCS64 B.4).
      if (ngrn < 8) return { ok: true, parts: [x(ngrn++)], byReference: true };
      return { ok: true, parts: onStack(8), byReference: true };
    }
    if (t.kind === 'aggregate' && t.eightbytes.length > 0 && t.eightbytes.every((c) => c === 'float')) {
      return { ok: false, reason: 'homogeneous floating-point struct is in SIMD registers, which uprobes cannot fetch' };
    }
    const size = t.kind === 'int' || t.kind === 'aggregate' ? t.size : 8;
    const regs = Math.max(1, Math.ceil(size / 8));
    if (t.kind !== 'int' && t.kind !== 'aggregate')
      return { ok: false, reason: `a Go ${t.kind.slice(3)} does not occur in the AAPCS64 C ABI` };
    if (regs === 2 && t.kind === 'int' && ngrn % 2 === 1) ngrn++; // 16-byte-aligned ints start at an even register
    if (ngrn + regs <= 8) {
      const parts: ArgPart[] = [];
      for (let i = 0; i < regs; i++) parts.push(x(ngrn++));
      return { ok: true, parts };
    }
    ngrn = 8;
    return { ok: true, parts: onStack(size, size > 8 ? 16 : 8) };
  });
}

function goRegsNeeded(t: AbiType): number {
  switch (t.kind) {
    case 'int':
      return t.size > 8 ? 2 : 1;
    case 'go-string':
    case 'go-interface':
      return 2;
    case 'go-slice':
      return 3;
    case 'aggregate':
      return t.eightbytes.length;
    case 'float':
      return 0;
    default:
      return unreachable(t, 'argument class');
  }
}

function placeGoRegabi(types: AbiType[]): ArgPlacement[] {
  // An argument that does not fit in the remaining registers goes to the stack whole; later smaller arguments
  // may still use registers. Stack-assigned arguments start at 8(SP) at entry (above the return address).
  let next = 0;
  let stackOff = 8;
  return types.map((t): ArgPlacement => {
    if (t.kind === 'float') return { ok: false, reason: 'floating-point argument is in an X register, which uprobes cannot fetch' };
    if (t.kind === 'aggregate' && t.eightbytes.includes('float'))
      return { ok: false, reason: 'struct with floating-point fields is split across X registers, which uprobes cannot fetch' };
    const n = goRegsNeeded(t);
    if (next + n <= GO_INT.length) {
      const parts: ArgPart[] = [];
      for (let i = 0; i < n; i++) parts.push(reg(GO_INT[next++]));
      return { ok: true, parts };
    }
    const size = n * 8;
    const parts: ArgPart[] = [];
    for (let b = 0; b < size; b += 8) parts.push(stack(stackOff + b));
    stackOff += size;
    return { ok: true, parts };
  });
}

function placeGoStack(types: AbiType[]): ArgPlacement[] {
  // Go before 1.17 (ABI0): every argument on the stack in order, from 8(SP) at entry. Untested here: the
  // machine's Go (1.19) produces ABIInternal binaries only.
  let off = 8;
  return types.map((t): ArgPlacement => {
    const size =
      t.kind === 'int' || t.kind === 'float' || t.kind === 'aggregate' ? Math.max(8, Math.ceil(t.size / 8) * 8) : goRegsNeeded(t) * 8;
    const parts: ArgPart[] = [];
    for (let b = 0; b < size; b += 8) parts.push(stack(off + b));
    off += size;
    return { ok: true, parts };
  });
}

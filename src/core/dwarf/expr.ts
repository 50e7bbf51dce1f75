// Location expressions reduced to the forms a uprobe fetcharg can express: a register, frame base + offset,
// register + offset, a static address, an implicit/constant value, pieces, an entry value — or a clear
// "optimized out" / "unsupported" verdict. No general stack machine: a probe can only read what it can name.
// Tests: test/unit/core/dwarf/vars.test.ts, test/unit/core/probes/compiler.test.ts, test/integration/args.test.ts
import * as K from './constants';
import { dwarfReader, readAddress } from './format';
import type { Block, Unit } from './unit';

// Bound once: per-access getters of a transpiled module namespace would sit on the hot path.
const { OP } = K;

export type Arch = 'x86_64' | 'aarch64';

const X86_64 = ['rax', 'rdx', 'rcx', 'rbx', 'rsi', 'rdi', 'rbp', 'rsp', 'r8', 'r9', 'r10', 'r11', 'r12', 'r13', 'r14', 'r15', 'rip'];

/** Name of a DWARF register number (System V x86-64 psABI / AArch64 DWARF ABI numbering). */
export function registerName(arch: Arch, n: number): string {
  if (arch === 'x86_64') {
    if (n < X86_64.length) return X86_64[n];
    if (n >= 17 && n <= 32) return `xmm${n - 17}`;
    if (n >= 33 && n <= 40) return `st${n - 33}`;
    return `reg${n}`;
  }
  if (n <= 30) return `x${n}`;
  if (n === 31) return 'sp';
  if (n >= 64 && n <= 95) return `v${n - 64}`;
  return `reg${n}`;
}

export type LocDesc =
  | { kind: 'register'; reg: number; name: string }
  | { kind: 'fbreg'; offset: number }
  | { kind: 'breg'; reg: number; name: string; offset: number }
  /** The value is reg + offset (DW_OP_bregN off; DW_OP_stack_value). */
  | { kind: 'breg-value'; reg: number; name: string; offset: number }
  | { kind: 'address'; address: number }
  | { kind: 'tls'; offset: number }
  | { kind: 'cfa'; offset: number }
  | { kind: 'implicit'; bytes: Uint8Array }
  | { kind: 'value'; value: number | bigint }
  | { kind: 'entry-value'; inner: LocDesc }
  | { kind: 'pieces'; pieces: Array<{ bits: number; loc: LocDesc }> }
  | { kind: 'optimized-out' }
  | { kind: 'unsupported'; why: string };

interface Op {
  op: number;
  a: number;
  b: number;
  big?: bigint;
  block?: Block;
}

function decode(u: Unit, e: Block): Op[] {
  const r = dwarfReader(e.buf, u.section, u.dw.le, e.start, e.start + e.len);
  const ops: Op[] = [];
  while (r.pos < r.end) {
    const op = r.u8();
    let a = 0,
      b = 0,
      big: bigint | undefined,
      block: Block | undefined;
    if (op >= OP.breg0 && op <= OP.breg31) a = r.sleb();
    else if (op >= OP.lit0 && op <= OP.lit31) a = op - OP.lit0;
    else if (op >= OP.reg0 && op <= OP.reg31) a = op - OP.reg0;
    else {
      switch (op) {
        case OP.addr:
          a = readAddress(r, u.enc.addrSize);
          break;
        case OP.const1u:
        case OP.pick:
        case OP.deref_size:
          a = r.u8();
          break;
        case OP.const1s:
          a = r.s8();
          break;
        case OP.const2u:
          a = r.u16();
          break;
        case OP.const2s:
        case OP.skip:
        case OP.bra:
          a = r.s16();
          break;
        case OP.const4u:
          a = r.u32();
          break;
        case OP.const4s:
          a = r.s32();
          break;
        case OP.const8u:
          big = r.u64big();
          a = Number(big);
          break;
        case OP.const8s:
          a = r.s64();
          break;
        case OP.constu:
        case OP.plus_uconst:
        case OP.regx:
        case OP.piece:
        case OP.addrx:
        case OP.constx:
        case OP.GNU_addr_index:
        case OP.GNU_const_index:
        case OP.convert:
        case OP.GNU_convert:
        case OP.reinterpret:
        case OP.GNU_reinterpret:
          a = r.uleb();
          break;
        case OP.consts:
        case OP.fbreg:
          a = r.sleb();
          break;
        case OP.bregx:
          a = r.uleb();
          b = r.sleb();
          break;
        case OP.bit_piece:
          a = r.uleb();
          b = r.uleb();
          break;
        case OP.call2:
          a = r.u16();
          break;
        case OP.call4:
          a = r.u32();
          break;
        case OP.implicit_value:
        case OP.entry_value:
        case OP.GNU_entry_value: {
          const len = r.uleb();
          block = { buf: e.buf, start: r.pos, len };
          r.skip(len);
          break;
        }
        case OP.implicit_pointer:
        case OP.GNU_implicit_pointer:
          r.offset(u.enc.is64);
          a = r.sleb();
          break;
        case OP.const_type:
        case OP.GNU_const_type:
          r.uleb();
          r.skip(r.u8());
          break;
        case OP.regval_type:
        case OP.GNU_regval_type:
          a = r.uleb();
          r.uleb();
          break;
        case OP.deref_type:
        case OP.GNU_deref_type:
          r.u8();
          r.uleb();
          break;
        case OP.GNU_parameter_ref:
          r.u32();
          break;
        case OP.GNU_variable_value:
          r.offset(u.enc.is64);
          break;
        default:
          // Ops without operands; anything truly unknown stops decoding (we cannot know its length).
          if (op < OP.addr || op > OP.GNU_variable_value || (op > OP.reinterpret && op < OP.GNU_push_tls_address)) {
            r.fail(`unknown DWARF expression op 0x${op.toString(16)}`, r.pos - 1);
          }
      }
    }
    ops.push({ op, a, b, big, block });
    if (ops.length > 10000) r.fail('expression too long');
  }
  return ops;
}

/** Reduces a location expression to a LocDesc. */
export function describeLocation(u: Unit, e: Block | undefined, arch: Arch, depth = 0): LocDesc {
  if (!e || e.len === 0) return { kind: 'optimized-out' };
  // Entry values nest; real ones are one level deep, hostile ones must not exhaust the stack.
  if (depth > 8) return { kind: 'unsupported', why: 'nested DW_OP_entry_value' };
  const ops = decode(u, e);
  // Split at DW_OP_piece / bit_piece.
  const pieces: Array<{ bits: number; loc: LocDesc }> = [];
  let cur: Op[] = [];
  for (const o of ops) {
    if (o.op === OP.piece || o.op === OP.bit_piece) {
      pieces.push({ bits: o.op === OP.piece ? o.a * 8 : o.a, loc: cur.length ? simple(u, cur, arch, depth) : { kind: 'optimized-out' } });
      cur = [];
    } else cur.push(o);
  }
  if (pieces.length === 0) return simple(u, cur, arch, depth);
  return { kind: 'pieces', pieces };
}

function simple(u: Unit, ops: Op[], arch: Arch, depth: number): LocDesc {
  const [o, o2] = ops;
  const n = ops.length;
  const reg = (r: number) => registerName(arch, r);
  const tail = ops[n - 1]?.op === OP.stack_value;
  // GCC's IPA-SRA/constprop clones describe a parameter they no longer receive by the caller's argument
  // (DW_OP_GNU_parameter_ref names a formal parameter of the abstract origin): the value never reaches the clone.
  if (ops.some((x) => x.op === OP.GNU_parameter_ref))
    return { kind: 'unsupported', why: 'this clone does not receive it (GCC dropped or replaced the parameter: DW_OP_GNU_parameter_ref)' };
  if (n === 1) {
    if (o.op >= OP.reg0 && o.op <= OP.reg31) return { kind: 'register', reg: o.a, name: reg(o.a) };
    if (o.op === OP.regx) return { kind: 'register', reg: o.a, name: reg(o.a) };
    if (o.op === OP.fbreg) return { kind: 'fbreg', offset: o.a };
    if (o.op >= OP.breg0 && o.op <= OP.breg31) return { kind: 'breg', reg: o.op - OP.breg0, name: reg(o.op - OP.breg0), offset: o.a };
    if (o.op === OP.bregx) return { kind: 'breg', reg: o.a, name: reg(o.a), offset: o.b };
    if (o.op === OP.addr) return { kind: 'address', address: o.a };
    if (o.op === OP.addrx || o.op === OP.GNU_addr_index) return { kind: 'address', address: u.addrx(o.a) };
    if (o.op === OP.call_frame_cfa) return { kind: 'cfa', offset: 0 };
    // Inside DW_OP_entry_value, a typed register read names the register just like DW_OP_regN.
    if (o.op === OP.regval_type || o.op === OP.GNU_regval_type) return { kind: 'register', reg: o.a, name: reg(o.a) };
    if (o.op === OP.implicit_value) return { kind: 'implicit', bytes: o.block!.buf.slice(o.block!.start, o.block!.start + o.block!.len) };
    if (o.op === OP.entry_value || o.op === OP.GNU_entry_value)
      return { kind: 'entry-value', inner: describeLocation(u, o.block, arch, depth + 1) };
  }
  if (n === 2 && tail) {
    if (isConst(o)) return { kind: 'value', value: o.big ?? o.a };
    if (o.op >= OP.breg0 && o.op <= OP.breg31) return { kind: 'breg-value', reg: o.op - OP.breg0, name: reg(o.op - OP.breg0), offset: o.a };
    if (o.op === OP.bregx) return { kind: 'breg-value', reg: o.a, name: reg(o.a), offset: o.b };
    if (o.op === OP.entry_value || o.op === OP.GNU_entry_value)
      return { kind: 'entry-value', inner: describeLocation(u, o.block, arch, depth + 1) };
  }
  if (n === 2 && o.op === OP.call_frame_cfa && o2.op === OP.plus_uconst) return { kind: 'cfa', offset: o2.a };
  if (n === 2 && (o2.op === OP.GNU_push_tls_address || o2.op === OP.form_tls_address) && isConst(o)) return { kind: 'tls', offset: o.a };
  if (n === 3 && tail && o.op >= OP.breg0 && o.op <= OP.breg31 && o2.op === OP.plus_uconst) {
    return { kind: 'breg-value', reg: o.op - OP.breg0, name: reg(o.op - OP.breg0), offset: o.a + o2.a };
  }
  if (n === 0) return { kind: 'optimized-out' };
  const names = ops.map((x) => opName(x.op)).join(' ');
  return { kind: 'unsupported', why: names };
}

function isConst(o: Op): boolean {
  return (o.op >= OP.lit0 && o.op <= OP.lit31) || (o.op >= OP.const1u && o.op <= OP.consts);
}

function opName(op: number): string {
  for (const [k, v] of Object.entries(OP)) if (v === op) return `DW_OP_${k}`;
  if (op >= OP.lit0 && op <= OP.lit31) return `DW_OP_lit${op - OP.lit0}`;
  if (op >= OP.reg0 && op <= OP.reg31) return `DW_OP_reg${op - OP.reg0}`;
  if (op >= OP.breg0 && op <= OP.breg31) return `DW_OP_breg${op - OP.breg0}`;
  return `0x${op.toString(16)}`;
}

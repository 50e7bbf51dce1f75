// The only module that touches iced-x86 (a WASM x86 decoder). It is loaded on first use: compiling its
// ~800 KB of WASM costs ~100 ms, which only Go return probes on x86-64 should pay.
// Tests: test/unit/core/probes/inlinedEntries.fixture.test.ts, test/unit/core/probes/returns.test.ts,
// test/unit/core/probes/provedNoReturn.test.ts
import type * as Iced from 'iced-x86';

/** What return-site scanning needs to know about one decoded x86-64 instruction. */
export type X86Kind =
  | 'ret' // near RET / RET imm16 (with or without a rep prefix)
  | 'jmp' // unconditional direct JMP (target set)
  | 'jcc' // conditional direct jump (target set)
  | 'jmp-indirect' // JMP r/m, which leaves the function as far as a linear scan can tell
  | 'stop' // UD2, INT3, far RET/IRET: nothing after it is reached by falling through
  | 'other';

export interface X86Insn {
  address: bigint;
  length: number;
  kind: X86Kind;
  /** Branch target of 'jmp' and 'jcc'. */
  target?: bigint;
}

export type X86Step = X86Insn | { address: bigint; invalid: true; reason: string };

let iced: typeof Iced | undefined;

function load(): typeof Iced {
  // A plain require so that esbuild bundles the package like any other CommonJS dependency.
  // eslint-disable-next-line @typescript-eslint/no-require-imports
  return (iced ??= require('iced-x86') as typeof Iced);
}

/**
 * Decodes 64-bit code linearly from its first byte (one Decoder over the buffer, one Instruction object
 * reused) and calls `visit` for each control-flow instruction other than calls; `visit` returns false to stop
 * early. An undecodable instruction is reported once and ends the walk: the decoder cannot resynchronise
 * reliably past it. Every property read crosses into WASM, so ordinary instructions are passed over after
 * reading two.
 */
export function decodeX86(code: Uint8Array, address: bigint, visit: (step: X86Step) => boolean): void {
  const x = load();
  const decoder = new x.Decoder(64, code, x.DecoderOptions.None);
  const insn = new x.Instruction();
  try {
    decoder.ip = address;
    while (decoder.canDecode) {
      decoder.decodeOut(insn);
      const flow = insn.flowControl;
      if (flow === x.FlowControl.Next || flow === x.FlowControl.Call || flow === x.FlowControl.IndirectCall) continue;
      // iced gives Code.INVALID the Exception flow kind, so undecodable bytes always come this way.
      if (insn.code === x.Code.INVALID) {
        visit({ address: insn.ip, invalid: true, reason: decoderErrorText(x, decoder.lastError) });
        return;
      }
      const step = classify(x, insn, flow, insn.ip);
      if (step.kind !== 'other' && !visit(step)) return;
    }
  } finally {
    insn.free();
    decoder.free();
  }
}

function classify(x: typeof Iced, insn: Iced.Instruction, flow: Iced.FlowControl, address: bigint): X86Insn {
  const length = insn.length;
  switch (flow) {
    case x.FlowControl.Return:
      return { address, length, kind: insn.mnemonic === x.Mnemonic.Ret ? 'ret' : 'stop' };
    case x.FlowControl.UnconditionalBranch:
      // JMP FAR ptr16:32 is also an unconditional branch but does not exist in 64-bit mode.
      return insn.isJmpShortOrNear
        ? { address, length, kind: 'jmp', target: insn.nearBranchTarget }
        : { address, length, kind: 'jmp-indirect' };
    case x.FlowControl.IndirectBranch:
      return { address, length, kind: 'jmp-indirect' };
    case x.FlowControl.ConditionalBranch:
      // JRCXZ/LOOP/Jcc all carry a near target; XBEGIN-style branches are a separate flow kind.
      return { address, length, kind: 'jcc', target: insn.nearBranchTarget };
    case x.FlowControl.Exception:
      return { address, length, kind: 'stop' };
    case x.FlowControl.Interrupt:
      return { address, length, kind: insn.mnemonic === x.Mnemonic.Int3 ? 'stop' : 'other' };
    default:
      return { address, length, kind: 'other' };
  }
}

function decoderErrorText(x: typeof Iced, err: Iced.DecoderError): string {
  if (err === x.DecoderError.NoMoreBytes) return 'instruction runs past the end of the function';
  return 'invalid x86-64 instruction';
}

/** One instruction of a control-flow graph walk (inlinedExits.ts): every instruction, calls included. */
export interface X86FlowInsn {
  address: bigint;
  length: number;
  kind: X86Kind | 'call' | 'call-indirect' | 'jmp-got' | 'nop';
  /** Branch or call target of 'jmp', 'jcc' and 'call'. */
  target?: bigint;
  /** A 'jmp-indirect' through a switch table GCC laid out in the canonical way (see jumpTable). */
  table?: JumpTable;
  /**
   * An 'other' or 'nop' that only moves a value the way a register allocator does (see onlyMoves): it computes
   * nothing, makes no constant, and writes no memory but the frame's own slots.
   */
  moves?: true;
  /** A `mov $imm,%reg`: it makes a constant in a register and does nothing else. */
  constant?: true;
  /** An `lea X(%rip),%reg`: the address X it puts in the register. */
  loadsAddress?: bigint;
}

/**
 * A switch's jump table: `rel32` entries are offsets from the table's own address (PIC: `lea T(%rip),%rB;
 * movslq (%rB,%rI,4),%rA; add %rB,%rA; jmp *%rA`), `abs64` entries absolute addresses (`jmp *T(,%rI,8)`).
 * The table's length is not decoded (the bound check may be far away): readers stop at the first entry that
 * is not an instruction of the function, which can only add edges that never run.
 */
export interface JumpTable {
  address: bigint;
  entry: 'rel32' | 'abs64';
}

interface Recent {
  mnemonic: number;
  op0?: number;
  op1Reg?: number;
  memBase?: number;
  memIndex?: number;
  scale?: number;
  disp?: bigint;
}

/**
 * Decodes 64-bit code linearly and returns every instruction (ordinary ones as 'other'), or stops at the first
 * undecodable one, which is returned as the last element. `jmp *X(%rip)` is told apart as 'jmp-got': it jumps
 * through a pointer in data (a GOT slot or a function-pointer global), which holds a function's address, never
 * an address inside the caller's own code, unlike `jmp *%rax` (switch tables, computed goto).
 */
export function decodeX86Flow(code: Uint8Array, address: bigint): Array<X86FlowInsn | { address: bigint; invalid: true; reason: string }> {
  const x = load();
  const decoder = new x.Decoder(64, code, x.DecoderOptions.None);
  const insn = new x.Instruction();
  const out: Array<X86FlowInsn | { address: bigint; invalid: true; reason: string }> = [];
  // The last few LEA/MOVSXD/ADD instructions, for recognising a jump table's set-up before `jmp *%reg`.
  const recent: Recent[] = [];
  try {
    decoder.ip = address;
    while (decoder.canDecode) {
      decoder.decodeOut(insn);
      const flow = insn.flowControl;
      const at = insn.ip;
      if (flow === x.FlowControl.Next) {
        const m = insn.mnemonic;
        if (m === x.Mnemonic.Lea || m === x.Mnemonic.Movsxd || m === x.Mnemonic.Add) {
          const mem = insn.op1Kind === x.OpKind.Memory;
          recent.push({
            mnemonic: m,
            op0: insn.op0Kind === x.OpKind.Register ? insn.op0Register : undefined,
            op1Reg: insn.op1Kind === x.OpKind.Register ? insn.op1Register : undefined,
            memBase: mem ? insn.memoryBase : undefined,
            memIndex: mem ? insn.memoryIndex : undefined,
            scale: mem ? insn.memoryIndexScale : undefined,
            disp: mem ? insn.memoryDisplacement : undefined,
          });
          if (recent.length > 8) recent.shift();
        }
        const step: X86FlowInsn = { address: at, length: insn.length, kind: m === x.Mnemonic.Nop ? 'nop' : 'other' };
        if (m === x.Mnemonic.Nop || (movesOf(x).has(m) && onlyMoves(x, insn))) step.moves = true;
        if (
          m === x.Mnemonic.Mov &&
          insn.opCount === 2 &&
          insn.op0Kind === x.OpKind.Register &&
          insn.op1Kind !== x.OpKind.Register &&
          insn.op1Kind !== x.OpKind.Memory
        )
          step.constant = true;
        if (
          m === x.Mnemonic.Lea &&
          insn.op0Kind === x.OpKind.Register &&
          insn.memoryBase === x.Register.RIP &&
          insn.memoryIndex === x.Register.None
        )
          step.loadsAddress = insn.memoryDisplacement;
        out.push(step);
        continue;
      }
      if (insn.code === x.Code.INVALID) {
        out.push({ address: at, invalid: true, reason: decoderErrorText(x, decoder.lastError) });
        break;
      }
      if (flow === x.FlowControl.Call) {
        out.push(
          insn.isCallNear
            ? { address: at, length: insn.length, kind: 'call', target: insn.nearBranchTarget }
            : { address: at, length: insn.length, kind: 'call-indirect' },
        );
        continue;
      }
      if (flow === x.FlowControl.IndirectCall) {
        out.push({ address: at, length: insn.length, kind: 'call-indirect' });
        continue;
      }
      const step: X86FlowInsn = classify(x, insn, flow, at);
      if (step.kind === 'jmp-indirect') {
        if (insn.op0Kind === x.OpKind.Memory && insn.memoryBase === x.Register.RIP) step.kind = 'jmp-got';
        else if (insn.op0Kind === x.OpKind.Register) step.table = relativeTable(x, insn.op0Register, recent);
        else if (insn.op0Kind === x.OpKind.Memory && insn.memoryBase === x.Register.None && insn.memoryIndexScale === 8)
          step.table = { address: insn.memoryDisplacement, entry: 'abs64' };
      }
      out.push(step);
      recent.length = 0;
    }
  } finally {
    insn.free();
    decoder.free();
  }
  return out;
}

let moveMnemonics: Set<number> | undefined;
/** Mnemonics onlyMoves looks at further (the integer and SSE moves, LEA). */
function movesOf(x: typeof Iced): Set<number> {
  const M = x.Mnemonic;
  return (moveMnemonics ??= new Set([M.Mov, M.Lea, M.Movapd, M.Movaps, M.Movd, M.Movdqa, M.Movdqu, M.Movq, M.Movups]));
}

/**
 * What a register allocator inserts to keep values where they are needed: a copy between registers, a spill of a
 * register to the frame (`mov %rbp,0x28(%rsp)`), its reload, and the address of a frame slot (`lea N(%rsp)`). GCC
 * gives such instructions whatever source position is near, often an inlined copy's. Constants (an immediate,
 * `xor %eax,%eax`, an address `lea X(%rip)`) are not among them: a call of a function that returns a constant may
 * compute nothing else. Stores of immediates to the frame, any other memory and any arithmetic are work too.
 */
function onlyMoves(x: typeof Iced, insn: Iced.Instruction): boolean {
  if (insn.segmentPrefix !== x.Register.None || insn.opCount !== 2) return false;
  const frame = () => insn.memoryBase === x.Register.RSP && insn.memoryIndex === x.Register.None;
  const k0 = insn.op0Kind;
  const k1 = insn.op1Kind;
  const reg = x.OpKind.Register;
  if (insn.mnemonic === x.Mnemonic.Lea) return k0 === reg && frame();
  if (k0 === reg) return k1 === reg || (k1 === x.OpKind.Memory && frame());
  return k0 === x.OpKind.Memory && k1 === reg && frame();
}

/** `lea T(%rip),%rB; movslq (%rB,%rI,4),%rA; add %rB,%rA` before `jmp *%rA`, in any order of the first two. */
function relativeTable(x: typeof Iced, reg: Iced.Register, recent: readonly Recent[]): JumpTable | undefined {
  const last = (before: number, ok: (r: Recent) => boolean): number => {
    for (let k = before - 1; k >= 0; k--) if (ok(recent[k])) return k;
    return -1;
  };
  const add = last(recent.length, (r) => r.mnemonic === x.Mnemonic.Add && r.op0 === reg && r.op1Reg !== undefined);
  if (add < 0) return undefined;
  const base = recent[add].op1Reg!;
  const load = last(
    add,
    (r) => r.mnemonic === x.Mnemonic.Movsxd && r.op0 === reg && r.memBase === base && r.scale === 4 && r.memIndex !== x.Register.None,
  );
  const lea = last(add, (r) => r.mnemonic === x.Mnemonic.Lea && r.op0 === base && r.memBase === x.Register.RIP);
  if (load < 0 || lea < 0) return undefined;
  return { address: recent[lea].disp!, entry: 'rel32' };
}

/** The 16 general registers, by their number in `X86ValueInsn` (rax 0 … rdi 7, r8 8 … r15 15). */
export const GPR_NAMES = ['rax', 'rcx', 'rdx', 'rbx', 'rsp', 'rbp', 'rsi', 'rdi', 'r8', 'r9', 'r10', 'r11', 'r12', 'r13', 'r14', 'r15'];

/** What following constants through the general registers needs of one instruction (see decodeX86Values). */
export interface X86ValueInsn extends X86FlowInsn {
  /** The general registers it writes, wholly or in part, as a bit set by number; -1: any of them. */
  writes: number;
  /** It sets one register exactly: to a constant, or to another register's value (its low 32 bits, zero-extended). */
  set?: { reg: number; value?: bigint; from?: number; bits: 32 | 64 };
  /** `test %r,%r` of one register (its low `bits`): ZF then says whether that is zero. */
  test?: { reg: number; bits: 32 | 64 };
  /** It writes ZF (any flag write is taken to). */
  flags: boolean;
  /** A 'jcc' on ZF alone: taken when ZF is set ('e') or clear ('ne'). */
  cc?: 'e' | 'ne';
}

/**
 * Decodes like decodeX86Flow and adds, per instruction, its effect on the general registers and flags from iced's
 * own instruction info: the registers written, an exact value where the instruction makes one (`xor %r,%r`, a move
 * of an immediate, a register copy of 32 or 64 bits), and a `test %r,%r`. Anything else only forgets.
 */
export function decodeX86Values(
  code: Uint8Array,
  address: bigint,
): Array<X86ValueInsn | { address: bigint; invalid: true; reason: string }> {
  const flow = decodeX86Flow(code, address);
  const x = load();
  const gpr = new Map<number, number>(GPR_NAMES.map((n, k) => [x.Register[n.toUpperCase() as keyof typeof x.Register] as number, k]));
  const decoder = new x.Decoder(64, code, x.DecoderOptions.None);
  const insn = new x.Instruction();
  const factory = new x.InstructionInfoFactory();
  const written = new Set([x.OpAccess.Write, x.OpAccess.CondWrite, x.OpAccess.ReadWrite, x.OpAccess.ReadCondWrite]);
  const out: Array<X86ValueInsn | { address: bigint; invalid: true; reason: string }> = [];
  try {
    decoder.ip = address;
    for (const step of flow) {
      if ('invalid' in step) {
        out.push(step);
        break;
      }
      decoder.decodeOut(insn);
      const v: X86ValueInsn = { ...step, writes: 0, flags: insn.rflagsModified !== 0 };
      if (insn.isSaveRestoreInstruction) v.writes = -1;
      else {
        const info = factory.info(insn);
        for (const u of info.usedRegisters()) {
          const k = gpr.get(x.RegisterExt.fullRegister(u.register));
          if (k !== undefined && written.has(u.access)) v.writes |= 1 << k;
          u.free();
        }
        info.free();
      }
      const reg = x.OpKind.Register;
      const bitsOf = (r: number): 32 | 64 | undefined => (x.RegisterExt.isGPR64(r) ? 64 : x.RegisterExt.isGPR32(r) ? 32 : undefined);
      const full = (r: number) => gpr.get(x.RegisterExt.fullRegister(r));
      const m = insn.mnemonic;
      if (insn.opCount === 2 && insn.op0Kind === reg) {
        const r0 = insn.op0Register;
        const b0 = bitsOf(r0);
        const k0 = full(r0);
        if (b0 !== undefined && k0 !== undefined) {
          if (m === x.Mnemonic.Xor && insn.op1Kind === reg && insn.op1Register === r0) v.set = { reg: k0, value: 0n, bits: b0 };
          else if (m === x.Mnemonic.Mov && insn.op1Kind === reg && bitsOf(insn.op1Register) === b0)
            v.set = { reg: k0, from: full(insn.op1Register), bits: b0 };
          else if (m === x.Mnemonic.Mov && insn.op1Kind !== reg && insn.op1Kind !== x.OpKind.Memory)
            v.set = { reg: k0, value: BigInt.asUintN(b0, insn.immediate(1)), bits: b0 };
          else if (m === x.Mnemonic.Test && insn.op1Kind === reg && insn.op1Register === r0) v.test = { reg: k0, bits: b0 };
        }
      }
      if (step.kind === 'jcc') {
        if (insn.conditionCode === x.ConditionCode.e) v.cc = 'e';
        else if (insn.conditionCode === x.ConditionCode.ne) v.cc = 'ne';
      }
      out.push(v);
    }
  } finally {
    factory.free();
    insn.free();
    decoder.free();
  }
  return out;
}

/** Location numbers of decodeX86Effects: 0–15 the general registers (GPR_NAMES), then these. */
export const LOC_FLAGS = 16;
/** The vector registers xmm/ymm/zmm 0–31 are LOC_VEC + n. */
export const LOC_VEC = 17;
/** Any other register (x87, MMX, mask, segment …): never followed. */
export const LOC_OTHER = 49;

/** A register (a location number) or a slot of the frame at `disp(%rsp)`. */
export type X86Loc = { reg: number } | { disp: number; size: number };

/** What following one value through registers and the frame needs of an instruction (see decodeX86Effects). */
export interface X86Effects {
  address: bigint;
  /** Locations read: registers (addresses' base and index included) and the flags. */
  reads: number[];
  /** Registers written whole: a 64- or 32-bit general register (the upper half is zeroed), every status flag. */
  writes: number[];
  /** Registers written in part or only on some condition: some of the old value may survive. */
  partial: number[];
  /** Accesses of the frame at `disp(%rsp)` (no index): size in bytes, and whether the write is certain. */
  frame: Array<{ disp: number; size: number; read: boolean; write: boolean; whole: boolean }>;
  /** Memory read or written through any other address. */
  memRead: boolean;
  memWrite: boolean;
  /** What it adds to %rsp: 0 when it leaves it alone (a call: once it returns), undefined when not known. */
  rsp: number | undefined;
  /** `lea N(%rsp),%r`: the address of the frame slot N, which code (a callee) may then read through. */
  frameAddress?: number;
  /** %rsp read as a value some other way (copied, indexed): any of the frame may be read through it. */
  framePointer?: true;
  /** It only copies one location into another (see onlyMoves). */
  move?: { from: X86Loc; to: X86Loc };
}

/**
 * Decodes 64-bit code linearly (as decodeX86Flow, stopping at the first undecodable instruction) and gives, per
 * instruction, the registers and frame slots it reads and writes, from iced's own instruction info.
 */
export function decodeX86Effects(code: Uint8Array, address: bigint): X86Effects[] {
  const x = load();
  const R = x.Register;
  const gpr = new Map<number, number>(GPR_NAMES.map((n, k) => [R[n.toUpperCase() as keyof typeof R] as number, k]));
  const locOf = (r: number): number => {
    const full = x.RegisterExt.fullRegister(r);
    const g = gpr.get(full);
    if (g !== undefined) return g;
    if (full >= R.ZMM0 && full <= R.ZMM31) return LOC_VEC + (full - R.ZMM0);
    return LOC_OTHER;
  };
  const wholeGpr = (r: number) => x.RegisterExt.isGPR64(r) || x.RegisterExt.isGPR32(r);
  const STATUS = 0x3f; // OF SF ZF AF CF PF
  const decoder = new x.Decoder(64, code, x.DecoderOptions.None);
  const insn = new x.Instruction();
  const factory = new x.InstructionInfoFactory();
  const A = x.OpAccess;
  const out: X86Effects[] = [];
  try {
    decoder.ip = address;
    while (decoder.canDecode) {
      decoder.decodeOut(insn);
      if (insn.code === x.Code.INVALID) break;
      const e: X86Effects = { address: insn.ip, reads: [], writes: [], partial: [], frame: [], memRead: false, memWrite: false, rsp: 0 };
      const info = factory.info(insn);
      let writesRsp = false;
      for (const u of info.usedRegisters()) {
        const loc = locOf(u.register);
        const a = u.access;
        if (a === A.Read || a === A.CondRead || a === A.ReadWrite || a === A.ReadCondWrite) e.reads.push(loc);
        if (a === A.Write || a === A.ReadWrite) (wholeGpr(u.register) ? e.writes : e.partial).push(loc);
        else if (a === A.CondWrite || a === A.ReadCondWrite) e.partial.push(loc);
        if (loc === 4 && a !== A.Read && a !== A.CondRead && a !== A.None) writesRsp = true;
        u.free();
      }
      for (const m of info.usedMemory()) {
        const a = m.access;
        if (a !== A.NoMemAccess && a !== A.None) {
          const read = a === A.Read || a === A.CondRead || a === A.ReadWrite || a === A.ReadCondWrite;
          const write = a === A.Write || a === A.CondWrite || a === A.ReadWrite || a === A.ReadCondWrite;
          if (m.base === R.RSP && m.index === R.None && m.segment !== R.FS && m.segment !== R.GS) {
            const size = x.MemorySizeExt.size(m.memorySize) || 64;
            e.frame.push({ disp: Number(BigInt.asIntN(64, m.displacement)), size, read, write, whole: a === A.Write });
          } else {
            e.memRead ||= read;
            e.memWrite ||= write;
          }
        }
        m.free();
      }
      info.free();
      if (insn.rflagsRead !== 0) e.reads.push(LOC_FLAGS);
      const flagsSet = insn.rflagsWritten | insn.rflagsCleared | insn.rflagsSet | insn.rflagsUndefined;
      if ((flagsSet & STATUS) === STATUS) e.writes.push(LOC_FLAGS);
      else if (flagsSet !== 0) e.partial.push(LOC_FLAGS);
      const m = insn.mnemonic;
      const reg = x.OpKind.Register;
      const isRsp = (k: number) => insn.opKind(k) === reg && x.RegisterExt.fullRegister(insn.opRegister(k)) === R.RSP;
      const frameMem = (k: number) => insn.opKind(k) === x.OpKind.Memory && insn.memoryBase === R.RSP && insn.memoryIndex === R.None;
      if (m === x.Mnemonic.Lea && insn.memoryBase === R.RSP && insn.memoryIndex === R.None && !isRsp(0))
        e.frameAddress = Number(BigInt.asIntN(64, insn.memoryDisplacement));
      else if (m === x.Mnemonic.Lea && (insn.memoryBase === R.RSP || insn.memoryIndex === R.RSP)) e.framePointer = true;
      for (let k = 1; k < insn.opCount; k++) if (isRsp(k)) e.framePointer = true;
      if (insn.opCount === 1 && isRsp(0) && m === x.Mnemonic.Push) e.framePointer = true;
      if (writesRsp) {
        const flow = insn.flowControl;
        if (flow === x.FlowControl.Call || flow === x.FlowControl.IndirectCall) e.rsp = 0;
        else if (m === x.Mnemonic.Push || m === x.Mnemonic.Pop) e.rsp = insn.stackPointerIncrement;
        else if (
          (m === x.Mnemonic.Add || m === x.Mnemonic.Sub) &&
          isRsp(0) &&
          insn.opCount === 2 &&
          insn.op1Kind !== reg &&
          insn.op1Kind !== x.OpKind.Memory
        ) {
          const imm = Number(BigInt.asIntN(64, insn.immediate(1)));
          e.rsp = m === x.Mnemonic.Add ? imm : -imm;
        } else if (m === x.Mnemonic.Lea && isRsp(0) && insn.memoryBase === R.RSP && insn.memoryIndex === R.None)
          e.rsp = Number(BigInt.asIntN(64, insn.memoryDisplacement));
        else e.rsp = undefined;
      }
      if (m !== x.Mnemonic.Lea && movesOf(x).has(m) && onlyMoves(x, insn)) {
        const loc = (k: number): X86Loc =>
          insn.opKind(k) === reg
            ? { reg: locOf(insn.opRegister(k)) }
            : { disp: Number(BigInt.asIntN(64, insn.memoryDisplacement)), size: x.MemorySizeExt.size(insn.memorySize) || 64 };
        if ((insn.opKind(0) === reg || frameMem(0)) && (insn.opKind(1) === reg || frameMem(1))) e.move = { from: loc(1), to: loc(0) };
      }
      out.push(e);
    }
  } finally {
    factory.free();
    insn.free();
    decoder.free();
  }
  return out;
}

// Functions proved never to return from their own code: every path from the function's entry to a return (a RET, a
// jump out of its code, a computed jump, undecodable code) passes a call that never returns. A call never returns
// when its callee is known not to (by name, DWARF or layout: the `known` test) or is proved so here for the
// constants the path passes it in the argument registers (`xor %edi,%edi; call f`: f's paths with %rdi = 0), to a
// few calls deep. Code that runs off the end of the function's code is no return: a compiler lays nothing out for
// a return to land on only after a call it knows does not come back (redis's `bugReportEnd` ends with `_exit` and
// padding); code that runs past the end other than after a call and padding is taken for a way out.
// Constants are followed through the general registers only: set by a move of an immediate, a zeroing xor or a
// register copy, and forgotten at any other write (iced's instruction info says which registers an instruction
// writes). A call keeps the registers the ABI has the callee save (rbx, rbp, r12–r15) and forgets the others. A
// conditional jump on ZF after `test %r,%r` of a register whose value is known goes only its one way.
// Redis's `_serverAssert` is one: it returns only after `bugReportEnd(0, 0)`, which calls `abort` or `_exit` when its
// first argument is 0, though redis's module API `RM__Assert` calls it as if it returned.
// Tests: test/unit/core/probes/provedNoReturn.test.ts
import { decodeX86Values, type X86ValueInsn } from './x86decoder';
import type { CodeRange } from './layoutNoReturn';

/** The argument registers of the SysV x86-64 calling convention: rdi, rsi, rdx, rcx, r8, r9. */
const ARGS = [7, 6, 2, 1, 8, 9];
/** Registers a call leaves as they were (the callee saves them): rbx, rsp, rbp, r12–r15. */
const SAVED = [3, 4, 5, 12, 13, 14, 15];
/** How many calls deep constants are followed. */
const MAX_DEPTH = 3;
/** Instructions judged per instance at most; past it every further callee is taken to return. */
const BUDGET = 4_000_000;

interface State {
  regs: Array<bigint | undefined>;
  zf: boolean | undefined;
}

type Decoded = { insns: X86ValueInsn[]; at: Map<bigint, number>; invalid: boolean };

export class ProvedNoReturn {
  private readonly decoded = new Map<bigint, Decoded | null>();
  private readonly verdicts = new Map<string, boolean>();
  private spent = 0;

  /**
   * `rangesOf` gives the code ranges of the function entered at an address (its .cold blocks included), or undefined
   * for an address no function is entered at; `read` a range's bytes; `known` whether a callee is known never to
   * return otherwise.
   */
  constructor(
    private readonly rangesOf: (entry: bigint) => readonly CodeRange[] | undefined,
    private readonly read: (start: bigint, size: number) => Uint8Array | undefined,
    private readonly known: (target: bigint) => boolean,
  ) {}

  /** Whether a direct call to `target` never returns, whatever its arguments. */
  has(target: bigint): boolean {
    return this.judge(target, new Map(), 0);
  }

  private judge(target: bigint, args: ReadonlyMap<number, bigint>, depth: number): boolean {
    if (this.known(target)) return true;
    const key = `${target}:${[...args].map(([r, v]) => `${r}=${v}`).join(',')}`;
    const had = this.verdicts.get(key);
    if (had !== undefined) return had;
    // While a function is judged, a call of it (recursion) is taken to return.
    this.verdicts.set(key, false);
    const v = depth <= MAX_DEPTH && this.neverReturns(target, args, depth);
    this.verdicts.set(key, v);
    return v;
  }

  private code(entry: bigint): Decoded | undefined {
    let d = this.decoded.get(entry);
    if (d === undefined) {
      d = null;
      const ranges = this.rangesOf(entry);
      if (ranges && ranges.some((r) => entry >= r.start && entry < r.end)) {
        const insns: X86ValueInsn[] = [];
        let invalid = false;
        for (const r of ranges) {
          const size = Number(r.end - r.start);
          const bytes = size > 0 ? this.read(r.start, size) : undefined;
          if (!bytes || bytes.length !== size) invalid = true;
          else
            for (const s of decodeX86Values(bytes, r.start)) {
              if ('invalid' in s) invalid = true;
              else insns.push(s);
            }
        }
        insns.sort((a, b) => (a.address < b.address ? -1 : a.address > b.address ? 1 : 0));
        const at = new Map<bigint, number>();
        insns.forEach((i, n) => at.set(i.address, n));
        d = { insns, at, invalid };
      }
      this.decoded.set(entry, d);
    }
    return d ?? undefined;
  }

  private neverReturns(entry: bigint, args: ReadonlyMap<number, bigint>, depth: number): boolean {
    const d = this.code(entry);
    if (!d || d.invalid) return false;
    const { insns, at } = d;
    if (this.spent + insns.length > BUDGET) return false;
    this.spent += insns.length;
    const start = at.get(entry)!;
    // Cheap first, when nothing is known of the arguments: a way out that passes no call at all (both ways at every
    // test) returns (a constant the function makes itself could rule that way out: it is taken to return then).
    if (args.size === 0 && this.leavesWithoutCall(d, start)) return false;
    const states = new Map<number, State>();
    const work: number[] = [];
    const flow = (n: number, s: State) => {
      const cur = states.get(n);
      if (!cur) {
        states.set(n, { regs: [...s.regs], zf: s.zf });
        work.push(n);
        return;
      }
      let changed = false;
      for (let r = 0; r < 16; r++)
        if (cur.regs[r] !== undefined && cur.regs[r] !== s.regs[r]) {
          cur.regs[r] = undefined;
          changed = true;
        }
      if (cur.zf !== undefined && cur.zf !== s.zf) {
        cur.zf = undefined;
        changed = true;
      }
      if (changed) work.push(n);
    };
    const regs: Array<bigint | undefined> = new Array(16).fill(undefined);
    for (const [r, v] of args) regs[r] = v;
    flow(start, { regs, zf: undefined });
    const argsOf = (s: State) => {
      const m = new Map<number, bigint>();
      for (const r of ARGS) if (s.regs[r] !== undefined) m.set(r, s.regs[r]!);
      return m;
    };
    while (work.length) {
      const n = work.pop()!;
      const i = insns[n];
      const s = states.get(n)!;
      const next = at.get(i.address + BigInt(i.length)); // undefined: off the end of the code, which is no return
      switch (i.kind) {
        case 'ret':
        case 'jmp-got':
        case 'jmp-indirect':
          return false;
        case 'stop':
          continue;
        case 'jmp': {
          const t = at.get(i.target!);
          if (t !== undefined) flow(t, s);
          else if (!this.judge(i.target!, argsOf(s), depth + 1)) return false; // a tail call that returns
          continue;
        }
        case 'jcc': {
          const t = at.get(i.target!);
          const taken = i.cc === undefined || s.zf === undefined ? undefined : (i.cc === 'e') === s.zf;
          if (taken !== false) {
            if (t === undefined) return false; // a jump out of the function's code
            flow(t, s);
          }
          if (taken !== true) {
            if (next === undefined) return false;
            flow(next, s);
          }
          continue;
        }
        case 'call':
        case 'call-indirect': {
          if (i.kind === 'call' && this.judge(i.target!, argsOf(s), depth + 1)) continue;
          const after: State = { regs: new Array(16).fill(undefined), zf: undefined };
          for (const r of SAVED) after.regs[r] = s.regs[r];
          if (next !== undefined) flow(next, after);
          continue;
        }
        default:
          if (next !== undefined) flow(next, step(i, s));
          else if (!afterCall(insns, n)) return false; // code runs on past the end: not laid out after a call
      }
    }
    return true;
  }

  /** Some RET or jump out of the code is reached from `start` without passing a call, taking every branch. */
  private leavesWithoutCall(d: Decoded, start: number): boolean {
    const { insns, at } = d;
    const seen = new Uint8Array(insns.length);
    const work = [start];
    seen[start] = 1;
    while (work.length) {
      const i = insns[work.pop()!];
      if (i.kind === 'ret' || i.kind === 'jmp-got' || i.kind === 'jmp-indirect') return true;
      if (i.kind === 'call' || i.kind === 'call-indirect' || i.kind === 'stop') continue;
      const next = at.get(i.address + BigInt(i.length));
      const targets: Array<number | undefined> = [];
      if (i.kind === 'jmp' || i.kind === 'jcc') {
        const t = at.get(i.target!);
        if (t === undefined && i.kind === 'jcc') return true;
        if (t === undefined) continue; // a tail call: judged with the calls
        targets.push(t);
      }
      if (i.kind !== 'jmp') targets.push(next);
      for (const t of targets)
        if (t !== undefined && !seen[t]) {
          seen[t] = 1;
          work.push(t);
        }
    }
    return false;
  }
}

/** Only padding lies between insns[n] and a call before it: the code ends after that call. */
function afterCall(insns: readonly X86ValueInsn[], n: number): boolean {
  for (let k = n; k >= 0 && (k === n || insns[k].address + BigInt(insns[k].length) === insns[k + 1].address); k--) {
    if (insns[k].kind === 'call' || insns[k].kind === 'call-indirect') return true;
    if (insns[k].kind !== 'nop') return false;
  }
  return false;
}

/** The state after an ordinary instruction: what it sets exactly, the rest of what it writes forgotten. */
function step(i: X86ValueInsn, s: State): State {
  const regs = i.writes === -1 ? new Array<bigint | undefined>(16).fill(undefined) : [...s.regs];
  let value: bigint | undefined;
  if (i.set) value = i.set.value ?? (i.set.from !== undefined ? s.regs[i.set.from] : undefined);
  if (i.writes !== -1) for (let r = 0; r < 16; r++) if (i.writes & (1 << r)) regs[r] = undefined;
  if (i.set && value !== undefined) regs[i.set.reg] = i.set.bits === 32 ? BigInt.asUintN(32, value) : value;
  let zf = i.flags ? undefined : s.zf;
  if (i.test) {
    const v = s.regs[i.test.reg];
    zf = v === undefined ? undefined : BigInt.asUintN(i.test.bits, v) === 0n;
  }
  return { regs, zf };
}

// Functions the compiler treats as never returning though nothing declares it. GCC emits nothing after a call it
// knows does not come back: the callee is noreturn, or the source says so at the call (`panic(...),
// __builtin_unreachable()`, as redis's serverPanic and serverAssert do). What it lays out after such a call is
// other code (another path's, another inlined copy's), and a fall-through edge would wrongly join it to the call.
//
// A callee is taken never to return when
//   - some code range (a function's hot part or a .cold block) ends with a direct call to it: nothing follows for a
//     return to land on; and
//   - at each of its other direct calls, what follows is padding, the range's end, or a jump target: code that
//     other paths lead to (a jump's or a switch table's target), or the caller's own way out (straight-line code to
//     its return) in a caller that never returns by these rules itself. A call that returns is followed by the
//     code that goes on after it, which typically nothing else jumps to.
// The second rule keeps out a callee that returns at some calls and is promised not to at others: PostgreSQL's
// errfinish returns after a warning and is followed by pg_unreachable() after an error.
// Tests: test/unit/core/probes/layoutNoReturn.test.ts
import { tableTargets } from './inlinedExits';
import { decodeX86Flow, type X86FlowInsn } from './x86decoder';

export interface CodeRange {
  start: bigint;
  end: bigint;
}

const CALL_REL32 = 0xe8;

/** The target of the `call rel32` whose opcode is at code[i], or undefined when the bytes do not fit one. */
function rel32Target(code: Uint8Array, i: number, start: bigint): bigint | undefined {
  if (code[i] !== CALL_REL32 || i + 5 > code.length) return undefined;
  const rel = code[i + 1] | (code[i + 2] << 8) | (code[i + 3] << 16) | (code[i + 4] << 24);
  return start + BigInt(i + 5) + BigInt(rel);
}

/**
 * Judges callees by the rules above, each when first asked: `functions` lists each function copy's code ranges
 * (a function's entry part and its .cold blocks together, so a jump from one into the other is seen); `read`
 * gives a range's bytes (undefined: not loaded); `isEntry` says whether an address is a function's entry.
 * A range is decoded only when it can hold a call of a callee being judged, and then from its first byte, so a
 * call is a real instruction, not bytes inside a longer one; a callee's calls are read until one refutes it.
 */
export class LayoutNoReturn {
  private readonly bytes = new Map<CodeRange, Uint8Array | null>();
  private readonly decoded = new Map<CodeRange, X86FlowInsn[]>();
  private candidates?: Set<bigint>;
  /** Per candidate, the functions (indexes into `functions`) whose bytes hold a `call rel32` to it. */
  private callers?: Map<bigint, number[]>;
  private readonly verdicts = new Map<bigint, boolean>();

  constructor(
    private readonly functions: ReadonlyArray<readonly CodeRange[]>,
    private readonly read: (start: bigint, size: number) => Uint8Array | undefined,
    private readonly isEntry: (address: bigint) => boolean,
  ) {}

  /** Whether a direct call to `target` never returns. */
  has(target: bigint): boolean {
    let v = this.verdicts.get(target);
    if (v === undefined) {
      // While a callee is judged, a question about it (through a caller's tail) is answered "it returns".
      this.verdicts.set(target, false);
      v = this.candidatesOnce().has(target) && !this.refuted(target);
      this.verdicts.set(target, v);
    }
    return v;
  }

  /** Every callee some range ends with a call to (the first rule). */
  candidatesOnce(): Set<bigint> {
    if (this.candidates) return this.candidates;
    const out = new Set<bigint>();
    for (const ranges of this.functions) {
      for (const r of ranges) {
        const code = this.code(r);
        if (!code || code.length < 5) continue;
        const target = rel32Target(code, code.length - 5, r.start);
        if (target === undefined || out.has(target) || !this.isEntry(target)) continue;
        const last = this.decode(r).at(-1);
        if (last?.kind === 'call' && last.target === target && last.address + BigInt(last.length) === r.end) out.add(target);
      }
    }
    this.candidates = out;
    return out;
  }

  /** Some call of `target` is followed by code only the fall-through reaches (the second rule). */
  private refuted(target: bigint): boolean {
    for (const f of this.callersOnce().get(target) ?? []) {
      const ranges = this.functions[f];
      const insns = ranges.map((r) => this.decode(r));
      const all = insns.flat();
      const at = new Map<bigint, number>();
      all.forEach((i, n) => at.set(i.address, n));
      const jumpedTo = new Set<bigint>();
      for (const i of all) {
        if ((i.kind === 'jmp' || i.kind === 'jcc') && i.target !== undefined) jumpedTo.add(i.target);
        if (i.kind === 'jmp-indirect' && i.table) for (const n of tableTargets(i.table, this.read, at)) jumpedTo.add(all[n].address);
      }
      for (let k = 0; k < insns.length; k++) {
        const list = insns[k];
        for (let n = 0; n < list.length; n++) {
          const i = list[n];
          if (i.kind !== 'call' || i.target !== target) continue;
          const next = list[n + 1];
          const after = i.address + BigInt(i.length);
          if (after === ranges[k].end || next === undefined || next.kind === 'nop' || jumpedTo.has(after)) continue;
          if (this.onlyReturns(list, n + 1, ranges) && this.neverReturnsItself(ranges)) continue;
          return true;
        }
      }
    }
    return false;
  }

  /** The code from list[n] on runs straight to the function's return (a RET, or a jump out of its ranges). */
  private onlyReturns(list: readonly X86FlowInsn[], n: number, ranges: readonly CodeRange[]): boolean {
    for (; n < list.length; n++) {
      const i = list[n];
      if (i.kind === 'ret') return true;
      if (i.kind === 'jmp') return !ranges.some((r) => i.target! >= r.start && i.target! < r.end);
      if (i.kind !== 'other' && i.kind !== 'nop' && i.kind !== 'call') return false;
    }
    return false;
  }

  /** Whether the function with these ranges never returns by these rules (false while it is being judged). */
  private neverReturnsItself(ranges: readonly CodeRange[]): boolean {
    const entry = ranges.find((r) => this.isEntry(r.start))?.start;
    return entry !== undefined && this.has(entry);
  }

  private callersOnce(): Map<bigint, number[]> {
    if (this.callers) return this.callers;
    const candidates = this.candidatesOnce();
    const out = new Map<bigint, number[]>();
    this.functions.forEach((ranges, f) => {
      const seen = new Set<bigint>();
      for (const r of ranges) {
        const code = this.code(r);
        if (!code) continue;
        for (let i = code.indexOf(CALL_REL32); i >= 0; i = code.indexOf(CALL_REL32, i + 1)) {
          const t = rel32Target(code, i, r.start);
          if (t === undefined || !candidates.has(t) || seen.has(t)) continue;
          seen.add(t);
          const list = out.get(t);
          if (list) list.push(f);
          else out.set(t, [f]);
        }
      }
    });
    this.callers = out;
    return out;
  }

  private code(r: CodeRange): Uint8Array | undefined {
    let b = this.bytes.get(r);
    if (b === undefined) {
      const size = Number(r.end - r.start);
      const got = size > 0 ? this.read(r.start, size) : undefined;
      b = got && got.length === size ? got : null;
      this.bytes.set(r, b);
    }
    return b ?? undefined;
  }

  private decode(r: CodeRange): X86FlowInsn[] {
    let d = this.decoded.get(r);
    if (!d) {
      d = [];
      const code = this.code(r);
      if (code) for (const s of decodeX86Flow(code, r.start)) if (!('invalid' in s)) d.push(s);
      this.decoded.set(r, d);
    }
    return d;
  }
}

/** Every callee that never returns by the rules above (LayoutNoReturn, asked of each candidate). */
export function neverReturnByLayout(
  functions: ReadonlyArray<readonly CodeRange[]>,
  read: (start: bigint, size: number) => Uint8Array | undefined,
  isEntry: (address: bigint) => boolean,
): Set<bigint> {
  const judge = new LayoutNoReturn(functions, read, isEntry);
  return new Set([...judge.candidatesOnce()].filter((t) => judge.has(t)));
}

// Where a call of an inlined copy ends. An inlined copy has no RET, and its code ranges (DW_AT_ranges, often
// several, interleaved with its caller's scheduled code) do not end where control leaves it. So the enclosing
// function's code is decoded whole (every range, .cold included), its control flow built instruction by
// instruction, and the copy's instructions marked. Control that leaves the copy and always comes back into it
// (not through its entry) is the caller's code scheduled in between: that hop counts as inside. Every other edge
// out leaves the copy, and an exit probe goes where it fires exactly once per leaving: at an instruction all of
// whose successors are outside (a jump or fall-through out, a RET), or at an outside target all of whose
// predecessors are inside. Then the placement is proved on the control-flow graph: from the function's entry,
// the copy's entry is only reached while no call of it is open, an exit only while one is, and no open call
// leaves the function unseen. Whatever cannot be proved says why, and the site's returns are unavailable.
import { decodeX86Flow, type JumpTable, type X86FlowInsn } from './x86decoder';
import { unreachable } from '../../shared/unreachable';

export interface HostRange {
  start: bigint;
  bytes: Uint8Array;
}

export interface InlinedExitQuery {
  arch: 'x86_64' | 'aarch64';
  /** Every code range of the subprogram the copy sits in (DW_AT_ranges, the .cold block included). */
  host: HostRange[];
  /** Where that subprogram is entered. */
  hostEntry: bigint;
  /** The copy's own code ranges, [lo, hi). */
  copy: Array<[bigint, bigint]>;
  /** The copy's entry pc, where its entry probe sits. */
  entry: bigint;
  /** Whether a direct call to `target` never returns (abort, a function DWARF marks DW_AT_noreturn). */
  noReturn?: (target: bigint) => boolean;
  /** Bytes of the binary at an address (a switch's jump table in .rodata), or undefined where there are none. */
  readData?: (address: bigint, size: number) => Uint8Array | undefined;
  /** The probes are kprobes, which take the prefixed instructions uprobes refuse (see kernelRefuses). */
  kprobes?: boolean;
}

export interface InlinedExit {
  address: bigint;
  /** 'leaving': an instruction of the copy (or of a hop) whose every successor is outside; 'target': the first outside instruction, reached only from inside. */
  how: 'leaving' | 'target';
}

export type ExitsUnavailable =
  | 'arch' // only x86-64 code is decoded
  | 'undecodable' // bytes that are no instruction, or a jump into the middle of one
  | 'indirect-jump' // a computed jump (switch table, computed goto) whose targets are unknown
  | 'shared-target' // a conditional edge out to code also reached from elsewhere
  | 'unprobeable' // an exit instruction the kernel refuses to probe (a segment or LOCK prefix) or steps wrongly (VEX)
  | 'entry-outside' // DWARF's entry pc lies after the copy's own code
  | 'reentered' // the copy's entry is reached again while a call of it is open (a loop through its entry)
  | 'unpaired'; // an exit can be reached without passing the copy's entry

export type InlinedExits = { ok: true; exits: InlinedExit[] } | { ok: false; category: ExitsUnavailable; reason: string; address?: bigint };

const hex = (a: bigint) => `0x${a.toString(16)}`;

export class Unavailable extends Error {
  constructor(
    readonly category: ExitsUnavailable | 'double' | 'ambiguous',
    message: string,
    readonly address?: bigint,
  ) {
    super(message);
  }
}

/** Pseudo-node: control leaves the enclosing function (a RET, a tail jump). */
export const SINK = -1;

export interface Graph {
  insns: X86FlowInsn[];
  at: Map<bigint, number>;
  succ: number[][];
  pred: number[][];
  fallsOff: ReadonlySet<bigint>;
}

export function findInlinedExits(q: InlinedExitQuery): InlinedExits {
  if (q.arch !== 'x86_64') return { ok: false, category: 'arch', reason: 'exits of inlined copies are found by decoding x86-64 code only' };
  try {
    return { ok: true, exits: place(q) };
  } catch (e) {
    if (e instanceof Unavailable) return { ok: false, category: e.category as ExitsUnavailable, reason: e.message, address: e.address };
    throw e;
  }
}

// Bytes that follow a range's last instruction as alignment: NOP, INT3 and zero.
function onlyPadding(code: Uint8Array, from: number): boolean {
  for (let i = from; i < code.length; i++) if (code[i] !== 0xcc && code[i] !== 0x90 && code[i] !== 0x00) return false;
  return true;
}

/** The decoded control flow of the host function (shared with inlinedEntries.ts). */
export function build(q: Pick<InlinedExitQuery, 'host' | 'noReturn' | 'readData'>): Graph {
  const insns: X86FlowInsn[] = [];
  for (const r of q.host) {
    for (const step of decodeX86Flow(r.bytes, r.start)) {
      if ('invalid' in step) {
        if (!onlyPadding(r.bytes, Number(step.address - r.start)))
          throw new Unavailable(
            'undecodable',
            `its function's code at ${hex(step.address)} could not be decoded (${step.reason})`,
            step.address,
          );
        break;
      }
      insns.push(step);
    }
  }
  insns.sort((a, b) => (a.address < b.address ? -1 : a.address > b.address ? 1 : 0));
  const at = new Map<bigint, number>();
  insns.forEach((i, n) => at.set(i.address, n));
  const inHost = (a: bigint) => q.host.some((r) => a >= r.start && a < r.start + BigInt(r.bytes.length));
  const node = (from: X86FlowInsn, a: bigint): number => {
    const n = at.get(a);
    if (n !== undefined) return n;
    if (inHost(a))
      throw new Unavailable('undecodable', `a jump at ${hex(from.address)} lands inside an instruction at ${hex(a)}`, from.address);
    return SINK;
  };
  // Instructions that would run on past the end of the function's ranges: only an error where they run.
  const fallsOff = new Set<bigint>();
  const succ: number[][] = insns.map((i) => {
    const next = i.address + BigInt(i.length);
    switch (i.kind) {
      case 'ret':
      case 'jmp-got':
        return [SINK];
      case 'stop':
        return [];
      case 'jmp':
        return [node(i, i.target!)];
      case 'jcc':
        return [node(i, i.target!), ...(at.has(next) ? [at.get(next)!] : [SINK])];
      case 'jmp-indirect': {
        const targets = i.table && q.readData ? tableTargets(i.table, q.readData, at) : [];
        if (targets.length > 0) return targets;
        throw new Unavailable(
          'indirect-jump',
          `its function has a computed jump at ${hex(i.address)} (a switch table?) whose targets are not known`,
          i.address,
        );
      }
      case 'call':
        // A call that never returns ends the path; so does one with nothing after it in the function's code
        // (GCC emits nothing after a call to a noreturn function).
        if (q.noReturn?.(i.target!) || !at.has(next)) return [];
        return [at.get(next)!];
      case 'call-indirect':
        return at.has(next) ? [at.get(next)!] : [];
      case 'nop':
        return at.has(next) ? [at.get(next)!] : [];
      case 'other':
        if (at.has(next)) return [at.get(next)!];
        fallsOff.add(i.address);
        return [];
      default:
        return unreachable(i.kind, 'instruction kind');
    }
  });
  const pred: number[][] = insns.map(() => []);
  succ.forEach((ss, n) => ss.forEach((s) => s !== SINK && pred[s].push(n)));
  return { insns, at, succ, pred, fallsOff };
}

// Legacy prefixes, and those Linux's x86 uprobes refuse (is_prefix_bad in arch/x86/kernel/uprobes.c: ES, CS, SS,
// DS, LOCK). The refusal comes only when the probe is installed in a running process, silently: an event on
// such an instruction (GCC pads with `cs nopw`) is defined but never fires, so it must not be chosen.
const PREFIXES = new Set([0x26, 0x2e, 0x36, 0x3e, 0x64, 0x65, 0x66, 0x67, 0xf0, 0xf2, 0xf3]);
const REFUSED_PREFIXES = new Set([0x26, 0x2e, 0x36, 0x3e, 0xf0]);
// VEX (0xc4, 0xc5) and EVEX (0x62 in 64-bit code) instructions the kernel takes a uprobe on but steps wrongly:
// measured on 6.18, a probe on `vpsrlw $4,%ymm6,%ymm7` crashed ripgrep (SIGILL, SIGSEGV), one on
// `vpsllq $3,%xmm1,%xmm2` hung the program and one on `vpsrlw $4,%xmm6,%xmm7` made it skip the next instruction.
const VEX = new Set([0xc4, 0xc5, 0x62]);

/**
 * Why a uprobe must not sit on the instruction at `address`: `prefix`, the kernel refuses it (see above); `vex`, it
 * takes it and harms the program; undefined: it may.
 */
export function kernelRefusal(host: readonly HostRange[], address: bigint): 'prefix' | 'vex' | undefined {
  const r = host.find((h) => address >= h.start && address < h.start + BigInt(h.bytes.length));
  if (!r) return undefined;
  let i = Number(address - r.start);
  for (; i < r.bytes.length && PREFIXES.has(r.bytes[i]); i++) if (REFUSED_PREFIXES.has(r.bytes[i])) return 'prefix';
  return i < r.bytes.length && VEX.has(r.bytes[i]) ? 'vex' : undefined;
}

/** Whether the kernel refuses a uprobe on the instruction at `address`, or would harm the program with one. */
export function kernelRefuses(host: readonly HostRange[], address: bigint): boolean {
  return kernelRefusal(host, address) !== undefined;
}

/** The sentence for a refusal of `subject` (an instruction). */
export function refusalSentence(why: 'prefix' | 'vex', subject: string): string {
  return why === 'prefix'
    ? `the kernel refuses a uprobe on ${subject} (a LOCK or segment prefix)`
    : `a uprobe on ${subject} would harm the program (VEX-encoded: the kernel steps it wrongly, and the program skips an instruction, hangs or crashes)`;
}

/**
 * From instruction `n` of `g`, the first the kernel takes a uprobe on, stepping only over refused ones that run
 * straight into an instruction reached from them alone (so it runs exactly as often as `n`) and that `stop` does
 * not end at. `ok` false: there is none, and `at` is the refused instruction the walk ended on.
 */
export function probeableFrom(
  g: Pick<Graph, 'insns' | 'succ' | 'pred'>,
  host: readonly HostRange[],
  n: number,
  stop: (next: number) => boolean = () => false,
  kprobes = false,
): { ok: boolean; at: number } {
  for (let m = n; ;) {
    if (kprobes || !kernelRefuses(host, g.insns[m].address)) return { ok: true, at: m };
    const [next, ...more] = g.succ[m];
    if (more.length > 0 || next === undefined || next === SINK || g.pred[next].length !== 1 || stop(next)) return { ok: false, at: m };
    m = next;
  }
}

export function refusedByKernel(q: Pick<InlinedExitQuery, 'host' | 'kprobes'>, address: bigint, what = 'exit instruction'): void {
  const why = q.kprobes ? undefined : kernelRefusal(q.host, address);
  if (why) throw new Unavailable('unprobeable', refusalSentence(why, `the ${what} at ${hex(address)}`), address);
}

const MAX_TABLE = 4096;

/**
 * Targets of a jump table: its entries up to the first that is not an instruction of the function. The real
 * table's entries all are; reading on past its end can only add edges that never run, which the proof below
 * treats like any other path (it may refuse more, never accept less).
 */
export function tableTargets(t: JumpTable, read: NonNullable<InlinedExitQuery['readData']>, at: ReadonlyMap<bigint, number>): number[] {
  const size = t.entry === 'rel32' ? 4 : 8;
  const out = new Set<number>();
  for (let k = 0; k < MAX_TABLE; k++) {
    const b = read(t.address + BigInt(k * size), size);
    if (!b || b.length < size) break;
    const v = new DataView(b.buffer, b.byteOffset, size);
    const target = t.entry === 'rel32' ? t.address + BigInt(v.getInt32(0, true)) : v.getBigUint64(0, true);
    const n = at.get(target);
    if (n === undefined) break;
    out.add(n);
  }
  return [...out];
}

function place(q: InlinedExitQuery): InlinedExit[] {
  const g = build(q);
  const { insns, succ, pred } = g;
  const inCopy = insns.map((i) => q.copy.some(([lo, hi]) => i.address >= lo && i.address < hi));
  const entry = g.at.get(q.entry);
  if (entry === undefined)
    throw new Unavailable('undecodable', `the copy's entry ${hex(q.entry)} is not the start of an instruction`, q.entry);
  const hostEntry = g.at.get(q.hostEntry);
  if (hostEntry === undefined)
    throw new Unavailable('undecodable', `its function's entry ${hex(q.hostEntry)} is not the start of an instruction`, q.hostEntry);

  const reach = (seeds: number[], expand: (n: number) => boolean): Uint8Array => {
    const seen = new Uint8Array(insns.length);
    const work = seeds.filter((n) => !seen[n] && (seen[n] = 1));
    while (work.length) {
      const n = work.pop()!;
      if (!expand(n)) continue;
      for (const t of succ[n]) {
        if (t === SINK || seen[t]) continue;
        seen[t] = 1;
        work.push(t);
      }
    }
    return seen;
  };
  // What runs: code reached from the function's entry, and code no jump reaches that is not alignment padding
  // (exception landing pads).
  const roots = insns.flatMap((i, n) => (pred[n].length === 0 && i.kind !== 'nop' ? [n] : []));
  const live = reach([hostEntry, ...roots], () => true);
  // Padding that never runs is no predecessor of the code after it.
  for (let n = 0; n < insns.length; n++) pred[n] = pred[n].filter((p) => live[p]);
  // Copy instructions reached from the function's entry without passing the copy's entry run before a call
  // begins (argument set-up scheduled ahead of it, code shared with the previous copy): not inside a call.
  const before = reach([hostEntry], (n) => n !== entry);
  const body = insns.map((_, n) => n === entry || (inCopy[n] && live[n] === 1 && !before[n]));
  // Hops: outside instructions reached from the copy and leading back into it other than through its entry.
  const fromCopy = reach(
    insns.flatMap((_, n) => (body[n] ? succ[n].filter((t) => t !== SINK && !inCopy[t]) : [])),
    (n) => !inCopy[n],
  );
  const toCopy = new Uint8Array(insns.length);
  const work = insns.flatMap((_, n) => (body[n] && n !== entry ? [n] : []));
  while (work.length) {
    for (const p of pred[work.pop()!]) {
      if (inCopy[p] || toCopy[p]) continue;
      toCopy[p] = 1;
      work.push(p);
    }
  }
  const inside = insns.map((_, n) => body[n] || (!inCopy[n] && fromCopy[n] === 1 && toCopy[n] === 1));

  // Exits: where each edge out of the inside is seen exactly once. A conditional jump out (one successor
  // inside) can only be seen at its target, which must be reached from inside alone; an instruction whose
  // successors are all outside is probed itself, unless its edges all go to such targets already. Where a
  // target is also reached from outside code that only the copy's exits reach (the caller's code merged with
  // one exit path), that code is taken inside, so the exit is seen where the paths meet; never across a call,
  // whose time would count as the copy's.
  for (;;) {
    const r = exits(g, inside, hostEntry);
    if (!('shared' in r)) {
      const { leaving, target } = r;
      if (leaving.has(entry) && !inCopy[entry])
        throw new Unavailable(
          'entry-outside',
          `the copy's entry ${hex(q.entry)} lies outside its own code, which runs before it (GCC put the entry after the copy's instructions)`,
          q.entry,
        );
      if (leaving.has(entry))
        throw new Unavailable(
          'reentered',
          `the copy's entry ${hex(q.entry)} is also where control leaves it (a loop back to its entry, or a one-instruction copy)`,
          q.entry,
        );
      verify(g, entry, hostEntry, leaving, target);
      for (const n of [...leaving, ...target]) refusedByKernel(q, insns[n].address);
      return [
        ...[...leaving].map((n): InlinedExit => ({ address: insns[n].address, how: 'leaving' })),
        ...[...target].map((n): InlinedExit => ({ address: insns[n].address, how: 'target' })),
      ].sort((a, b) => (a.address < b.address ? -1 : 1));
    }
    if (r.shared === SINK) throw new Unavailable('shared-target', r.reason, r.at);
    const outsidePreds = pred[r.shared].filter((p) => !inside[p]);
    const absorbable = (p: number) =>
      p !== hostEntry &&
      live[p] === 1 &&
      insns[p].kind !== 'call' &&
      insns[p].kind !== 'call-indirect' &&
      pred[p].length > 0 &&
      pred[p].every((q) => inside[q]);
    if (outsidePreds.length === 0 || !outsidePreds.every(absorbable)) throw new Unavailable('shared-target', r.reason, r.at);
    for (const p of outsidePreds) inside[p] = true;
  }
}

function exits(
  g: Graph,
  inside: boolean[],
  hostEntry: number,
): { leaving: Set<number>; target: Set<number> } | { shared: number; reason: string; at: bigint } {
  const { insns, succ, pred } = g;
  const leaving = new Set<number>();
  const target = new Set<number>();
  const outside = (s: number) => s === SINK || !inside[s];
  for (let n = 0; n < insns.length; n++) {
    if (!inside[n] || succ[n].every(outside) || !succ[n].some(outside)) continue;
    for (const s of succ[n].filter(outside)) {
      if (s !== SINK && s !== hostEntry && pred[s].every((p) => inside[p])) {
        target.add(s);
        continue;
      }
      const where = s === SINK ? 'out of the function' : `to ${hex(insns[s].address)}, which is also reached from outside the copy`;
      return { shared: s, reason: `a conditional jump at ${hex(insns[n].address)} leaves the copy ${where}`, at: insns[n].address };
    }
  }
  for (let n = 0; n < insns.length; n++) {
    if (!inside[n] || succ[n].length === 0 || !succ[n].every(outside)) continue;
    const covered = succ[n].filter((s) => target.has(s)).length;
    if (covered === 0) leaving.add(n);
    else if (covered < succ[n].length) {
      const s = succ[n].find((t) => !target.has(t))!;
      return {
        shared: s,
        reason: `the jump at ${hex(insns[n].address)} leaves the copy both to an exit and elsewhere`,
        at: insns[n].address,
      };
    }
  }
  return { leaving, target };
}

const OUT = 1; // no call of the copy is open
const IN = 2; // a call is open: it entered and has not left

/**
 * Proves the placement: a forward dataflow of {no call open, call open} from the function's entry. Code no
 * jump reaches (exception landing pads, code after a call ProbeLens does not know never returns) may run in
 * either state, so it starts with both.
 */
function verify(g: Graph, entry: number, hostEntry: number, leaving: Set<number>, target: Set<number>): void {
  const { insns, succ } = g;
  const state = new Uint8Array(insns.length);
  const work: number[] = [];
  const seed = (n: number, s: number) => {
    if ((state[n] | s) === state[n]) return;
    state[n] |= s;
    work.push(n);
  };
  let reachable = true;
  const run = () => {
    while (work.length) {
      const n = work.pop()!;
      let s = state[n];
      const at = insns[n].address;
      if (reachable && g.fallsOff.has(at))
        throw new Unavailable('undecodable', `code at ${hex(at)} runs on past the end of its function's ranges`, at);
      if (target.has(n)) {
        if (s & OUT) throw new Unavailable('unpaired', `the exit at ${hex(at)} can be reached without passing the copy's entry`, at);
        s = OUT;
      }
      if (n === entry) {
        if (s & IN)
          throw new Unavailable(
            'reentered',
            `the copy's entry ${hex(at)} can be reached again before the copy was left (a loop through its entry)`,
            at,
          );
        s = IN;
      }
      if (leaving.has(n)) {
        if (s & OUT) throw new Unavailable('unpaired', `the exit at ${hex(at)} can be reached without passing the copy's entry`, at);
        s = OUT;
      }
      for (const t of succ[n]) {
        if (t === SINK) {
          if (s & IN) throw new Unavailable('unpaired', `control can leave the function at ${hex(at)} with a call of the copy open`, at);
        } else seed(t, s);
      }
    }
  };
  seed(hostEntry, OUT);
  run();
  // Past here the code is reached by no jump: trailing bytes that decode as something are no error there.
  reachable = false;
  for (let n = 0; n < insns.length; n++) {
    // Alignment NOPs between blocks are never run; the code they pad is reached by its jumps.
    if (state[n] || insns[n].kind === 'nop') continue;
    seed(n, OUT | IN);
    run();
  }
}

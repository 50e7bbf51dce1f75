// Whether a copy's set-up code that also runs on a path passing no entry computes anything that path uses (see
// inlinedEntries.ts). A call GCC merged away under another call's DIE leaves work whose result the caller uses; work
// hoisted ahead of a test onto a path that makes no call leaves values nothing reads there. So the values the set-up
// writes (registers, the flags, frame slots) are followed forward from it along every path until an entry of the
// function: they may only be copied (a register allocator's moves), overwritten, or left behind dead. They are used,
// and the set-up may be a call, where anything else reads them, where a call may (an argument register by the
// callee's prototype, else any of them; the stack, for a callee with arguments there or not known; the frame,
// through a frame address the holder's code takes), and where control leaves the holder while they sit in a register
// its caller reads (the return value, the callee-saved ones). The set-up itself must store nowhere but the frame.
// A call clobbers the ABI's caller-saved registers only where its target is a stub that jumps through the GOT (a
// function of another object, which GCC cannot have compiled to keep them, as -fipa-ra does for its own functions).
// Frame addresses: a pointer `lea N(%rsp)` gives reaches the frame from slot N up (the object it points into);
// %rsp copied or indexed anywhere reaches all of it. The frame's depth is followed from the holder's entry through
// pushes, pops and constant adjustments; where it is not known, no frame slot is followed.
// Tests: test/unit/core/probes/inlinedEntries.deadSetup.test.ts
import { SINK, type Graph, type HostRange } from './inlinedExits';
import { decodeX86Effects, LOC_FLAGS, LOC_OTHER, LOC_VEC, type X86Effects, type X86Loc } from './x86decoder';

const RAX = 0;
const RCX = 1;
const RDX = 2;
const RBX = 3;
const RBP = 5;
const RSI = 6;
const RDI = 7;
/** Integer argument registers in order (System V x86-64). */
const ARGS = [RDI, RSI, RDX, RCX, 8, 9];
const VECS = Array.from({ length: 32 }, (_, k) => LOC_VEC + k);
/** What a callee of unknown prototype may read: every argument register, %al (a varargs call's count), xmm0–7. */
const ANY_ARGS = [...ARGS, RAX, ...VECS.slice(0, 8)];
/** What a call of another object's function may leave changed: the caller-saved registers, the flags. */
const CLOBBERED = [RAX, RCX, RDX, RSI, RDI, 8, 9, 10, 11, LOC_FLAGS, ...VECS];
/** What a caller reads after `ret`: the return value's registers and the callee-saved ones. */
const RETURNED = [RAX, RDX, RBX, RBP, 12, 13, 14, 15, LOC_VEC, LOC_VEC + 1];

export interface DeadSetupQuery {
  g: Graph;
  /** Per instruction of the graph, its effects (aligned with g.insns). */
  effects: readonly X86Effects[];
  hostEntry: number;
  /** An entry of the function (a candidate): a path that reaches one makes a call there. */
  isEntry: (n: number) => boolean;
  /** Set-up code of the copy that does work: what it writes is followed. */
  isSetUp: (n: number) => boolean;
  /**
   * For a call instruction: how many integer argument registers its callee may read (undefined: not known), and
   * whether it clobbers the caller-saved registers (a call of another object's function).
   */
  call: (n: number) => { args: number | undefined; clobbers: boolean };
}

/** The frame depth (%rsp relative to its value at the holder's entry) before each instruction; NaN: not known. */
export function frameDepths(g: Graph, effects: readonly X86Effects[], hostEntry: number): Float64Array {
  const depth = new Float64Array(g.insns.length).fill(Number.POSITIVE_INFINITY); // +∞: not reached
  depth[hostEntry] = 0;
  const w = [hostEntry];
  while (w.length) {
    const n = w.pop()!;
    const d = depth[n];
    const step = effects[n].rsp;
    const next = step === undefined ? NaN : d + step;
    for (const t of g.succ[n]) {
      if (t === SINK) continue;
      const old = depth[t];
      const v = old === Number.POSITIVE_INFINITY ? next : Number.isNaN(old) || old !== next ? NaN : old;
      if (Object.is(v, old)) continue;
      depth[t] = v;
      w.push(t);
    }
  }
  for (let n = 0; n < depth.length; n++) if (depth[n] === Number.POSITIVE_INFINITY) depth[n] = NaN;
  return depth;
}

interface Taint {
  regs: Set<number>;
  /** Frame bytes, as offsets from %rsp at the holder's entry. */
  bytes: Set<number>;
}

/**
 * Undefined when nothing the set-up instructions `starts` (and set-up reached from them) compute is used on a path
 * that reaches no entry; else the instruction that may use it and how.
 */
export function setUpUsed(q: DeadSetupQuery, starts: readonly number[], depth: Float64Array): { at: number; why: string } | undefined {
  const { g, effects } = q;
  const { insns, succ } = g;
  // Where the holder's code takes frame addresses (from which slot up a callee or a load may read).
  let lowestEscape = Number.POSITIVE_INFINITY;
  for (let n = 0; n < insns.length; n++) {
    const e = effects[n];
    if (e.framePointer || (e.frameAddress !== undefined && Number.isNaN(depth[n]))) lowestEscape = Number.NEGATIVE_INFINITY;
    else if (e.frameAddress !== undefined) lowestEscape = Math.min(lowestEscape, depth[n] + e.frameAddress);
  }
  const escapes = (t: Taint) => [...t.bytes].some((b) => b >= lowestEscape);
  const state = new Map<number, Taint>();
  const w: number[] = [];
  const seed = (n: number, t: Taint, force = false) => {
    let cur = state.get(n);
    if (!cur) state.set(n, (cur = { regs: new Set(), bytes: new Set() }));
    const before = cur.regs.size + cur.bytes.size;
    for (const r of t.regs) cur.regs.add(r);
    for (const b of t.bytes) cur.bytes.add(b);
    if (force || cur.regs.size + cur.bytes.size > before) w.push(n);
  };
  const used = (n: number, why: string) => ({ at: n, why: `${why} at 0x${insns[n].address.toString(16)}` });
  for (const s of starts) seed(s, { regs: new Set(), bytes: new Set() }, true);
  while (w.length) {
    const n = w.pop()!;
    if (q.isEntry(n)) continue; // the path makes a call here: what the set-up computed is that call's
    const t = state.get(n)!;
    const e = effects[n];
    const d = depth[n];
    const regs = new Set(t.regs);
    const bytes = new Set(t.bytes);
    const slot = (disp: number, size: number) => Array.from({ length: size }, (_, k) => d + disp + k);
    const tainted = (l: X86Loc) => ('reg' in l ? regs.has(l.reg) : slot(l.disp, l.size).some((b) => bytes.has(b)));
    const frameKnown = !Number.isNaN(d);
    if (!frameKnown && bytes.size > 0 && (e.frame.length > 0 || e.move)) return used(n, 'a frame slot at an unknown depth');
    const kind = insns[n].kind;
    const isCall = kind === 'call' || kind === 'call-indirect';
    if (q.isSetUp(n)) {
      if (isCall || e.memWrite) return used(n, 'the set-up stores to memory or calls');
      // A branch on what the set-up computed: which way the path goes is the computation's use.
      if (succ[n].length > 1 && e.reads.some((x) => x !== 4 && regs.has(x))) return used(n, 'the set-up branches on it');
      if (e.writes.includes(LOC_OTHER) || e.partial.includes(LOC_OTHER) || e.rsp !== 0)
        return used(n, 'the set-up writes a register not followed');
      if (!frameKnown && e.frame.some((f) => f.write)) return used(n, 'the set-up writes the frame at an unknown depth');
      for (const r of [...e.writes, ...e.partial]) regs.add(r);
      for (const f of e.frame) if (f.write) for (const b of slot(f.disp, f.size)) bytes.add(b);
    } else if (e.move && !e.reads.some((r) => r !== 4 && regs.has(r) && !(e.move && 'reg' in e.move.from && e.move.from.reg === r))) {
      // A copy: the destination holds what the source held.
      const from = tainted(e.move.from);
      const to = e.move.to;
      if ('reg' in to) {
        if (from) regs.add(to.reg);
        else if (e.writes.includes(to.reg)) regs.delete(to.reg);
      } else
        for (const b of slot(to.disp, to.size)) {
          if (from) bytes.add(b);
          else bytes.delete(b);
        }
    } else if (isCall) {
      const c = kind === 'call' ? q.call(n) : { args: undefined, clobbers: false };
      const reads = c.args === undefined ? ANY_ARGS : ARGS.slice(0, c.args);
      const r = [...reads, ...e.reads].find((x) => x !== 4 && regs.has(x));
      if (r !== undefined) return used(n, 'a register the call may read holds it');
      if (bytes.size > 0 && (c.args === undefined || c.args > ARGS.length)) return used(n, 'a call that may read arguments on the stack');
      if (escapes({ regs, bytes })) return used(n, 'a call, through a frame address the holder takes');
      if (c.clobbers) for (const x of CLOBBERED) regs.delete(x);
    } else {
      const r = e.reads.find((x) => x !== 4 && regs.has(x));
      if (r !== undefined) return used(n, 'it is read');
      for (const f of e.frame) {
        if (f.read && slot(f.disp, f.size).some((b) => bytes.has(b))) return used(n, 'its frame slot is read');
        if (f.write && f.whole) for (const b of slot(f.disp, f.size)) bytes.delete(b);
      }
      if (e.memRead && escapes({ regs, bytes })) return used(n, 'a load through a pointer that may reach its frame slot');
      for (const x of e.writes) regs.delete(x);
    }
    for (const s of succ[n]) {
      if (s !== SINK) {
        seed(s, { regs, bytes });
        continue;
      }
      // Control leaves the holder: by `ret` its caller reads the return value and the callee-saved registers;
      // by a jump to another function (a tail call) that function may read any register. The frame is gone
      // (below %rsp) unless a slot sits at or above it.
      const read = kind === 'ret' ? RETURNED : [...Array(16).keys(), LOC_FLAGS, ...VECS];
      if (read.some((x) => x !== 4 && regs.has(x))) return used(n, 'control leaves the function with it in a register');
      if (bytes.size > 0 && (!frameKnown || [...bytes].some((b) => b >= d + (e.rsp ?? 0))))
        return used(n, 'control leaves the function with it in the frame');
    }
  }
  return undefined;
}

/**
 * Whether the set-up instructions `starts` of a copy (and the copy's set-up `isSetUp` reached from them) compute
 * nothing a path that reaches no entry uses (deadSetup.ts). The holder is decoded again for the registers and frame
 * slots each instruction reads and writes.
 */
export function deadSetUp(
  q: {
    host: HostRange[];
    readData?: (address: bigint, size: number) => Uint8Array | undefined;
    /** See InlinedEntryQuery.argumentsOf. */
    argumentsOf?: (returnAddress: bigint, target: bigint, external: boolean) => number | undefined;
  },
  g: Graph,
  hostEntry: number,
): (isSetUp: (n: number) => boolean, probe: ReadonlyMap<number, unknown>, starts: number[]) => boolean {
  const byAddress = new Map<bigint, X86Effects>();
  for (const r of q.host) for (const e of decodeX86Effects(r.bytes, r.start)) byAddress.set(e.address, e);
  if (g.insns.some((i) => !byAddress.has(i.address))) return () => false;
  const effects = g.insns.map((i) => byAddress.get(i.address)!);
  const depth = frameDepths(g, effects, hostEntry);
  const call = (n: number) => {
    const i = g.insns[n];
    const external = i.target !== undefined && jumpsThroughGot(q.readData?.(i.target, 16));
    const args = i.target === undefined ? undefined : q.argumentsOf?.(i.address + BigInt(i.length), i.target, external);
    return { args, clobbers: external };
  };
  return (isSetUp, probe, starts) =>
    setUpUsed({ g, effects, hostEntry, isEntry: (n) => probe.has(n), isSetUp, call }, starts, depth) === undefined;
}

/** Code that is a PLT stub: `[endbr64] [bnd] jmp *X(%rip)`, a jump through the GOT to another object's function. */
function jumpsThroughGot(b: Uint8Array | undefined): boolean {
  if (!b) return false;
  let k = 0;
  if (b[0] === 0xf3 && b[1] === 0x0f && b[2] === 0x1e && b[3] === 0xfa) k = 4;
  if (b[k] === 0xf2) k++;
  return b[k] === 0xff && b[k + 1] === 0x25;
}

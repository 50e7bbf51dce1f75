// Entries of inlined copies in loops GCC enters at more than one place (irreducible loops): one iteration ends at
// the depth-first search's retreating edges there, as it does at a dominator's back edge in an ordinary loop.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { findInlinedEntries, type InlinedEntryQuery } from '../../../../src/core/probes/inlinedEntries';
import type { Graph } from '../../../../src/core/probes/inlinedExits';
import { hasIrreducibleLoop, loopBackEdges } from '../../../../src/core/probes/loops';

const B = 0x401000n;
const bytes = (...b: number[]) => new Uint8Array(b);

function query(code: Uint8Array, entry: number, ranges: Array<[number, number]>): InlinedEntryQuery {
  return {
    arch: 'x86_64',
    host: [{ start: B, bytes: code }],
    hostEntry: B,
    copies: [{ entry: B + BigInt(entry), ranges: ranges.map(([lo, hi]) => [B + BigInt(lo), B + BigInt(hi)]) }],
  };
}
const addrs = (r: ReturnType<typeof findInlinedEntries>) => (r.ok ? r.entries.map((e) => Number(e.address - B)) : r);

test('a loop entered at two places: the copy code after its entry pc is that call, not set-up of the next one', () => {
  // raxIteratorPrevStep's shape: the caller enters the loop at its head or past it; each round passes the copy's
  // entry pc, the copy's code after it (its exit hook) runs after some caller code, and the loop goes round again.
  // No node dominates the loop, so it has no dominator back edge; the copy code at 18 then reaches the entry pc
  // "within one iteration" and leaves through the loop's exit test: it was read as set-up that also runs where no
  // call begins, and the count called a lower bound.
  const code = bytes(
    ...[0x85, 0xff], //       0  test %edi,%edi   caller
    ...[0x74, 0x03], //       2  je 7             caller: into the loop past its head
    0x90, //                  4  nop              caller: the loop's head
    0x90, //                  5  nop
    0x90, //                  6  nop
    ...[0x85, 0xf6], //       7  test %esi,%esi   caller: the loop's exit test
    ...[0x74, 0x0c], //       9  je 23
    ...[0x83, 0xc0, 0x01], // 11 add $1,%eax      copy entry pc
    ...[0x48, 0x01, 0xf8], // 14 add %rdi,%rax    copy
    0x90, //                  17 nop              caller, between
    ...[0x48, 0x01, 0xf0], // 18 add %rsi,%rax    copy: work after the entry pc
    ...[0xeb, 0xed], //       21 jmp 4            caller: round again
    0xc3, //                  23 ret
  );
  const r = findInlinedEntries(
    query(code, 11, [
      [11, 17],
      [18, 21],
    ]),
  );
  assert.deepEqual(addrs(r), [11]);
  assert.deepEqual(r.ok && r.notArmed, []);
});

test('a loop entered at two places: copy code that one of the ways in reaches before any entry is not proved', () => {
  // The same loop, but the caller's second way in lands on the copy's code at 14 itself: on the path 0 → 14 → 4 →
  // 6 → ret that code runs and no entry does, and after the entry pc it runs too. Whichever edge ends an iteration,
  // the count stays a lower bound.
  const code = bytes(
    ...[0x85, 0xff], //       0  test %edi,%edi   caller
    ...[0x74, 0x0a], //       2  je 14            caller: into the loop at the copy's code
    ...[0x85, 0xf6], //       4  test %esi,%esi   caller: the loop's head and exit test
    ...[0x74, 0x0b], //       6  je 19
    ...[0x83, 0xc0, 0x01], // 8  add $1,%eax      copy entry pc
    0x90, //                  11 nop              caller
    0x90, //                  12 nop              caller
    0x90, //                  13 nop              caller
    ...[0x48, 0x01, 0xf0], // 14 add %rsi,%rax    copy: work
    ...[0xeb, 0xf1], //       17 jmp 4            caller: round again
    0xc3, //                  19 ret
  );
  const r = findInlinedEntries(
    query(code, 8, [
      [8, 11],
      [14, 17],
    ]),
  );
  // Not proved: either no entry is (the holder's copy code runs both inside a call and outside any) or the copy
  // is named as one that may miss calls; both say where.
  const why = r.ok ? r.notArmed.map((n) => n.reason).join('; ') : r.reason;
  assert.ok(!r.ok || r.notArmed.length > 0, `proved: ${addrs(r)}`);
  assert.match(why, /0x40100e/);
});

test('copy code in a loop around the call that its entry pc is outside of stays as back edges alone read it', () => {
  // memtest_preserving_test's shape: a loop entered at two places (4, 6) holds the entry pc; inside it, a loop
  // (13–24) runs the copy's code again each round without the entry pc (GCC rotated the loop around the call:
  // the copy code at 21 begins the next round's call). Ending an iteration at the outer loop's edges alone would
  // read the copy code at 13 as the first call's, which runs again in every round with no entry between; it stays
  // set-up as back edges read it: the round's copy code at 21 is armed, and the count a lower bound.
  const code = bytes(
    ...[0x85, 0xff], //       0  test %edi,%edi   caller
    ...[0x74, 0x02], //       2  je 6             caller: into the loop past its head
    0x90, //                  4  nop              caller: the loop's head
    0x90, //                  5  nop
    ...[0x85, 0xd2], //       6  test %edx,%edx   caller
    ...[0x74, 0x15], //       8  je 31
    ...[0x83, 0xc0, 0x01], // 10 add $1,%eax      copy entry pc
    ...[0x48, 0x01, 0xf8], // 13 add %rdi,%rax    copy: the inner loop's head
    0x90, //                  16 nop              caller
    ...[0x85, 0xf6], //       17 test %esi,%esi   caller
    ...[0x74, 0x05], //       19 je 26
    ...[0x83, 0xc0, 0x02], // 21 add $2,%eax      copy
    ...[0xeb, 0xf3], //       24 jmp 13           caller: the inner loop's back edge
    0x90, //                  26 nop              caller
    0x90, //                  27 nop
    0x90, //                  28 nop
    ...[0xeb, 0xe5], //       29 jmp 4            caller: round again
    0xc3, //                  31 ret
  );
  const r = findInlinedEntries(
    query(code, 10, [
      [10, 16],
      [21, 24],
    ]),
  );
  assert.deepEqual(addrs(r), [10, 21]);
  assert.ok(r.ok && r.notArmed.length === 1 && r.notArmed[0].armed, `${r.ok ? r.notArmed.map((n) => n.reason) : r.reason}`);
});

test('a proof that holds only while a loop entered at two places is read from one of them is no proof', () => {
  // redis's sdssplitargs, hex_digit_to_int(p[2])*16 + hex_digit_to_int(p[3]): GCC computes both calls on each path
  // of a test, under two DIEs whose entry pcs lie one on each path. On the second path copy X's code (15) runs with
  // no call open, then copy Y's entry pc (18). The loop around it is entered at 4 and at 6, so no back edge ends an
  // iteration: read by back edges alone, X's code at 15 reaches X's entry pc (10) round the loop and passes Y's entry
  // on every way out, so it was taken for set-up of X's next call and the holder "proved" with X's calls on that
  // path silently uncounted. Read with iterations ending at the loop's edge back to 4, it is a call of X of its own.
  // The two readings differ: X is named as a copy that may miss calls (its count a lower bound); Y is proved.
  const code = bytes(
    ...[0x85, 0xff], //       0  test %edi,%edi   caller
    ...[0x74, 0x02], //       2  je 6             caller: into the loop past its head
    0x90, //                  4  nop              caller: the loop's head
    0x90, //                  5  nop
    ...[0x85, 0xf6], //       6  test %esi,%esi   caller: which path
    ...[0x74, 0x05], //       8  je 15
    ...[0x83, 0xc0, 0x01], // 10 add $1,%eax      X's entry pc
    ...[0xeb, 0x06], //       13 jmp 21           caller
    ...[0x83, 0xc2, 0x01], // 15 add $1,%edx      X's code on the other path
    ...[0x83, 0xc1, 0x01], // 18 add $1,%ecx      Y's entry pc
    ...[0x85, 0xd2], //       21 test %edx,%edx   caller: round again?
    ...[0x75, 0xeb], //       23 jne 4
    0xc3, //                  25 ret
  );
  const q: InlinedEntryQuery = {
    ...query(code, 10, [
      [10, 13],
      [15, 18],
    ]),
  };
  q.copies.push({ entry: B + 18n, ranges: [[B + 18n, B + 21n]] });
  const r = findInlinedEntries(q);
  assert.ok(r.ok, r.ok ? '' : r.reason);
  assert.deepEqual(addrs(r), [10, 18]);
  assert.deepEqual(
    r.notArmed.map((n) => [n.copy, n.armed]),
    [[0, true]],
    `copies that may miss calls: ${r.notArmed.map((n) => n.reason).join('; ')}`,
  );
  assert.match(r.notArmed[0].reason, /loop GCC enters at two places/);
});

test('hasIrreducibleLoop: a loop entered at two places is found, a loop entered at its head only is not', () => {
  // Nodes by number; succ lists only (the loop tests read nothing else of the graph).
  const graph = (succ: number[][]) => {
    const pred: number[][] = succ.map(() => []);
    succ.forEach((ts, n) => ts.forEach((t) => pred[t].push(n)));
    return { succ, pred } as unknown as Graph;
  };
  // 0 → 1 → 2 → 1 (back edge: 1 dominates 2), 2 → 3.
  const reducible = graph([[1], [2], [1, 3], []]);
  assert.equal(hasIrreducibleLoop(reducible, 0, loopBackEdges(reducible, 0)), false);
  // 0 → 1 and 0 → 2, 1 ⇄ 2: the loop is entered at 1 and at 2, and neither dominates the other.
  const irreducible = graph([[1, 2], [2], [1, 3], []]);
  assert.equal(hasIrreducibleLoop(irreducible, 0, loopBackEdges(irreducible, 0)), true);
});

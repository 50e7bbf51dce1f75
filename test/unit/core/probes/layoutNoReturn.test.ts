import { test } from 'node:test';
import assert from 'node:assert/strict';
import { neverReturnByLayout, type CodeRange } from '../../../../src/core/probes/layoutNoReturn';

const F = 0x402000n; // the callee under judgement
const G = 0x403000n; // another function
const isEntry = (a: bigint) => a === F || a === G;

/** Hand-assembled x86-64 functions: each is [start, bytes…]; `call(at, target)` gives a `call rel32`'s bytes. */
function call(at: bigint, target: bigint): number[] {
  const rel = Number(target - (at + 5n));
  return [0xe8, rel & 0xff, (rel >> 8) & 0xff, (rel >> 16) & 0xff, (rel >>> 24) & 0xff];
}

/** The verdicts on these functions' callees; `data` is more memory to read (a switch table). */
function judge(...fns: Array<[bigint, number[]]>): Set<bigint> {
  return judgeWith([], ...fns);
}

function judgeWith(data: Array<[bigint, number[]]>, ...fns: Array<[bigint, number[]]>): Set<bigint> {
  const mem: Array<[bigint, Uint8Array]> = [...fns, ...data].map(([a, b]) => [a, new Uint8Array(b)]);
  const read = (start: bigint, size: number) => {
    for (const [a, b] of mem)
      if (start >= a && start + BigInt(size) <= a + BigInt(b.length)) return b.subarray(Number(start - a), Number(start - a) + size);
    return undefined;
  };
  const functions: CodeRange[][] = fns.map(([start, bytes]) => [{ start, end: start + BigInt(bytes.length) }]);
  return neverReturnByLayout(functions, read, isEntry);
}

const le32 = (v: number) => [v & 0xff, (v >> 8) & 0xff, (v >> 16) & 0xff, (v >>> 24) & 0xff];

// A function whose code ends with a call of F: nothing follows for F to return to (serverPanic's callers).
const A = 0x401000n;
const endsWithCall: [bigint, number[]] = [A, [0x31, 0xc0, ...call(A + 2n, F)]]; // xor %eax,%eax; call F

// A call of F followed by code another path jumps to: consistent with F not returning there.
const B = 0x401100n;
const followedByJumpTarget: [bigint, number[]] = [
  B,
  [
    ...[0x85, 0xff], //     0 test %edi,%edi
    ...[0x75, 0x05], //     2 jne 9
    ...call(B + 4n, F), //  4 call F
    0xc3, //                9 ret
  ],
];

// A call of F followed by padding, then a block.
const C = 0x401200n;
const followedByPadding: [bigint, number[]] = [C, [...call(C, F), 0x0f, 0x1f, 0x00, 0xc3]]; // call F; nopl (%rax); ret

test('a callee that a function ends by calling, and that is followed elsewhere only by jump targets or padding, never returns', () => {
  assert.deepEqual(judge(endsWithCall, followedByJumpTarget, followedByPadding), new Set([F]));
});

test('a callee that is followed by code only the fall-through reaches returns there: not taken as noreturn (errfinish after a warning)', () => {
  const D = 0x401300n;
  const returnsHere: [bigint, number[]] = [D, [...call(D, F), 0x31, 0xc0, 0xc3]]; // call F; xor %eax,%eax; ret
  assert.deepEqual(judge(endsWithCall, followedByJumpTarget, returnsHere), new Set());
  // The same call in another callee's name leaves F's verdict alone.
  const returnsFromG: [bigint, number[]] = [D, [...call(D, G), 0x31, 0xc0, 0xc3]];
  assert.deepEqual(judge(endsWithCall, returnsFromG), new Set([F]));
});

test('no range ends with a call of it: not taken as noreturn, however its calls are followed', () => {
  assert.deepEqual(judge(followedByJumpTarget, followedByPadding), new Set());
});

test("bytes that read as a call at a range's end but lie inside a longer instruction are no call", () => {
  // movabs $imm64,%rax whose last five immediate bytes spell `call F`, then the range ends.
  const E = 0x401400n;
  const tail = call(E + 5n, F);
  const movabs: [bigint, number[]] = [E, [0x48, 0xb8, 0x00, 0x00, 0x00, ...tail]];
  assert.equal(movabs[1].length, 10);
  assert.deepEqual(judge(movabs), new Set());
  // The same five bytes as a real instruction do end the range with a call.
  assert.deepEqual(judge([E + 5n, tail]), new Set([F]));
});

test("a call followed by a switch table's target is followed by code other paths lead to", () => {
  const S = 0x401500n;
  const T = 0x404000n; // the table, in data
  const code = [
    ...[0x48, 0x8d, 0x0d, ...le32(Number(T - (S + 7n)))], // 0  lea T(%rip),%rcx
    ...[0x48, 0x63, 0x04, 0xb9], //                          7  movslq (%rcx,%rdi,4),%rax
    ...[0x48, 0x01, 0xc8], //                                11 add %rcx,%rax
    ...[0xff, 0xe0], //                                      14 jmp *%rax
    ...call(S + 16n, F), //                                  16 call F
    0xc3, //                                                 21 ret: case 1
  ];
  const table = [...le32(Number(S + 16n - T)), ...le32(Number(S + 21n - T))];
  assert.deepEqual(judgeWith([[T, table]], endsWithCall, [S, code]), new Set([F]));
  // Without the table the code after the call is reached by the fall-through alone.
  assert.deepEqual(judgeWith([[T, [0, 0, 0, 0, 0, 0, 0, 0]]], endsWithCall, [S, code]), new Set());
});

test("a call in the tail of a caller that never returns itself does not count as returning (RM__Assert's does)", () => {
  // G calls F last and then only returns: F returning there would make G return.
  const tailOfG: [bigint, number[]] = [G, [...call(G, F), 0x5b, 0xc3]]; // call F; pop %rbx; ret
  // H ends with a call of G: the compiler knew G does not come back.
  const H = 0x401600n;
  const endsWithG: [bigint, number[]] = [H, [0x31, 0xc0, ...call(H + 2n, G)]];
  assert.deepEqual(judge(endsWithCall, tailOfG, endsWithG), new Set([F, G]));
  // A G nothing says never returns (called only through pointers, as redis's module API): F returns through it.
  assert.deepEqual(judge(endsWithCall, tailOfG), new Set());
});

// Set-up code of an inlined copy that also runs on a path passing no entry: proved no call there when nothing on
// that path uses what it computes (deadSetup.ts), named a possible miss otherwise.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { findInlinedEntries, type InlinedEntryQuery } from '../../../../src/core/probes/inlinedEntries';

const B = 0x401000n;
/** A PLT stub (`jmp *X(%rip)`): a function of another object. */
const PLT = 0x400800n;
/** A function of the holder's own object (`push %rbp; …`). */
const LOCAL = 0x400900n;
const bytes = (...b: number[]) => new Uint8Array(b);
const rel32 = (from: number, to: bigint) => {
  const r = Number(to - (B + BigInt(from) + 5n));
  return [r & 0xff, (r >> 8) & 0xff, (r >> 16) & 0xff, (r >>> 24) & 0xff];
};
const readData = (address: bigint, size: number) =>
  address === PLT
    ? new Uint8Array(size).fill(0).map((_, k) => [0xff, 0x25][k] ?? 0)
    : address === LOCAL
      ? new Uint8Array(size).fill(0x55)
      : undefined;

function run(code: Uint8Array, entry: number, ranges: Array<[number, number]>, args?: number): ReturnType<typeof findInlinedEntries> {
  const q: InlinedEntryQuery = {
    arch: 'x86_64',
    host: [{ start: B, bytes: code }],
    hostEntry: B,
    copies: [{ entry: B + BigInt(entry), ranges: ranges.map(([lo, hi]) => [B + BigInt(lo), B + BigInt(hi)]) }],
    readData,
    argumentsOf: () => args,
  };
  return findInlinedEntries(q);
}
const proved = (r: ReturnType<typeof findInlinedEntries>) => r.ok && r.notArmed.length === 0;
const flagged = (r: ReturnType<typeof findInlinedEntries>) =>
  r.ok && r.notArmed.length === 1 && r.notArmed[0].armed === true && /also runs on a path that passes no entry/.test(r.notArmed[0].reason);

/**
 * selectDb in copyCommand: the copy's arithmetic (`movslq %ecx,%rdx`) is hoisted ahead of the caller's test; the path
 * that makes no call puts something in %rdi (`mov %rbx,%rdi`, or the set-up's value itself) and calls `callee`.
 */
function selectDbShape(toRdi: number[], callee: bigint): Uint8Array {
  return bytes(
    ...[0x48, 0x63, 0xd1], //     0  movslq %ecx,%rdx   copy (set-up: work)
    ...[0x85, 0xf6], //           3  test %esi,%esi     caller
    ...[0x74, 0x04], //           5  je 11              caller: the path that makes no call
    ...[0x48, 0x89, 0xd0], //     7  mov %rdx,%rax      copy entry pc: the call uses the set-up's value
    0xc3, //                      10 ret
    ...toRdi, //                  11 (3 bytes) into %rdi   caller
    0xe8,
    ...rel32(14, callee), //14 call callee        caller
    0xc3, //                      19 ret
  );
}
const ranges: Array<[number, number]> = [
  [0, 3],
  [7, 10],
];
const MOV_RBX_RDI = [0x48, 0x89, 0xdf];
const MOV_RDX_RDI = [0x48, 0x89, 0xd7];

test("set-up whose value sits in %rdx across a call of another object's two-argument function is dead there: proved", () => {
  const r = run(selectDbShape(MOV_RBX_RDI, PLT), 7, ranges, 2);
  assert.deepEqual(r.ok && r.entries.map((e) => e.address - B), [7n]);
  assert.ok(proved(r), `${r.ok ? r.notArmed.map((n) => n.reason) : r.reason}`);
});

test('set-up whose value a path that makes no call may use: still a lower bound', () => {
  // The callee takes three arguments: it may read %rdx.
  assert.ok(flagged(run(selectDbShape(MOV_RBX_RDI, PLT), 7, ranges, 3)), 'three arguments');
  // No prototype known (a varargs callee, an unprototyped declaration): it may read any argument register.
  assert.ok(flagged(run(selectDbShape(MOV_RBX_RDI, PLT), 7, ranges, undefined)), 'unknown arguments');
  // The caller copies the value into the first argument.
  assert.ok(flagged(run(selectDbShape(MOV_RDX_RDI, PLT), 7, ranges, 2)), 'passed as an argument');
  // A function of the holder's own object may leave %rdx as it was (GCC's -fipa-ra knows it): %rdx is still the
  // set-up's value when the holder returns, and its caller may read it.
  assert.ok(flagged(run(selectDbShape(MOV_RBX_RDI, LOCAL), 7, ranges, 2)), 'a local callee');
});

test('set-up spilled to the frame: dead unless the slot is read or a frame address reaches it', () => {
  const code = (toRdi: number[]) =>
    bytes(
      ...[0x48, 0x83, 0xec, 0x18], //       0  sub $0x18,%rsp           caller: the frame
      ...[0x48, 0x8d, 0x14, 0x92], //       4  lea (%rdx,%rdx,4),%rdx   copy (set-up: work)
      ...[0x48, 0x89, 0x54, 0x24, 0x08], // 8  mov %rdx,0x8(%rsp)       copy (set-up: a spill)
      ...[0x85, 0xf6], //                   13 test %esi,%esi           caller
      ...[0x74, 0x0a], //                   15 je 27                    caller: the path that makes no call
      ...[0x48, 0x8b, 0x44, 0x24, 0x08], // 17 mov 0x8(%rsp),%rax       copy entry pc
      ...[0x48, 0x83, 0xc4, 0x18], //       22 add $0x18,%rsp
      0xc3, //                              26 ret
      ...toRdi, //                          27 (5 bytes) into %rdi      caller
      0xe8,
      ...rel32(32, PLT), //           32 call PLT                 caller
      ...[0x48, 0x83, 0xc4, 0x18], //       37 add $0x18,%rsp
      0xc3, //                              41 ret
    );
  const rs: Array<[number, number]> = [
    [4, 13],
    [17, 22],
  ];
  // `mov %rbx,%rdi`: nothing reads the slot on that path, and the frame is gone when the holder returns.
  assert.ok(proved(run(code([0x48, 0x89, 0xdf, 0x90, 0x90]), 17, rs, 2)), 'mov %rbx,%rdi');
  // `lea (%rsp),%rdi`: the callee gets the frame's address, and may read the slot above it.
  assert.ok(flagged(run(code([0x48, 0x8d, 0x3c, 0x24, 0x90]), 17, rs, 2)), 'lea (%rsp),%rdi');
  // `mov 0x8(%rsp),%rdi`: the caller reloads the spilled value and passes it.
  assert.ok(flagged(run(code([0x48, 0x8b, 0x7c, 0x24, 0x08]), 17, rs, 2)), 'mov 0x8(%rsp),%rdi');
});

test('set-up that the path without an entry branches on is used there: still a lower bound', () => {
  // The set-up's own test decides that the path makes no call: which way it goes is the computation's use, even
  // though no register it wrote is read after.
  const code = bytes(
    ...[0x83, 0xc1, 0x01], //             0  add $1,%ecx      copy (set-up: work)
    ...[0x74, 0x03], //                   3  je 8             copy (set-up): branches on the add's flags
    ...[0x89, 0xc8], //                   5  mov %ecx,%eax    copy entry pc
    0xc3, //                              7  ret
    ...[0xb9, 0x00, 0x00, 0x00, 0x00], // 8  mov $0,%ecx      caller: the set-up's register overwritten
    0xc3, //                              13 ret
  );
  const r = run(code, 5, [
    [0, 5],
    [5, 7],
  ]);
  assert.ok(flagged(r), `${r.ok ? r.notArmed.map((n) => n.reason) : r.reason}`);
});

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { findInlinedExits, type InlinedExitQuery } from '../../../../src/core/probes/inlinedExits';

const B = 0x401000n;
const bytes = (...b: number[]) => new Uint8Array(b);

/** One host range at B, entered at B unless said otherwise. */
function query(code: Uint8Array, copy: Array<[number, number]>, entry: number, extra: Partial<InlinedExitQuery> = {}): InlinedExitQuery {
  return {
    arch: 'x86_64',
    host: [{ start: B, bytes: code }],
    hostEntry: B,
    copy: copy.map(([lo, hi]) => [B + BigInt(lo), B + BigInt(hi)]),
    entry: B + BigInt(entry),
    ...extra,
  };
}
const at = (...offs: Array<[number, 'leaving' | 'target']>) => offs.map(([o, how]) => ({ address: B + BigInt(o), how }));

test('an early return: the conditional jump out lands on code only the copy reaches, probed there once', () => {
  const code = bytes(
    ...[0x48, 0x89, 0xf8], // 0  mov %rdi,%rax      caller
    ...[0x85, 0xff], //       3  test %edi,%edi     copy entry
    ...[0x74, 0x03], //       5  je 10              copy: early return
    ...[0x83, 0xc0, 0x01], // 7  add $1,%eax        copy, falls out
    0xc3, //                  10 ret                caller
  );
  assert.deepEqual(findInlinedExits(query(code, [[3, 10]], 3)), { ok: true, exits: at([10, 'target']) });
});

test('a conditional jump out to code the caller also reaches is refused, not counted short', () => {
  const code = bytes(
    ...[0x85, 0xf6], //       0  test %esi,%esi     caller
    ...[0x74, 0x07], //       2  je 11              caller skips the call
    ...[0x85, 0xff], //       4  test %edi,%edi     copy entry
    ...[0x74, 0x03], //       6  je 11              copy: early return
    ...[0x83, 0xc0, 0x01], // 8  add $1,%eax        copy
    0xc3, //                  11 ret                caller
  );
  const r = findInlinedExits(query(code, [[4, 11]], 4));
  assert.equal(r.ok, false);
  assert.equal(!r.ok && r.category, 'shared-target');
  assert.match(!r.ok ? r.reason : '', /conditional jump at 0x401006 leaves the copy to 0x40100b/);
});

test("the caller's code scheduled between the copy's ranges is a hop, not an exit", () => {
  const code = bytes(
    ...[0x85, 0xff], //       0  test %edi,%edi     copy entry
    ...[0x83, 0xc0, 0x01], // 2  add $1,%eax        copy, first range ends
    ...[0x48, 0x89, 0xf2], // 5  mov %rsi,%rdx      caller (scheduled in between)
    ...[0x83, 0xc0, 0x02], // 8  add $2,%eax        copy, second range
    0xc3, //                  11 ret                caller
  );
  assert.deepEqual(
    findInlinedExits(
      query(
        code,
        [
          [0, 5],
          [8, 11],
        ],
        0,
      ),
    ),
    { ok: true, exits: at([8, 'leaving']) },
  );
});

test("a loop through the copy's entry is refused (its entry would count each iteration)", () => {
  const code = bytes(
    ...[0x31, 0xc0], //       0  xor %eax,%eax      caller
    ...[0x83, 0xc0, 0x01], // 2  add $1,%eax        copy entry, loop head
    ...[0x39, 0xf8], //       5  cmp %edi,%eax      copy
    ...[0x75, 0xf9], //       7  jne 2              copy
    0xc3, //                  9  ret                caller
  );
  const r = findInlinedExits(query(code, [[2, 9]], 2));
  assert.equal(!r.ok && r.category, 'reentered');
});

test('a copy inside a caller loop, with set-up scheduled before its entry, leaves once per iteration', () => {
  const code = bytes(
    ...[0x31, 0xc0], //       0  xor %eax,%eax      caller
    ...[0x89, 0xf9], //       2  mov %edi,%ecx      copy (before its entry): loop head
    ...[0x83, 0xc1, 0x01], // 4  add $1,%ecx        copy entry
    ...[0x01, 0xc8], //       7  add %ecx,%eax      copy, falls out
    ...[0xff, 0xce], //       9  dec %esi           caller
    ...[0x75, 0xf5], //       11 jne 2              caller loops back into the copy's set-up
    0xc3, //                  13 ret
  );
  assert.deepEqual(findInlinedExits(query(code, [[2, 9]], 4)), { ok: true, exits: at([7, 'leaving']) });
});

test('a computed jump anywhere in the function makes returns unavailable', () => {
  const code = bytes(
    ...[0x85, 0xff], //       0  test %edi,%edi     copy entry
    ...[0x83, 0xc0, 0x01], // 2  add $1,%eax        copy
    ...[0xff, 0xe0], //       5  jmp *%rax          caller
  );
  const r = findInlinedExits(query(code, [[0, 5]], 0));
  assert.deepEqual(r, {
    ok: false,
    category: 'indirect-jump',
    reason: 'its function has a computed jump at 0x401005 (a switch table?) whose targets are not known',
    address: B + 5n,
  });
});

test('a call that never returns is no exit; without that knowledge it would count as one', () => {
  const code = bytes(
    ...[0x85, 0xff], //                 0  test %edi,%edi   copy entry
    ...[0x74, 0x05], //                 2  je 9             copy
    ...[0x83, 0xc0, 0x01], //           4  add $1,%eax      copy
    ...[0xeb, 0x05], //                 7  jmp 14           copy leaves
    ...[0xe8, 0xf2, 0x0f, 0x00, 0x00], // 9 call 0x402000   copy: abort()
    ...[0x48, 0x89, 0xf8], //           14 mov %rdi,%rax    caller
    0xc3, //                            17 ret
  );
  const q = query(code, [[0, 14]], 0);
  assert.deepEqual(findInlinedExits({ ...q, noReturn: (t) => t === 0x402000n }), { ok: true, exits: at([7, 'leaving']) });
  assert.deepEqual(findInlinedExits(q), {
    ok: true,
    exits: at([7, 'leaving'], [9, 'leaving']),
  });
});

test('alignment NOPs no jump reaches are padding; other code no jump reaches may run in any state', () => {
  const padded = bytes(
    ...[0x85, 0xff], //       0  test %edi,%edi     copy entry
    ...[0xeb, 0x01], //       2  jmp 5              copy
    0x90, //                  4  nop                padding
    ...[0x83, 0xc0, 0x01], // 5  add $1,%eax        copy, falls out
    0xc3, //                  8  ret                caller
  );
  assert.deepEqual(findInlinedExits(query(padded, [[0, 8]], 0)), { ok: true, exits: at([5, 'leaving']) });
  const landingPad = bytes(
    ...[0x85, 0xff], //       0  test %edi,%edi     copy entry
    ...[0xeb, 0x02], //       2  jmp 6              copy
    ...[0x31, 0xc0], //       4  xor %eax,%eax      copy: reached by no jump (an exception landing pad)
    ...[0x83, 0xc0, 0x01], // 6  add $1,%eax        copy, falls out
    0xc3, //                  9  ret
  );
  const r = findInlinedExits(query(landingPad, [[0, 9]], 0));
  assert.equal(!r.ok && r.category, 'unpaired');
});

test('a RET or a tail jump inside the copy is an exit; a conditional jump out of the function is not placeable', () => {
  const tail = bytes(
    ...[0x85, 0xff], //                 0  test %edi,%edi  copy entry
    ...[0x74, 0x01], //                 2  je 5            copy
    0xc3, //                            4  ret             copy (the caller's return merged into it)
    ...[0xe9, 0xf6, 0x0f, 0x00, 0x00], // 5 jmp 0x402000   copy: tail call
  );
  assert.deepEqual(findInlinedExits(query(tail, [[0, 10]], 0)), { ok: true, exits: at([4, 'leaving'], [5, 'leaving']) });
  const condTail = bytes(
    ...[0x85, 0xff], //                       0  test %edi,%edi  copy entry
    ...[0x0f, 0x84, 0xfa, 0x0f, 0x00, 0x00], // 2  je 0x402000     copy: conditional tail call
    0xc3, //                                  8  ret
  );
  const r = findInlinedExits(query(condTail, [[0, 9]], 0));
  assert.equal(!r.ok && r.category, 'shared-target');
  assert.match(!r.ok ? r.reason : '', /out of the function/);
});

test('undecodable bytes in the function refuse; trailing padding does not', () => {
  const bad = bytes(0x85, 0xff, 0x06, 0x85, 0xff, 0xc3); // 0x06 is no instruction in 64-bit mode
  assert.equal(((r) => !r.ok && r.category)(findInlinedExits(query(bad, [[0, 2]], 0))), 'undecodable');
  const padded = bytes(0x85, 0xff, 0xc3, 0xcc, 0x00, 0x00); // RET, then padding that decodes but never runs
  assert.deepEqual(findInlinedExits(query(padded, [[0, 3]], 0)), { ok: true, exits: at([2, 'leaving']) });
  assert.equal(((r) => !r.ok && r.category)(findInlinedExits({ ...query(padded, [[0, 2]], 0), arch: 'aarch64' })), 'arch');
});

test("an exit on an instruction the kernel will not probe (GCC's `cs nopw` padding) is refused, not armed to stay silent", () => {
  const code = bytes(
    ...[0x85, 0xff], //                                       0  test %edi,%edi        copy entry
    ...[0x2e, 0x66, 0x0f, 0x1f, 0x84, 0x00, 0, 0, 0, 0], //   2  cs nopw 0(%rax,%rax)  copy, falls out
    0xc3, //                                                  12 ret
  );
  const r = findInlinedExits(query(code, [[0, 12]], 0));
  assert.equal(!r.ok && r.category, 'unprobeable');
  assert.match(!r.ok ? r.reason : '', /0x401002/);
});

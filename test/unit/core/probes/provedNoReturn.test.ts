import { test } from 'node:test';
import assert from 'node:assert/strict';
import { ProvedNoReturn } from '../../../../src/core/probes/provedNoReturn';

const ABORT = 0x9000n; // known never to return (by name, say)
const H = 0x4000n; //     returns at once
const G = 0x1000n; //     returns unless its first argument is 0, then calls ABORT

/** `call target` at `at` (5 bytes). */
const call = (at: bigint, target: bigint): number[] => {
  const rel = Number(target - (at + 5n));
  return [0xe8, rel & 0xff, (rel >> 8) & 0xff, (rel >> 16) & 0xff, (rel >>> 24) & 0xff];
};

/** A judge over functions given as entry → bytes (each one range). */
function judge(fns: Map<bigint, number[]>): ProvedNoReturn {
  return new ProvedNoReturn(
    (entry) => (fns.has(entry) ? [{ start: entry, end: entry + BigInt(fns.get(entry)!.length) }] : undefined),
    (start, size) => {
      const code = fns.get(start);
      return code && code.length === size ? new Uint8Array(code) : undefined;
    },
    (t) => t === ABORT,
  );
}

const base = () =>
  new Map<bigint, number[]>([
    [H, [0xc3]], // ret
    [
      G,
      [
        ...[0x85, 0xff], //     0  test %edi,%edi
        ...[0x74, 0x01], //     2  je 5
        0xc3, //                4  ret
        ...call(G + 5n, ABORT), // 5  call abort (the code ends here)
      ],
    ],
  ]);

test('a function whose every way out passes a call that never returns for the constant it passes never returns', () => {
  const F = 0x2000n;
  const fns = base();
  // xor %edi,%edi; call G; ret: G is called with 0, so it calls abort.
  fns.set(F, [0x31, 0xff, ...call(F + 2n, G), 0xc3]);
  const j = judge(fns);
  assert.equal(j.has(F), true);
  // G itself may return (with another argument), and so may H.
  assert.equal(j.has(G), false);
  assert.equal(j.has(H), false);
  assert.equal(j.has(ABORT), true);
});

test('another constant, or a register a call does not keep, leaves the function returning', () => {
  const F = 0x2000n;
  for (const head of [
    [0xbf, 0x01, 0x00, 0x00, 0x00], //               mov $1,%edi
    [0x31, 0xff, ...call(F + 2n, H)], //             xor %edi,%edi; call H (the call may change %rdi)
    [0x31, 0xdb, 0x89, 0xf7], //                     xor %ebx,%ebx; mov %esi,%edi (not the zero)
  ]) {
    const fns = base();
    fns.set(F, [...head, ...call(F + BigInt(head.length), G), 0xc3]);
    assert.equal(judge(fns).has(F), false, `${head}`);
  }
  // A register the callee saves (rbx) keeps its zero across a call, and a copy of it carries it.
  const fns = base();
  const head = [0x31, 0xdb, ...call(F + 2n, H), 0x89, 0xdf]; // xor %ebx,%ebx; call H; mov %ebx,%edi
  fns.set(F, [...head, ...call(F + BigInt(head.length), G), 0xc3]);
  assert.equal(judge(fns).has(F), true);
});

test('a way out that passes no such call returns; code that runs off the end of the function is no way out', () => {
  const F = 0x2000n;
  const fns = base();
  // test %esi,%esi; jne 9; xor %edi,%edi; call G; ret: the other path returns.
  fns.set(F, [0x85, 0xf6, 0x75, 0x07, 0x31, 0xff, ...call(F + 6n, G), 0xc3]);
  assert.equal(judge(fns).has(F), false);
  // A function whose code ends with a call has nothing laid out for that call to return to.
  const E = 0x3000n;
  fns.set(E, [0x85, 0xf6, 0x74, 0x01, 0x90, ...call(E + 5n, H)]); // test; je 5; nop; call H (end)
  assert.equal(judge(fns).has(E), true);
  // Padding after that call changes nothing; other code running past the end is taken for a way out.
  fns.set(E, [0x85, 0xf6, 0x74, 0x01, 0x90, ...call(E + 5n, H), 0x66, 0x90]);
  assert.equal(judge(fns).has(E), true);
  fns.set(E, [0x85, 0xf6, 0x74, 0x01, 0x90, ...call(E + 5n, H), 0x83, 0xc0, 0x01]); // … add $1,%eax (end)
  assert.equal(judge(fns).has(E), false);
  // A computed jump or an address no function is entered at is a way out.
  fns.set(E, [0xff, 0xe0]); // jmp *%rax
  assert.equal(judge(fns).has(E), false);
  assert.equal(judge(fns).has(0x7777n), false);
});

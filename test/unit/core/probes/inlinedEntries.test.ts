import { test } from 'node:test';
import assert from 'node:assert/strict';
import { findInlinedEntries, type InlinedEntryQuery } from '../../../../src/core/probes/inlinedEntries';
import { twoSitesOneCall } from '../../../../src/core/probes/oneCallCheck';

import { addrs, B, bytes, query, site } from './inlinedEntriesCopies';

test('a copy duplicated onto the second path of a test gets an entry there too', () => {
  const code = bytes(
    ...[0x85, 0xff], //       0  test %edi,%edi   caller
    ...[0x74, 0x05], //       2  je 9             caller
    ...[0x83, 0xc0, 0x01], // 4  add $1,%eax      copy entry (first path)
    0xc3, //                  7  ret
    0x90, //                  8  nop
    ...[0x83, 0xc0, 0x01], // 9  add $1,%eax      copy, duplicated (second path)
    0xc3, //                  12 ret
  );
  const r = findInlinedEntries(
    query(code, [
      [
        4,
        [
          [4, 7],
          [9, 12],
        ],
      ],
    ]),
  );
  assert.deepEqual(addrs(r), [4, 9]);
  assert.ok(r.ok && r.entries[1].how === 'path');
});

test("an entry pc that is a jmp to another copy's entry is that call: armed once", () => {
  const code = bytes(
    ...[0x85, 0xff], //       0  test %edi,%edi   caller
    ...[0x74, 0x02], //       2  je 6
    ...[0xeb, 0x00], //       4  jmp 6            copy A's entry
    ...[0x83, 0xc0, 0x01], // 6  add $1,%eax      copy B's entry
    0xc3, //                  9  ret
  );
  const r = findInlinedEntries(
    query(code, [
      [4, [[4, 6]]],
      [6, [[6, 9]]],
    ]),
  );
  assert.deepEqual(addrs(r), [6]);
  assert.deepEqual(r.ok && r.merged, [{ copy: 0, into: 1, why: 'chained' }]);
});

test('DIEs at one address: one call when they describe the same code, two calls when their code is disjoint', () => {
  const code = bytes(
    ...[0x83, 0xc0, 0x01], // 0  add $1,%eax      copy A
    ...[0x83, 0xc0, 0x02], // 3  add $2,%eax      copy B
    ...[0x83, 0xc0, 0x03], // 6  add $3,%eax      both DIEs' entry pc
    0xc3, //                  9  ret
  );
  const same = findInlinedEntries(
    query(code, [
      [6, [[0, 9]]],
      [6, [[0, 9]]],
    ]),
  );
  assert.deepEqual(addrs(same), [6]);
  assert.deepEqual(same.ok && same.merged, [{ copy: 1, into: 0, why: 'same-address' }]);
  const disjoint = findInlinedEntries(
    query(code, [
      [6, [[0, 3]]],
      [6, [[3, 6]]],
    ]),
  );
  assert.deepEqual(addrs(disjoint), [6, 6]);
});

test('argument set-up scheduled ahead of the entry pc is no entry of its own', () => {
  const code = bytes(
    ...[0x89, 0xf8], //       0  mov %edi,%eax    copy (set-up)
    ...[0x85, 0xf6], //       2  test %esi,%esi   caller
    ...[0x83, 0xc0, 0x01], // 4  add $1,%eax      copy entry
    0xc3, //                  7  ret
  );
  assert.deepEqual(
    addrs(
      findInlinedEntries(
        query(code, [
          [
            4,
            [
              [0, 2],
              [4, 7],
            ],
          ],
        ]),
      ),
    ),
    [4],
  );
});

test('a loop unrolled around a call under one DIE: the copy begun again after the loop test is a second call', () => {
  // for (...; rc == 0; ...) rc = f(...); unrolled twice: the DIE's ranges cover both calls, the entry pc the first.
  const code = bytes(
    ...[0x83, 0xc0, 0x01], // 0  add $1,%eax      copy: f's first line (entry pc)
    ...[0x83, 0xc0, 0x02], // 3  add $2,%eax      copy: f's last line
    ...[0x85, 0xc0], //       6  test %eax,%eax   caller: the loop's condition
    ...[0x75, 0x06], //       8  jne 16           caller: out of the loop
    ...[0x83, 0xc0, 0x01], // 10 add $1,%eax      copy: f's first line again (the second call)
    ...[0x83, 0xc0, 0x02], // 13 add $2,%eax      copy: f's last line
    0xc3, //                  16 ret
  );
  const lines: Record<number, string> = { 0: 'f.c:1', 3: 'f.c:2', 6: 'g.c:9', 8: 'g.c:9', 10: 'f.c:1', 13: 'f.c:2', 16: 'g.c:10' };
  const q = (lineOf?: Record<number, string>, c = code): InlinedEntryQuery => ({
    ...query(c, [
      [
        0,
        [
          [0, 6],
          [10, 16],
        ],
      ],
    ]),
    ...(lineOf ? { lineOf: (a: bigint) => lineOf[Number(a - B)] } : {}),
  });
  const r = findInlinedEntries(q(lines));
  assert.deepEqual(addrs(r), [0, 10]);
  assert.ok(r.ok && r.entries[1].how === 'path' && r.notArmed.length === 0);
  assert.deepEqual(twoSitesOneCall(q(lines), [site(0, 0), site(10, 0)]), []);
  // Without the line table, or when the code that left was on the first line too (the caller's code scheduled in
  // the middle of the first statement), the caller's code is inside one call: one entry.
  assert.deepEqual(addrs(findInlinedEntries(q())), [0]);
  assert.deepEqual(addrs(findInlinedEntries(q({ ...lines, 3: 'f.c:1' }))), [0]);
  // Caller's code that always leads back (no test with a way out) is scheduled inside one call too, unless the
  // copy's code it leads back into does what the copy's first instruction does: the loop unrolled whole (ripgrep's
  // thread_local::allocate_bucket, two calls in straight line under one DIE, each counted by the program).
  const straight = bytes(...code.slice(0, 6), 0x85, 0xc0, 0x90, 0x90, ...code.slice(10));
  assert.deepEqual(addrs(findInlinedEntries(q(lines, straight))), [0, 10]);
  const scheduled = bytes(...code.slice(0, 6), 0x85, 0xc0, 0x90, 0x90, 0x83, 0xc0, 0x03, ...code.slice(13));
  assert.deepEqual(addrs(findInlinedEntries(q(lines, scheduled))), [0]);
  // The same when the first instruction addresses memory by %rip and the two displacements agree in their low byte
  // (ripgrep's RareBytesBuilder::set_offset: a counter's `incq` unrolled seven times, 0x1db65a and 0x1db35a apart).
  const incq = (at: number) => {
    const d = 0x10000 - (at + 7); // both address 0x10000 past the holder's start
    return [0x48, 0xff, 0x05, d & 0xff, (d >> 8) & 0xff, (d >> 16) & 0xff, (d >>> 24) & 0xff];
  };
  const unrolled = bytes(
    ...incq(0), //                     0   incq (%rip)       copy: f's first line (entry pc)
    ...[0x83, 0xc0, 0x02], //          7   add $2,%eax       copy: f's last line
    ...[0x85, 0xc0], //                10  test %eax,%eax    caller, straight on
    ...new Array<number>(244).fill(0x90), // 12  nops        caller
    ...incq(256), //                   256 incq (%rip)       copy: the second call
    ...[0x83, 0xc0, 0x02], //          263 add $2,%eax       copy
    0xc3, //                           266 ret
  );
  assert.deepEqual([...unrolled.subarray(3, 7)], [0xf9, 0xff, 0, 0]);
  assert.deepEqual([...unrolled.subarray(259, 263)], [0xf9, 0xfe, 0, 0]);
  const far = findInlinedEntries({
    ...query(unrolled, [
      [
        0,
        [
          [0, 10],
          [256, 266],
        ],
      ],
    ]),
    lineOf: (a: bigint) => {
      const o = Number(a - B);
      return o === 0 || o === 256 ? 'f.c:1' : o === 7 || o === 263 ? 'f.c:2' : 'g.c:9';
    },
  });
  assert.deepEqual(addrs(far), [0, 256]);
});

test('an entry pc reached again while its call is open is not armed, and says why', () => {
  const code = bytes(
    ...[0x31, 0xc0], //       0  xor %eax,%eax    caller
    ...[0xff, 0xc0], //       2  inc %eax         copy entry pc
    ...[0x39, 0xf8], //       4  cmp %edi,%eax    caller, between the copy's code
    ...[0x75, 0xfa], //       6  jne 2            back to the entry with the call open
    ...[0xff, 0xc8], //       8  dec %eax         copy
    0xc3, //                  10 ret
  );
  const r = findInlinedEntries(
    query(code, [
      [
        2,
        [
          [2, 4],
          [8, 10],
        ],
      ],
    ]),
  );
  assert.ok(r.ok);
  assert.deepEqual(r.entries, []);
  assert.equal(r.notArmed.length, 1);
  assert.equal(r.notArmed[0].address, B + 2n);
  assert.match(r.notArmed[0].reason, /also runs while a call is open/);
});

test('set-up that only spills a register is no call of its own; set-up that does work is a call GCC may have merged away', () => {
  // The copy's first instruction runs ahead of the caller's test, whose one path reaches the entry pc and whose
  // other returns: on that path the copy's code ran and no entry did.
  const withHead = (...head: number[]) =>
    bytes(
      ...head, //               0  copy (set-up), 5 bytes
      ...[0x85, 0xf6], //       5  test %esi,%esi   caller
      ...[0x74, 0x04], //       7  je 13            caller: the path that passes no entry
      ...[0x83, 0xc0, 0x01], // 9  add $1,%eax      copy entry pc
      0xc3, //                  12 ret
      0xc3, //                  13 ret
    );
  const run = (code: Uint8Array) =>
    findInlinedEntries(
      query(code, [
        [
          9,
          [
            [0, 5],
            [9, 12],
          ],
        ],
      ]),
    );
  // A register allocator's spill: `mov %rbp,0x28(%rsp)`. Its reload and register copies are no work either.
  const spill = run(withHead(0x48, 0x89, 0x6c, 0x24, 0x28));
  assert.deepEqual(addrs(spill), [9]);
  assert.deepEqual(spill.ok && spill.notArmed, []);
  const copies = run(withHead(0x89, 0xf8, 0x48, 0x89, 0xf1)); // mov %edi,%eax; mov %rsi,%rcx
  assert.deepEqual(copies.ok && copies.notArmed, []);
  // Work: a load through a pointer (`mov 0x28(%rdi),%rbp`), a constant stored into the frame (`movb $1,(%rsp)`),
  // arithmetic (`add %rdi,%rax`), a constant (`mov $1,%eax`: all a call of a function returning 1 computes), a zero.
  for (const head of [
    [0x48, 0x8b, 0x6f, 0x28, 0x90],
    [0xc6, 0x04, 0x24, 0x01, 0x90],
    [0x48, 0x01, 0xf8, 0x90, 0x90],
    [0xb8, 0x01, 0x00, 0x00, 0x00],
    [0x31, 0xc0, 0x90, 0x90, 0x90],
  ]) {
    const r = run(withHead(...head));
    assert.deepEqual(addrs(r), [9]);
    assert.ok(r.ok && r.notArmed.length === 1 && r.notArmed[0].armed, `${head}: ${r.ok && r.notArmed.map((n) => n.reason)}`);
    assert.equal(r.ok && r.notArmed[0].address, B);
    assert.match((r.ok && r.notArmed[0].reason) || '', /also runs on a path that passes no entry/);
  }
});

test("set-up that only loads the function's own address (the argument of -finstrument-functions' hooks) is no call of its own", () => {
  // `lea F(%rip),%r15` ahead of the caller's test, as GCC hoists it out of a loop; then as above.
  const F = 0x400000n; // the function's out-of-line entry
  const lea = [0x4c, 0x8d, 0x3d, ...new Array(4).fill(0)];
  const rel = Number(F - (B + 7n));
  lea.splice(3, 4, rel & 0xff, (rel >> 8) & 0xff, (rel >> 16) & 0xff, (rel >>> 24) & 0xff);
  const code = bytes(
    ...lea, //                0  lea F(%rip),%r15  copy (set-up)
    ...[0x85, 0xf6], //       7  test %esi,%esi    caller
    ...[0x74, 0x04], //       9  je 15             caller: the path that passes no entry
    ...[0x83, 0xc0, 0x01], // 11 add $1,%eax       copy entry pc
    0xc3, //                  14 ret
    0xc3, //                  15 ret
  );
  const q = query(code, [
    [
      11,
      [
        [0, 7],
        [11, 14],
      ],
    ],
  ]);
  const own = findInlinedEntries({ ...q, ownAddresses: new Set([F]) });
  assert.deepEqual(addrs(own), [11]);
  assert.deepEqual(own.ok && own.notArmed, []);
  // Another address (a global, another function's) is a constant a call may compute: the count stays a lower bound.
  for (const other of [undefined, new Set([F + 16n])]) {
    const r = findInlinedEntries({ ...q, ownAddresses: other });
    assert.deepEqual(addrs(r), [11]);
    assert.match((r.ok && r.notArmed[0]?.reason) || '', /also runs on a path that passes no entry/);
  }
});

test('copy code that only runs inside a call is no set-up of another, even where a loop reaches the entry pc again', () => {
  // A loop entered in its middle (at the caller's test) as well as at the entry pc: the copy's code after the
  // entry pc reaches the entry pc again without a back edge, and leaves through the caller's test, but every path
  // to it passes the entry pc first.
  const code = bytes(
    ...[0x85, 0xff], //       0  test %edi,%edi   caller
    ...[0x74, 0x07], //       2  je 11            into the loop's middle
    ...[0x83, 0xc0, 0x01], // 4  add $1,%eax      copy entry pc
    ...[0x48, 0x01, 0xf8], // 7  add %rdi,%rax    copy code: work, only ever after the entry pc
    0x90, //                  10 nop              caller
    ...[0x85, 0xf6], //       11 test %esi,%esi   caller
    ...[0x75, 0xf5], //       13 jne 4
    0xc3, //                  15 ret
  );
  const r = findInlinedEntries(query(code, [[4, [[4, 10]]]]));
  assert.deepEqual(addrs(r), [4]);
  assert.deepEqual(r.ok && r.notArmed, []);
});

test("a copy's tail that another function's copy runs into is their merged tail: it begins no call", () => {
  const code = bytes(
    ...[0x85, 0xff], //       0  test %edi,%edi   caller
    ...[0x74, 0x08], //       2  je 12
    ...[0x83, 0xc0, 0x02], // 4  add $2,%eax      another function's copy
    ...[0x83, 0xc0, 0x03], // 7  add $3,%eax      this copy's tail, shared: the other copy runs into it
    0xc3, //                  10 ret              caller
    0x90, //                  11 nop
    ...[0x83, 0xc0, 0x01], // 12 add $1,%eax      this copy's entry pc
    ...[0xeb, 0xf6], //       15 jmp 7            to its tail
  );
  const ours: Array<[number, Array<[number, number]>]> = [
    [
      12,
      [
        [7, 10],
        [12, 17],
      ],
    ],
  ];
  const other = (lo: number, hi: number): Array<[bigint, bigint]> => [[B + BigInt(lo), B + BigInt(hi)]];
  // Without the other copy's ranges the tail is code that runs both inside a call and outside any.
  const blind = findInlinedEntries(query(code, ours));
  assert.equal(!blind.ok && blind.category, 'ambiguous');
  const r = findInlinedEntries({ ...query(code, ours), others: [other(4, 7)] });
  assert.deepEqual(addrs(r), [12]);
  assert.deepEqual(r.ok && r.notArmed, []);
  // A copy around this one (its ranges hold the entry pc) is the caller's code as far as this goes.
  const around = findInlinedEntries({ ...query(code, ours), others: [other(0, 17)] });
  assert.equal(!around.ok && around.category, 'ambiguous');
  // Reached only after the other copy (this copy's own code never jumps there), the tail begins a call.
  const alone = bytes(...code.slice(0, 15), 0xc3, 0x90);
  const begins = findInlinedEntries({ ...query(alone, ours), others: [other(4, 7)] });
  assert.deepEqual(addrs(begins), [7, 12]);
  assert.ok(begins.ok && begins.entries[0].how === 'path');
  // Reached after the other copy and from the caller's own code, never with a call open: it begins a call.
  const both = bytes(
    ...code.slice(0, 12), //  0…11 as above
    ...[0x85, 0xf6], //       12 test %esi,%esi   caller
    ...[0x74, 0xf7], //       14 je 7             into this copy's code, no call open
    ...[0x83, 0xc0, 0x01], // 16 add $1,%eax      this copy's entry pc
    0xc3, //                  19 ret
  );
  const fromBoth = findInlinedEntries({
    ...query(both, [
      [
        16,
        [
          [7, 10],
          [16, 19],
        ],
      ],
    ]),
    others: [other(4, 7)],
  });
  assert.deepEqual(addrs(fromBoth), [7, 16]);
  // Such code, before it is known to begin a call, does not make code further on look ambiguous: here the
  // caller's code after it (a test) leads back into this copy's code, which a call begun at the entry pc also runs.
  const later = bytes(
    ...code.slice(0, 2), //   0  test %edi,%edi   caller
    ...[0x74, 0x0c], //       2  je 16
    ...code.slice(4, 10), //  4  another function's copy, then this copy's code (reached only from it)
    ...[0x85, 0xf6], //       10 test %esi,%esi   caller, between this copy's code
    ...[0x83, 0xc0, 0x04], // 12 add $4,%eax      this copy's code
    0xc3, //                  15 ret
    ...[0x83, 0xc0, 0x01], // 16 add $1,%eax      this copy's entry pc
    ...[0xeb, 0xf7], //       19 jmp 12
  );
  const afterOther = findInlinedEntries({
    ...query(later, [
      [
        16,
        [
          [7, 10],
          [12, 15],
          [16, 21],
        ],
      ],
    ]),
    others: [other(4, 7)],
  });
  assert.deepEqual(addrs(afterOther), [7, 16]);
});

test('a computed jump in the holder: entries cannot be proved', () => {
  const code = bytes(
    ...[0xff, 0xe0], //       0  jmp *%rax
    ...[0x83, 0xc0, 0x01], // 2  add $1,%eax      copy entry
    0xc3, //                  5  ret
  );
  const r = findInlinedEntries(query(code, [[2, [[2, 5]]]]));
  assert.equal(!r.ok && r.category, 'indirect-jump');
});

test('the define-time check: a site reached from another within one call is found, whatever placed them', () => {
  // The chained case armed as DWARF says: both entry pcs; the first runs into the second with the call open.
  const chained = bytes(
    ...[0x85, 0xff], //       0  test %edi,%edi
    ...[0x74, 0x02], //       2  je 6
    ...[0xeb, 0x00], //       4  jmp 6            copy A's entry
    ...[0x83, 0xc0, 0x01], // 6  add $1,%eax      copy B's entry
    0xc3, //                  9  ret
  );
  const q = query(chained, [
    [4, [[4, 6]]],
    [6, [[6, 9]]],
  ]);
  assert.deepEqual(twoSitesOneCall(q, [site(4, 0), site(6, 1)]), [{ from: B + 4n, to: B + 6n }]);
  assert.deepEqual(twoSitesOneCall(q, [site(6, 1)]), []);
  // A loop inside the copy back to its entry pc: the entry fires again within the call.
  const loop = bytes(
    ...[0x31, 0xc0], //       0  xor %eax,%eax    caller
    ...[0xff, 0xc0], //       2  inc %eax         copy entry, its loop head
    ...[0x39, 0xf8], //       4  cmp %edi,%eax    copy
    ...[0x75, 0xfa], //       6  jne 2            copy
    0xc3, //                  8  ret
  );
  assert.deepEqual(twoSitesOneCall(query(loop, [[2, [[2, 8]]]]), [site(2, 0)]), [{ from: B + 2n, to: B + 2n }]);
  // Leaving the copy ends the call as far as the check goes: a loop through the caller's code is no finding.
  assert.deepEqual(twoSitesOneCall(query(loop, [[2, [[2, 4]]]]), [site(2, 0)]), []);
  // A recursive call inlined into the function's own copy (a copy nested in the other) is a call of its own; a
  // copy whose entry pc lies in another's code that is not nested in it is not.
  const nest = bytes(
    ...[0x83, 0xc0, 0x01], // 0  add $1,%eax      outer copy's entry
    ...[0x83, 0xc0, 0x02], // 3  add $2,%eax      inner copy's entry (a recursive call)
    0xc3, //                  6  ret
  );
  const nested = query(nest, [
    [0, [[0, 6]]],
    [3, [[3, 6]]],
  ]);
  assert.deepEqual(twoSitesOneCall(nested, [site(0, 0), site(3, 1)]), []);
  const shared = query(nest, [
    [0, [[0, 6]]],
    [3, [[3, 7]]],
  ]);
  assert.deepEqual(twoSitesOneCall(shared, [site(0, 0), site(3, 1)]), [{ from: B, to: B + 3n }]);
});

test('copy code that only moves a value, run both inside a call and outside any, begins none and ends none', () => {
  // The caller's test jumps to the copy's last instruction, which the call begun at the entry pc also runs into:
  // a register copy (a register allocator's, attributed to the copy) does no work of a call on either path.
  const withTail = (...tail: number[]) =>
    bytes(
      ...[0x85, 0xff], //       0  test %edi,%edi   caller
      ...[0x74, 0x03], //       2  je 7             caller: to the copy's tail with no call open
      ...[0x83, 0xc0, 0x01], // 4  add $1,%eax      copy entry pc
      ...tail, //               7  copy
      0xc3, //                     ret              caller
    );
  const run = (code: Uint8Array) => findInlinedEntries(query(code, [[4, [[4, code.length - 1]]]]));
  for (const tail of [
    [0x89, 0xf9], //                   mov %edi,%ecx
    [0x8b, 0x54, 0x24, 0x20], //       mov 0x20(%rsp),%edx (a reload)
  ]) {
    const r = run(withTail(...tail));
    assert.deepEqual(addrs(r), [4], `${tail}`);
    assert.deepEqual(r.ok && r.notArmed, []);
  }
  // Work there (`add %edi,%ecx`), or after the move on both paths, is code run both inside a call and outside any.
  for (const tail of [
    [0x01, 0xf9],
    [0x89, 0xf9, 0x83, 0xc0, 0x02], // mov %edi,%ecx; add $2,%eax
  ]) {
    const r = run(withTail(...tail));
    assert.equal(!r.ok && r.category, 'ambiguous', `${tail}`);
  }
});

test("LLVM's split of one call over two DIEs: the second DIE, reached only from the first's code, is no call of its own", () => {
  // ripgrep's HeapVisitor::visit_class_pre, inlined: both arms of its match jump to one edge counter's increment,
  // which LLVM describes as a second inlined_subroutine of the same call (visitor.rs:314:18), 4 bytes long.
  const code = bytes(
    ...[0x85, 0xff], //       0  test %edi,%edi   caller
    ...[0x83, 0xc0, 0x01], // 2  add $1,%eax      copy A's first address
    ...[0x85, 0xf6], //       5  test %esi,%esi   copy A
    ...[0x74, 0x05], //       7  je 14            copy A: one arm
    ...[0x83, 0xc0, 0x02], // 9  add $2,%eax      copy A: the other arm
    ...[0xeb, 0x00], //       12 jmp 14           copy A
    ...[0x48, 0xff, 0x00], // 14 incq (%rax)      copy B: the shared tail
    0xc3, //                  17 ret              caller
  );
  const copies = (b: { call?: string; marked?: boolean }, a: { call?: string; marked?: boolean } = b): InlinedEntryQuery => {
    const q = query(code, [
      [2, [[2, 14]]],
      [14, [[14, 17]]],
    ]);
    Object.assign(q.copies[0], a);
    Object.assign(q.copies[1], b);
    return q;
  };
  const one = findInlinedEntries(copies({ call: 'holder:1:314:18', marked: false }));
  assert.deepEqual(addrs(one), [2], 'one call, counted once');
  assert.ok(one.ok && one.notArmed.some((n) => n.copy === 1 && n.armed && /other copies of the same call/.test(n.reason)), 'and said');
  // Two source calls (another call line), or copies whose entries DWARF marks (GCC): the rule does not apply.
  assert.deepEqual(
    addrs(findInlinedEntries(copies({ call: 'holder:1:315:18', marked: false }, { call: 'holder:1:314:18', marked: false }))),
    [2, 14],
  );
  assert.deepEqual(addrs(findInlinedEntries(copies({ call: 'holder:1:314:18', marked: true }))), [2, 14]);
});

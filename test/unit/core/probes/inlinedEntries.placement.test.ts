// Where a call of an inlined copy begins when its code is not where DWARF's entry pc says: a tail the caller jumps
// into, an entry pc that only jumps out, a LOCK-prefixed first instruction, a callee that never returns, and set-up
// run across the caller's code.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { findInlinedEntries, findInlinedEntriesProving } from '../../../../src/core/probes/inlinedEntries';
import { kernelRefusal } from '../../../../src/core/probes/inlinedExits';
import { twoSitesOneCall } from '../../../../src/core/probes/oneCallCheck';
import { addrs, B, bytes, query, site } from './inlinedEntriesCopies';

test("a copy's tail the caller's code jumps into, after a call or on a path with none, is no entry: counted from below", () => {
  // The shape of an over-count found on a real program: the copy's last block (a register reload and a jump back
  // into the caller) is a jump target of the caller's loop test, reached on the first round (no call yet) and on
  // later rounds after the caller's own code closed the call the entry pc began. No path reaches it with a call
  // open, so it was armed as the first instruction of a duplicated path: every hit there was a second count.
  const withTail = (...tail: number[]) =>
    bytes(
      ...[0x31, 0xc9], //       0  xor %ecx,%ecx     caller
      ...[0x85, 0xff], //       2  test %edi,%edi    caller: loop head
      ...[0x74, 0x0a], //       4  je 16             caller: to the copy's tail
      ...[0x83, 0xc0, 0x01], // 6  add $1,%eax       copy entry pc
      ...[0xeb, 0x00], //       9  jmp 11            copy
      ...[0x83, 0xef, 0x01], // 11 sub $1,%edi       caller
      ...[0xeb, 0xf2], //       14 jmp 2             caller: back edge
      ...tail, //               16 copy's tail
      ...[0xeb, 0x00], //          jmp to the ret    copy
      0xc3, //                     ret               caller
    );
  const run = (code: Uint8Array) =>
    findInlinedEntries(
      query(code, [
        [
          6,
          [
            [6, 11],
            [16, code.length - 1],
          ],
        ],
      ]),
    );
  const reload = run(withTail(0x4c, 0x8b, 0x6c, 0x24, 0x08)); // mov 0x8(%rsp),%r13
  assert.deepEqual(addrs(reload), [6], 'the entry pc alone');
  assert.deepEqual(reload.ok && reload.notArmed, [], 'proved: a duplicate of the call would do its add');
  // A copy whose code is all moves (a function returning its argument) could have a call made of moves alone.
  const trivial = withTail(0x4c, 0x8b, 0x6c, 0x24, 0x08);
  trivial.set([0x89, 0xf8, 0x90], 6); // mov %edi,%eax; nop
  const moves = run(trivial);
  assert.deepEqual(addrs(moves), [6]);
  assert.ok(moves.ok);
  assert.deepEqual(
    moves.notArmed.map((n) => [n.copy, Number(n.address - B), n.armed]),
    [[0, 16, true]],
    'the count is a lower bound, and says why',
  );
  assert.match(moves.notArmed[0].reason, /only moves values and jumps/);
  // A duplicated path that does work before it leaves the copy begins a call there, moves ahead of it or not.
  for (const tail of [
    [0x83, 0xc0, 0x01], //                  add $1,%eax
    [0x89, 0xf9, 0x83, 0xc0, 0x01], //      mov %edi,%ecx; add $1,%eax
  ]) {
    const r = run(withTail(...tail));
    assert.deepEqual(addrs(r), [6, 16], `${tail}`);
    assert.deepEqual(r.ok && r.notArmed, []);
  }
});

test("an entry pc that only jumps out of its copy is the caller's jump, not a call: the copy is counted where its code is reached", () => {
  // The shape of an over-count found in ripgrep (regex_syntax's hir_from_char_case_insensitive inlined into
  // hir_literal): LLVM gave the caller's jump to a shared exit, on a path that makes no call, the location of the
  // copy, so DWARF's entry pc is that jump; the call's first instructions are attributed to the caller. Armed, the
  // entry pc counted every run of the other path.
  const code = (entry: number[], into = 0x02) =>
    bytes(
      ...[0x85, 0xff], //       0  test %edi,%edi    caller
      ...[0x74, 0x05], //       2  je 9              caller: the path with no call
      ...[0x83, 0xc0, 0x01], // 4  add $1,%eax       the call's start, attributed to the caller
      ...[0xeb, into], //       7  jmp 11            caller: into the copy's body
      ...entry, //              9  copy entry pc
      ...[0x83, 0xc0, 0x02], // 11 add $2,%eax       copy body
      0xc3, //                  14 ret               caller: the shared exit
    );
  const run = (c: Uint8Array) =>
    findInlinedEntries(
      query(c, [
        [
          9,
          [
            [9, 11],
            [11, 14],
          ],
        ],
      ]),
    );
  const r = run(code([0xeb, 0x03])); // jmp 14: out of the copy
  assert.deepEqual(addrs(r), [11], "the copy's body, where calls reach it");
  assert.ok(r.ok && r.entries[0].how === 'path');
  assert.deepEqual(
    r.ok && r.notArmed.map((n) => [n.copy, Number(n.address - B), n.armed]),
    [[0, 9, undefined]],
    'the entry pc is not armed, and the count says it may be short',
  );
  assert.match(r.ok ? r.notArmed[0].reason : '', /only jumps out of the copy/);
  // An entry pc that does the copy's work is where its calls begin, as before (the caller's path then skips it).
  const work = run(code([0x31, 0xd2], 0x05)); // xor %edx,%edx, then falls into the body; the caller jumps to 14
  assert.deepEqual(addrs(work), [9]);
  assert.deepEqual(work.ok && work.notArmed, []);
  // A copy with no work anywhere (a function returning its argument) keeps its entry pc: a call may be moves alone.
  const trivial = code([0xeb, 0x03]);
  trivial.set([0x89, 0xf8, 0x90], 11); // mov %edi,%eax; nop
  const moves = run(trivial);
  assert.ok(moves.ok && moves.entries.some((e) => e.address === B + 9n), JSON.stringify(addrs(moves)));
});

test('an entry on a LOCK-prefixed instruction, which the kernel will not probe, is armed at the next one it alone reaches', () => {
  // Found in ripgrep: an inlined copy whose first instruction is `lock incq` (an atomic counter, Arc::clone): the
  // uprobe was defined, and the kernel refused to install it in every process, silently, so it never fired.
  const code = (into: number) =>
    bytes(
      ...[0x85, 0xff], //             0  test %edi,%edi   caller
      ...[0x74, into], //             2  je               caller: to the ret, or to the code after the lock
      ...[0xf0, 0x48, 0xff, 0x00], // 4  lock incq (%rax) the copy, all of it (a reference count's increment)
      ...[0x83, 0xc0, 0x01], //       8  add $1,%eax      caller
      0xc3, //                        11 ret
    );
  const run = (c: Uint8Array) => findInlinedEntries(query(c, [[4, [[4, 8]]]]));
  const r = run(code(0x07));
  assert.deepEqual(addrs(r), [8], 'armed where every run of the locked instruction goes next, and only it');
  assert.ok(r.ok && r.entries[0].how === 'entry-pc');
  // When other code also jumps to the instruction after it, no place counts exactly that copy's calls.
  const shared = run(code(0x04));
  assert.equal(!shared.ok && shared.category, 'unprobeable');
  assert.match(!shared.ok ? shared.reason : '', /refuses a uprobe on the entry at 0x401004/);
  // A kprobe takes the locked instruction itself (perf probe arms the kernel's inlined atomic_inc there), both ways.
  for (const c of [code(0x07), code(0x04)])
    assert.deepEqual(addrs(findInlinedEntries({ ...query(c, [[4, [[4, 8]]]]), kprobes: true })), [4]);
});

test('an entry on a VEX-encoded instruction, which uprobes step wrongly, is armed at the next one it alone reaches', () => {
  // Found in ripgrep (aho_corasick's Teddy, AVX2): a probe on an inlined copy's first instruction, `vpsrlw
  // $4,%ymm6,%ymm7`, crashed rg (SIGILL); on 6.18 one on `vpsllq $3,%xmm1,%xmm2` hung a program and one on
  // `vpsrlw $4,%xmm6,%xmm7` made it skip the next instruction.
  const code = bytes(
    ...[0x85, 0xff], //                   0  test %edi,%edi          caller
    ...[0x74, 0x08], //                   2  je 12                   caller
    ...[0xc5, 0xc5, 0x71, 0xd6, 0x04], // 4  vpsrlw $4,%ymm6,%ymm7   the copy
    ...[0x83, 0xc0, 0x01], //             9  add $1,%eax             caller
    0xc3, //                              12 ret
  );
  const r = findInlinedEntries(query(code, [[4, [[4, 9]]]]));
  assert.deepEqual(addrs(r), [9], 'armed where every run of the VEX instruction goes next, and only it');
  assert.deepEqual(addrs(findInlinedEntries({ ...query(code, [[4, [[4, 9]]]]), kprobes: true })), [4]);
  const at = (...b: number[]) => kernelRefusal([{ start: B, bytes: bytes(...b) }], B);
  assert.equal(at(0xc5, 0xc5, 0x71, 0xd6, 0x04), 'vex');
  assert.equal(at(0xc4, 0xe3, 0x6d, 0x02, 0xd9, 0x01), 'vex', 'three-byte VEX');
  assert.equal(at(0x62, 0xf1, 0x7d, 0x48, 0x6f, 0x07), 'vex', 'EVEX');
  assert.equal(at(0xf0, 0x48, 0xff, 0x00), 'prefix');
  assert.equal(at(0x66, 0x0f, 0x71, 0xd7, 0x04), undefined, 'the SSE form is stepped right');
});

test('a callee proved never to return ends its paths where the entries are otherwise unproved, arming no new place', () => {
  const A = B + 0x100n; // the callee (outside the holder)
  const callA = (at: number) => {
    const rel = Number(A - (B + BigInt(at) + 5n));
    return [0xe8, rel & 0xff, (rel >> 8) & 0xff, (rel >> 16) & 0xff, (rel >>> 24) & 0xff];
  };
  const provedA = (t: bigint) => t === A;
  // The caller asserts (calls A, which redis follows with __builtin_unreachable()) and its code runs on into the
  // copy's own assert code, which the copy's test also jumps to: unproved, unless A never returns.
  const assertInto = bytes(
    ...[0x85, 0xff], //       0  test %edi,%edi   caller
    ...[0x74, 0x0a], //       2  je 14            caller: its assertion fails
    ...[0x83, 0xc0, 0x01], // 4  add $1,%eax      copy entry pc
    ...[0x85, 0xf6], //       7  test %esi,%esi   copy
    ...[0x78, 0x08], //       9  js 19            copy: its assertion fails
    0xc3, //                  11 ret              caller
    ...[0x90, 0x90], //       12 padding
    ...callA(14), //          14 call A           caller
    ...[0x83, 0xc0, 0x02], // 19 add $2,%eax      copy: its assertion's code
    0xc3, //                  22 ret
  );
  const q = query(assertInto, [
    [
      4,
      [
        [4, 11],
        [19, 22],
      ],
    ],
  ]);
  assert.equal(findInlinedEntriesProving(q, () => false).result.ok, false);
  const r = findInlinedEntriesProving(q, provedA).result;
  assert.deepEqual(addrs(r), [4]);
  assert.deepEqual(r.ok && r.notArmed, []);
  // Where the callee's proof leaves copy code reached only with no call open (here after the copy's own call of
  // A, also reached from the caller's test), it would begin a call at a new place: that answer is not taken.
  const newPlace = bytes(
    ...[0x85, 0xff], //       0  test %edi,%edi   caller
    ...[0x74, 0x08], //       2  je 12            caller: to the copy's code, no call open
    ...[0x83, 0xc0, 0x01], // 4  add $1,%eax      copy entry pc
    ...callA(7), //           7  call A           copy
    ...[0x83, 0xc0, 0x02], // 12 add $2,%eax      copy
    0xc3, //                  15 ret
  );
  const q2 = query(newPlace, [[4, [[4, 15]]]]);
  assert.equal(findInlinedEntries({ ...q2, noReturn: provedA }).ok, true); // proved alone, with an entry at 12
  const kept = findInlinedEntriesProving(q2, provedA).result;
  assert.equal(!kept.ok && kept.category, 'ambiguous');
});

test("copy code on a path of its own that runs across the caller's code into the copy's first operation is set-up of one call", () => {
  // Found in redis built with -finstrument-functions: lpValidateNext's copy of lpEncodeBacklen sets its argument
  // (`mov $2,%r13d`, on the copy's line), another copy's exit hook runs (the caller's code), then the copy begins
  // as its entry pc does (`mov 0x28(%rsp),%rsi`): one call, once. Counting both places counted it twice.
  const X = B + 0x100n;
  const rel = Number(X - (B + 24n));
  const code = bytes(
    ...[0x85, 0xff], //                   0  test %edi,%edi        caller
    ...[0x74, 0x09], //                   2  je 13                 caller
    ...[0x48, 0x8b, 0x74, 0x24, 0x28], // 4  mov 0x28(%rsp),%rsi   copy: entry pc (f.c:1)
    ...[0x83, 0xc0, 0x01], //             9  add $1,%eax           copy (f.c:2)
    0xc3, //                              12 ret                   caller
    ...[0x41, 0xbd, 0x02, 0, 0, 0], //    13 mov $2,%r13d          copy: its argument (f.c:2)
    ...[0xe8, rel & 0xff, (rel >> 8) & 0xff, (rel >> 16) & 0xff, (rel >>> 24) & 0xff], // 19 call X (caller)
    ...[0x48, 0x8b, 0x74, 0x24, 0x28], // 24 mov 0x28(%rsp),%rsi   copy (f.c:1)
    ...[0x83, 0xc0, 0x01], //             29 add $1,%eax           copy (f.c:2)
    0xc3, //                              32 ret                   caller
  );
  const lines: Record<number, string> = { 4: 'f.c:1', 9: 'f.c:2', 13: 'f.c:2', 24: 'f.c:1', 29: 'f.c:2' };
  const r = findInlinedEntries({
    ...query(code, [
      [
        4,
        [
          [4, 12],
          [13, 19],
          [24, 32],
        ],
      ],
    ]),
    lineOf: (a: bigint) => lines[Number(a - B)] ?? 'g.c:9',
  });
  assert.deepEqual(addrs(r), [4, 13], 'one entry on each path');
  assert.deepEqual(twoSitesOneCall(query(code, [[4, [[4, 12]]]]), [site(4, 0), site(13, 0)]), []);
});

test("an entry pc on the caller's test that decides whether the copy runs is not armed: the copy is counted where its code begins", () => {
  // The shape of an over-count found in SQLite (isDate: sqlite3_value_double called only for a number): GCC gave the
  // copy's DW_AT_entry_pc to the caller's `je` outside the copy's own ranges, so arming it counted every run of the
  // test (2,405 hits for 1 call).
  const r = findInlinedEntries(
    query(
      bytes(
        ...[0x85, 0xff], //       0  test %edi,%edi    caller
        ...[0x74, 0x03], //       2  je 7              caller: the copy's entry pc
        ...[0x83, 0xc0, 0x01], // 4  add $1,%eax       copy
        0xc3, //                  7  ret               caller
      ),
      [[2, [[4, 7]]]],
    ),
  );
  assert.deepEqual(addrs(r), [4], 'armed where the copy’s code begins, not on the test');
  assert.ok(r.ok);
  assert.deepEqual(
    r.notArmed.map((n) => [n.copy, Number(n.address - B), n.armed]),
    [[0, 2, undefined]],
    'its count is a lower bound, and says why',
  );
  assert.match(r.notArmed[0].reason, /outside the copy's, and control goes from it both into the copy and past it/);
  // An entry pc outside the ranges that every run of goes on into the copy, or that its copy's code runs before
  // (two copies computed together, the second's entry pc after both), stays where calls begin.
  const straight = findInlinedEntries(
    query(
      bytes(
        ...[0x85, 0xff], //       0  test %edi,%edi    caller
        ...[0x74, 0x05], //       2  je 9              caller
        ...[0x89, 0xf8], //       4  mov %edi,%eax     caller: the copy's entry pc
        ...[0x83, 0xc0, 0x01], // 6  add $1,%eax       copy
        0xc3, //                  9  ret               caller
      ),
      [[4, [[6, 9]]]],
    ),
  );
  assert.deepEqual(addrs(straight), [4]);
  assert.deepEqual(straight.ok && straight.notArmed, []);
  const after = findInlinedEntries(
    query(
      bytes(
        ...[0x85, 0xff], //       0  test %edi,%edi    caller
        ...[0x74, 0x05], //       2  je 9              caller
        ...[0x83, 0xc0, 0x01], // 4  add $1,%eax       copy
        ...[0x89, 0xc1], //       7  mov %eax,%ecx     caller: the copy's entry pc, after its code
        0xc3, //                  9  ret               caller
      ),
      [[7, [[4, 7]]]],
    ),
  );
  assert.deepEqual(addrs(after), [7]);
  assert.deepEqual(after.ok && after.notArmed, []);
});

test("a copy's last instruction scheduled after the next copy's set-up still belongs to the open call", () => {
  // The shape of an over-count found in SQLite (two sqlite3Get4byte copies in sqlite3BtreeIntegrityCheck): the first
  // copy's `bswap` comes after the caller's code and the second copy's argument loads. Taken for a call reached
  // with none open, it was armed as a duplicated path (2 counts for each call of the first copy).
  const r = findInlinedEntries(
    query(
      bytes(
        ...[0x83, 0xc0, 0x01], // 0  add $1,%eax       A's entry pc
        ...[0x89, 0xf9], //       3  mov %edi,%ecx     caller
        ...[0x89, 0xfa], //       5  mov %edi,%edx     B's set-up
        ...[0x83, 0xc0, 0x02], // 7  add $2,%eax       A: its last work
        0x90, //                  10 nop               caller
        ...[0x83, 0xc2, 0x01], // 11 add $1,%edx       B's entry pc
        0xc3, //                  14 ret               caller
      ),
      [
        [
          0,
          [
            [0, 3],
            [7, 10],
          ],
        ],
        [
          11,
          [
            [5, 7],
            [11, 14],
          ],
        ],
      ],
    ),
  );
  assert.deepEqual(addrs(r), [0, 11], 'each copy once, at its entry pc');
  assert.deepEqual(r.ok && r.notArmed, []);
});

test("a copy's start duplicated right after another copy's call, joining its own body, makes its count a lower bound", () => {
  // The shape of an unsaid short count found in SQLite (createCollation: one sqlite3FindCollSeq copy's exit hook runs
  // into the next copy's entry hook, then jumps into that copy's body). Reached only while the other copy's call is
  // open, the code is taken to continue that call, so a call begun there goes uncounted: said, not hidden.
  const r = findInlinedEntries(
    query(
      bytes(
        ...[0x85, 0xff], //       0  test %edi,%edi    caller
        ...[0x74, 0x07], //       2  je 11             caller
        ...[0x83, 0xc2, 0x01], // 4  add $1,%edx       B's entry pc
        ...[0x83, 0xc2, 0x02], // 7  add $2,%edx       B's body
        0xc3, //                  10 ret               caller
        ...[0x83, 0xc0, 0x01], // 11 add $1,%eax       A's entry pc
        ...[0x83, 0xc2, 0x01], // 14 add $1,%edx       B's start again, after A
        ...[0xeb, 0xf4], //       17 jmp 7             B: into its body
      ),
      [
        [
          4,
          [
            [4, 10],
            [14, 19],
          ],
        ],
        [11, [[11, 14]]],
      ],
    ),
  );
  assert.deepEqual(addrs(r), [4, 11]);
  assert.ok(r.ok);
  assert.deepEqual(
    r.notArmed.map((n) => [n.copy, Number(n.address - B), n.armed]),
    [[0, 14, true]],
  );
  assert.match(r.notArmed[0].reason, /reached only while a call of another copy is open/);
});

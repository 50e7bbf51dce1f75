import { test } from 'node:test';
import assert from 'node:assert/strict';
import { findInlinedEntries, type InlinedEntryQuery } from '../../../../src/core/probes/inlinedEntries';

const B = 0x401000n;
const bytes = (...b: number[]) => new Uint8Array(b);

/** One host range at B entered at B; copies as [entry, [[lo, hi]…]] offsets. */
function query(code: Uint8Array, copies: Array<[number, Array<[number, number]>]>): InlinedEntryQuery {
  return {
    arch: 'x86_64',
    host: [{ start: B, bytes: code }],
    hostEntry: B,
    copies: copies.map(([entry, ranges]) => ({
      entry: B + BigInt(entry),
      ranges: ranges.map(([lo, hi]) => [B + BigInt(lo), B + BigInt(hi)]),
    })),
  };
}
const addrs = (r: ReturnType<typeof findInlinedEntries>) => (r.ok ? r.entries.map((e) => Number(e.address - B)) : r);

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

test('a computed jump in the holder: entries cannot be proved', () => {
  const code = bytes(
    ...[0xff, 0xe0], //       0  jmp *%rax
    ...[0x83, 0xc0, 0x01], // 2  add $1,%eax      copy entry
    0xc3, //                  5  ret
  );
  const r = findInlinedEntries(query(code, [[2, [[2, 5]]]]));
  assert.equal(!r.ok && r.category, 'indirect-jump');
});

import assert from 'node:assert/strict';
import { test } from 'node:test';
import { ByteReader, decodeString, elfReader, hex, stringAt } from '../../../../src/core/binary/byteReader';
import { ElfFormatError } from '../../../../src/core/binary/errors';
import { dwarfReader, DwarfFormatError } from '../../../../src/core/dwarf/format';

const bytes = (...xs: number[]) => Uint8Array.from(xs);

test('every width, little- and big-endian, as the ELF says', () => {
  const b = bytes(0x81, 0x02, 0x01, 0x03, 0x02, 0x01, 0x04, 0x03, 0x02, 0x01, 0x08, 0x07, 0x06, 0x05, 0x04, 0x03, 0x02, 0x01);
  const le = elfReader(b, true, 'test');
  assert.equal(le.u8(), 0x81);
  assert.equal(le.u16(), 0x0102);
  assert.equal(le.u24(), 0x010203);
  assert.equal(le.u32(), 0x01020304);
  assert.equal(le.u64big(), 0x0102030405060708n);
  assert.equal(le.left, 0);
  const be = elfReader(b, false, 'test');
  assert.equal(be.s8(), -127);
  assert.equal(be.u16(), 0x0201);
  assert.equal(be.u24(), 0x030201);
  assert.equal(be.u32(), 0x04030201);
  assert.equal(be.u64(), Number(0x0807060504030201n));
  const neg = elfReader(bytes(0xfe, 0xff, 0xfc, 0xff, 0xff, 0xff, ...new Array(8).fill(0xff)), true, 'test');
  assert.equal(neg.s16(), -2);
  assert.equal(neg.s32(), -4);
  assert.equal(neg.s64(), -1);
  assert.equal(elfReader(new Uint8Array(8).fill(0xff), true, 't').s64big(), -1n);
  // uN: the sizes DWARF addresses and offsets come in.
  const n = elfReader(bytes(1, 2, 0, 3, 0, 0, 0, 4, 0, 0, 0, 0, 0, 0, 0), true, 'test');
  assert.deepEqual([n.uN(1), n.uN(2), n.uN(4), n.uN(8)], [1, 2, 3, 4]);
  assert.throws(() => elfReader(bytes(0, 0, 0), true, 't').uN(3), /unsupported field size 3/);
});

test('8-byte values: exact bigint, number exact below 2^53, and *Exact refusing what a number cannot hold', () => {
  const max = new Uint8Array(8).fill(0xff);
  assert.equal(elfReader(max, true, 't').u64big(), 0xffffffffffffffffn);
  assert.equal(elfReader(max, true, 't').u64(), 2 ** 64); // the -1 tombstone rounds up, still recognisable
  assert.equal(elfReader(bytes(0xfe, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff), true, 't').u64big(), 0xfffffffffffffffen);
  const safe = elfReader(bytes(0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x1f, 0), true, 't');
  assert.equal(safe.u64Exact('size'), Number.MAX_SAFE_INTEGER);
  assert.throws(
    () => elfReader(bytes(0, 0, 0, 0, 0, 0, 0x20, 0), true, 'sec', 0x100).u64Exact('sh_size'),
    (e) => e instanceof ElfFormatError && /in sec at offset 0x100: sh_size 0x20000000000000 is impossibly large/.test(e.message),
  );
  const w = elfReader(bytes(1, 0, 0, 0, 2, 0, 0, 0, 0, 0, 0, 0), true, 't');
  assert.equal(w.wordBig(4), 1n);
  assert.equal(w.wordBig(8), 2n);
  assert.equal(elfReader(bytes(7, 0, 0, 0), true, 't').wordExact(4, 'x'), 7);
});

test('LEB128: the spec example, max u64, negative sleb, one-byte edges, overlong and unterminated', () => {
  const b = bytes(0xe5, 0x8e, 0x26, 0x7f, 0x80, 0x7f, 0xff, 0xff, 0xff, 0xff, 0x10, 0, 0, 0, 0, 0, 0, 0);
  const r = dwarfReader(b, '.debug_test', true);
  assert.equal(r.uleb(), 624485); // the DWARF spec's example
  assert.equal(r.sleb(), -1);
  assert.equal(r.sleb(), -128);
  assert.deepEqual(r.initialLength(), { length: 16, is64: true });
  assert.equal(r.left, 0);
  assert.throws(
    () => r.u8(),
    (e) => e instanceof DwarfFormatError && e.section === '.debug_test' && e.offset === 18,
  );
  // max u64: ten bytes, 0xff… then 0x01; as a number it rounds like u64() does.
  const maxU64 = bytes(0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01);
  const m = elfReader(maxU64, true, 't');
  assert.equal(m.uleb(), 2 ** 64);
  assert.equal(m.left, 0);
  // 2^53 - 1 is exact.
  assert.equal(elfReader(bytes(0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x0f), true, 't').uleb(), Number.MAX_SAFE_INTEGER);
  // Most negative i64 and small negatives.
  assert.equal(elfReader(bytes(0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x7f), true, 't').sleb(), -(2 ** 63));
  assert.equal(elfReader(bytes(0x40), true, 't').sleb(), -64);
  assert.equal(elfReader(bytes(0x3f), true, 't').sleb(), 63);
  assert.equal(elfReader(bytes(0xc0, 0x00), true, 't').sleb(), 64);
  assert.equal(elfReader(bytes(0x7f), true, 't').uleb(), 127);
  assert.equal(elfReader(bytes(0x80, 0x01), true, 't').uleb(), 128);
  // A redundant (overlong but terminated within 10 bytes) encoding is still its value.
  assert.equal(elfReader(bytes(0x81, 0x80, 0x80, 0x00), true, 't').uleb(), 1);
  // Unterminated, and longer than 10 bytes: format errors, not garbage values.
  assert.throws(() => dwarfReader(bytes(0x80, 0x80), 's', true).uleb(), DwarfFormatError);
  assert.throws(() => dwarfReader(bytes(0x80, 0x80), 's', true).sleb(), /LEB128 runs past the end/);
  assert.throws(() => dwarfReader(new Uint8Array(11).fill(0x80), 's', true).uleb(), /longer than 10 bytes/);
  assert.throws(() => dwarfReader(new Uint8Array(11).fill(0x80), 's', true).sleb(), /longer than 10 bytes/);
  assert.throws(() => dwarfReader(new Uint8Array(11).fill(0x80), 's', true).skipLeb(), /longer than 10 bytes/);
  const s = elfReader(bytes(0xe5, 0x8e, 0x26, 0x05), true, 't');
  s.skipLeb();
  assert.equal(s.u8(), 5);
});

test('DWARF offsets and initial lengths: 32-bit, 64-bit, reserved', () => {
  const r32 = elfReader(bytes(0x10, 0, 0, 0, 0x20, 0, 0, 0), true, 't');
  assert.deepEqual(r32.initialLength(), { length: 16, is64: false });
  assert.equal(r32.offset(false), 0x20);
  const r64 = elfReader(bytes(0xff, 0xff, 0xff, 0xff, 0x10, 0, 0, 0, 0, 0, 0, 0, 0x78, 0x56, 0x34, 0x12, 0x01, 0, 0, 0), true, 't');
  assert.deepEqual(r64.initialLength(), { length: 16, is64: true });
  assert.equal(r64.offset(true), 0x1_12345678);
  assert.throws(() => dwarfReader(bytes(0xf0, 0xff, 0xff, 0xff), 's', true).initialLength(), DwarfFormatError);
  assert.throws(() => dwarfReader(bytes(0xff, 0xff, 0xff, 0xff, 1, 2, 3), 's', true).initialLength(), /needs 8 bytes but only 3 remain/);
  const big = dwarfReader(bytes(0xfe, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff), 's', true);
  assert.equal(big.u64big(), 0xfffffffffffffffen);
});

test('truncated reads of every width throw the owner’s error with the region and the absolute offset', () => {
  for (const [read, n] of [
    [(r: ByteReader) => r.u8(), 1],
    [(r: ByteReader) => r.u16(), 2],
    [(r: ByteReader) => r.s16(), 2],
    [(r: ByteReader) => r.u24(), 3],
    [(r: ByteReader) => r.u32(), 4],
    [(r: ByteReader) => r.s32(), 4],
    [(r: ByteReader) => r.u64(), 8],
    [(r: ByteReader) => r.u64big(), 8],
    [(r: ByteReader) => r.s64(), 8],
    [(r: ByteReader) => r.bytes(8), 8],
  ] as const) {
    const r = elfReader(new Uint8Array(n as number), true, '.note.test', 0x1000);
    r.skip(1);
    assert.throws(
      () => read(r),
      (e) =>
        e instanceof ElfFormatError &&
        e.where === '.note.test' &&
        e.offset === 0x1001 &&
        new RegExp(`needs ${n} bytes? but only ${(n as number) - 1} remain`).test(e.message),
      `${read.toString()}`,
    );
    assert.equal(r.pos, 1, 'a failed read does not move the cursor');
  }
  // A window ends reads before the buffer does; sub-windows must stay inside it.
  const w = dwarfReader(bytes(1, 2, 3, 4, 5, 6), '.debug_x', true, 1, 3);
  assert.equal(w.u16(), 0x0302);
  assert.throws(() => w.u8(), DwarfFormatError);
  assert.throws(() => w.sub(2, 4, 'a unit'), /a unit runs past the end of \.debug_x/);
  assert.equal(
    dwarfReader(bytes(1, 2, 3, 4), 's', true)
      .sub(1, 2, 'x')
      .u16(),
    0x0302,
  );
  // Nonsense lengths and positions are errors, not RangeErrors or moves outside.
  assert.throws(() => elfReader(bytes(1), true, 't').skip(-1), ElfFormatError);
  assert.throws(() => elfReader(bytes(1), true, 't').skip(0.5), ElfFormatError);
  assert.throws(() => elfReader(bytes(1), true, 't').bytes(0x7fffffff), /needs 2147483647 bytes/);
  assert.throws(() => elfReader(bytes(1), true, 't').seek(2), /offset 0x2 is outside the 1-byte t/);
  assert.equal(elfReader(bytes(1, 9), true, 't').seek(1).u8(), 9);
});

test('C strings: UTF-8, bounded by the window, skipped without decoding; aligned moves stop at the end', () => {
  const enc = new TextEncoder();
  const r = elfReader(Uint8Array.from([...enc.encode('main'), 0, ...enc.encode('größe'), 0, 0x41]), true, '.strtab');
  assert.equal(r.cstr(), 'main');
  assert.equal(r.cstr(), 'größe');
  assert.throws(
    () => r.cstr(),
    (e) => e instanceof ElfFormatError && /no NUL terminator/.test(e.message),
  );
  const s = dwarfReader(Uint8Array.from([0x61, 0, 0x62, 0]), 's', true, 0, 3);
  s.skipCstr();
  assert.throws(() => s.cstr(), DwarfFormatError); // its NUL lies past the window
  const long = 'x'.repeat(100);
  assert.equal(decodeString(enc.encode(long), 0, 100), long);
  const a = elfReader(new Uint8Array(10), true, 't');
  a.skip(1);
  a.align(4);
  assert.equal(a.pos, 4);
  a.skip(5);
  a.align(8);
  assert.equal(a.pos, 10);
  assert.equal(stringAt(Buffer.from('a\0bc\0'), 2, '.dynstr'), 'bc');
  assert.throws(() => stringAt(bytes(0x61), 0, '.dynstr'), /runs past the end of the string table/);
  assert.throws(() => stringAt(bytes(0), 5, '.dynstr'), /outside the 1-byte string table/);
  assert.equal(hex(255n), '0xff');
});

test('encoded pointers (.eh_frame): formats, pc-relative application, omit, and unsupported ones', () => {
  const SECTION = 0x4000;
  // DW_EH_PE_pcrel|sdata4 at offset 4: -4 relative to 0x4000 + 4.
  const r = elfReader(bytes(0, 0, 0, 0, 0xfc, 0xff, 0xff, 0xff), true, '.eh_frame', 0, 4);
  assert.equal(r.encodedPointer(0x1b, 8, SECTION), SECTION);
  assert.equal(elfReader(bytes(0x10, 0, 0, 0, 0, 0, 0, 0), true, 't').encodedPointer(0x00, 8, SECTION), 0x10);
  assert.equal(elfReader(bytes(0x10, 0, 0, 0), true, 't').encodedPointer(0x00, 4, SECTION), 0x10);
  assert.equal(elfReader(bytes(0xe5, 0x8e, 0x26), true, 't').encodedPointer(0x01, 8, 0), 624485);
  assert.equal(elfReader(bytes(0x7f), true, 't').encodedPointer(0x09, 8, 0), -1);
  assert.equal(elfReader(bytes(0xfe, 0xff), true, 't').encodedPointer(0x0a, 8, 0), -2);
  assert.equal(elfReader(bytes(0xfe, 0xff), true, 't').encodedPointer(0x02, 8, 0), 0xfffe);
  assert.equal(elfReader(bytes(2, 0, 0, 0, 0, 0, 0, 0), true, 't').encodedPointer(0x0c, 8, 0), 2);
  assert.equal(elfReader(bytes(2, 0, 0, 0), true, 't').encodedPointer(0x33, 8, SECTION), 2); // datarel: as read
  assert.equal(elfReader(bytes(), true, 't').encodedPointer(0xff, 8, SECTION), 0);
  assert.throws(() => elfReader(bytes(0, 0, 0, 0), true, 't').encodedPointer(0x05, 8, 0), /unsupported pointer encoding 0x5/);
  assert.throws(() => elfReader(bytes(0, 0, 0, 0), true, 't').encodedPointer(0x23, 8, 0), /unsupported pointer application 0x20/);
  assert.throws(() => elfReader(bytes(0, 0), true, '.eh_frame').encodedPointer(0x1b, 8, 0), /needs 4 bytes/);
});

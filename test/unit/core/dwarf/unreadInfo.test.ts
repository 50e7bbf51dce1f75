// `.debug_info` handed out unread (SectionSource.unread, a file read range by range): the DWARF reader reads a
// unit's header and root DIE to list it, and the whole unit only when a reader over it is made. The sources here
// fill exactly the ranges asked for and leave zeros elsewhere, so a read of anything not asked for first gives a
// different answer than the section read whole, and the test fails.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { SectionSource } from '../../../../src/core/binary/sections';
import { openDwarf, type Dwarf } from '../../../../src/core/dwarf';
import { Sections } from '../../../../src/core/dwarf/sections';
import type { ByteReader } from '../../../../src/core/binary/byteReader';
import { findAbbrev, refersOutside } from '../../../../src/core/dwarf/abbrev';
import { A, T, assemble, int, subprogram, uleb, type DieSpec } from '../../../helpers/dwarfAsm';
import { fixtureOrSkip } from '../../../helpers/fixtures';
import { sectionsOf } from './objcopySections';

const BY_RANGE = ['.debug_info', '.debug_loclists', '.debug_rnglists', '.debug_loc', '.debug_ranges'];

/**
 * `src` with .debug_info and the list sections unread: zeroed copies, filled range by range from the real bytes;
 * `filled` counts a section's bytes read.
 */
function unreadInfo(src: SectionSource): SectionSource & { filled: (name?: string) => number } {
  const copies = new Map<string, { copy: Uint8Array; have: Uint8Array; real: Uint8Array }>();
  for (const n of BY_RANGE) {
    const real = src.section(n);
    if (real) copies.set(n, { real, copy: new Uint8Array(real.length), have: new Uint8Array(real.length) });
  }
  return {
    section: (n) => (copies.has(n) ? assert.fail(`${n} read whole`) : src.section(n)),
    unread: (n) => {
      const c = copies.get(n);
      return (
        c && {
          bytes: c.copy,
          ensure: (start: number, end: number) => {
            end = Math.min(end, c.real.length);
            c.copy.set(c.real.subarray(start, end), start);
            c.have.fill(1, start, end);
          },
        }
      );
    },
    littleEndian: src.littleEndian,
    addressSize: src.addressSize,
    filled: (n = '.debug_info') => copies.get(n)?.have.reduce((a, b) => a + b, 0) ?? 0,
  };
}

const described = (dw: Dwarf) =>
  JSON.stringify({
    units: dw.units().map((u) => [u.offset, u.end, u.name, u.compDir, u.stmtList, u.language, u.producer, u.lowPc]),
    stay: dw.referencesStayInUnits(),
    functions: dw.functions(),
    lines: dw.lineTables().map((t) => [t.files, Array.from(t.rows.address), Array.from(t.rows.line)]),
    types: dw.functions().flatMap((f) => f.params.map((p) => dw.typeName(p.typeOffset))),
    // Location lists (and their views) and range lists, read where they are.
    locations: dw
      .functions()
      .flatMap((f) => (f.entryPc === undefined ? [] : f.params.map((p) => dw.locationFacts(p.dieOffset, f.entryPc!)))),
    ranges: dw.functions().flatMap((f) => f.copies.map((c) => dw.codeRangesOf(c.dieOffset))),
  });

test('a fixture read unit by unit gives the units, functions, types and line tables read whole', async (t) => {
  for (const name of ['calls-O2', 'cpp-O2', 'many-O2', 'calls-O0-dwarf4', 'calls-O2-dwarf4', 'sites'] as const) {
    const fx = await fixtureOrSkip(t, name);
    if (!fx) return;
    const whole = sectionsOf(fx.path);
    const lazy = unreadInfo(whole);
    assert.equal(described(openDwarf(lazy, 'x86_64')), described(openDwarf(whole, 'x86_64')), name);
  }
});

/** `n` units, each with a root named by `rootName(i)` and functions that make the unit `pad` bytes long or so. */
function units(n: number, rootName: (i: number) => string, pad: number): SectionSource {
  const infos: Uint8Array[] = [];
  const abbrevs: Uint8Array[] = [];
  for (let i = 0; i < n; i++) {
    const children: DieSpec[] = [int()];
    for (let k = 0; k * 64 < pad; k++) children.push(subprogram(`f${i}_${k}`, BigInt(0x1000 + i * 0x10000 + k * 16), 16, [['a', 'int']]));
    const a = assemble({
      tag: T.compile_unit,
      attrs: [
        [A.name, { str: rootName(i) }],
        [A.language, { data1: 0x0c }],
      ],
      children,
    });
    const info = Uint8Array.from(a.info);
    const at = abbrevs.reduce((s, b) => s + b.length, 0);
    new DataView(info.buffer).setUint32(6, at, true); // debug_abbrev_offset
    infos.push(info);
    abbrevs.push(a.abbrev);
  }
  const cat = (xs: Uint8Array[]) => Uint8Array.from(xs.flatMap((x) => Array.from(x)));
  const m = new Map([
    ['.debug_info', cat(infos)],
    ['.debug_abbrev', cat(abbrevs)],
  ]);
  return { section: (s) => m.get(s), littleEndian: true, addressSize: 8 };
}

test('listing the units reads their headers and root DIEs only; a unit is read whole when its DIEs are', () => {
  const whole = units(6, (i) => `u${i}.c`, 20000);
  const info = whole.section('.debug_info')!;
  const lazy = unreadInfo(whole);
  const dw = openDwarf(lazy, 'x86_64');
  const all = dw.units();
  assert.equal(all.length, 6);
  assert.deepEqual(
    all.map((u) => u.name),
    ['u0.c', 'u1.c', 'u2.c', 'u3.c', 'u4.c', 'u5.c'],
  );
  assert.ok(dw.referencesStayInUnits());
  assert.ok(lazy.filled() < 6 * 2200, `headers and roots: ${lazy.filled()} of ${info.length} bytes`);
  // The functions of one unit read that unit alone.
  const third = all[2];
  const fns = dw.functions([third]);
  assert.deepEqual(
    fns.slice(0, 2).map((f) => f.name),
    ['f2_0', 'f2_1'],
  );
  assert.ok(lazy.filled() < third.end - third.offset + 6 * 2200);
  const wholeDw = openDwarf(whole, 'x86_64');
  assert.deepEqual(
    fns.map((f) => [f.name, f.entryPc, f.params.map((p) => wholeDw.typeName(p.typeOffset))]),
    wholeDw.functions([wholeDw.units()[2]]).map((f) => [f.name, f.entryPc, f.params.map((p) => wholeDw.typeName(p.typeOffset))]),
  );
});

test('a root DIE larger than the bytes first read for it is read again from the whole unit', () => {
  const long = (i: number) => `${'d/'.repeat(3000)}long${i}.c`;
  const whole = units(3, long, 5000);
  const lazy = unreadInfo(whole);
  const dw = openDwarf(lazy, 'x86_64');
  assert.deepEqual(
    dw.units().map((u) => u.name),
    [long(0), long(1), long(2)],
  );
  assert.equal(described(dw), described(openDwarf(whole, 'x86_64')));
});

test('a damaged root DIE is refused as when the section is read whole', () => {
  const whole = units(2, (i) => `u${i}.c`, 5000);
  const info = Uint8Array.from(whole.section('.debug_info')!);
  info[11] = 0x7f; // the first unit's root abbreviation code: not in its table
  const damaged: SectionSource = { ...whole, section: (n) => (n === '.debug_info' ? info : whole.section(n)) };
  const message = (src: SectionSource) => {
    try {
      openDwarf(src, 'x86_64').units();
    } catch (e) {
      return (e as Error).message;
    }
    return 'no error';
  };
  assert.match(message(damaged), /unknown abbreviation code 127/);
  assert.equal(message(unreadInfo(damaged)), message(damaged));
});

/** An abbreviation table: [code, tag, children, [attr, form, implicit?]…] entries. */
function table(entries: Array<[number, number, number, Array<[number, number, number?]>]>): Uint8Array {
  const out: number[] = [];
  for (const [code, tag, children, attrs] of entries) {
    uleb(out, code);
    uleb(out, tag);
    out.push(children);
    for (const [at, form, implicit] of attrs) {
      uleb(out, at);
      uleb(out, form);
      if (form === 0x21) out.push(implicit! & 0x7f); // implicit_const: one SLEB byte here
    }
    out.push(0, 0);
  }
  out.push(0);
  return Uint8Array.from(out);
}

test('an abbreviation is found, and a cross-unit form seen, by reading the table without building it', () => {
  const enc = { version: 5, is64: false, addrSize: 8 };
  const plain: Array<[number, number, number, Array<[number, number, number?]>]> = [
    // An implicit_const whose value is DW_FORM_ref_addr's number: a value, not a form.
    [
      1,
      T.base_type,
      0,
      [
        [A.name, 0x08],
        [A.byte_size, 0x21, 0x10],
      ],
    ],
    [
      9,
      T.compile_unit,
      1,
      [
        [A.name, 0x08],
        [A.language, 0x0b],
      ],
    ],
  ];
  const t = table(plain);
  const root = findAbbrev(t, 0, 9, enc, true)!;
  assert.deepEqual(
    [root.code, root.tag, root.hasChildren, root.attrs, root.forms],
    [9, T.compile_unit, true, [A.name, A.language], [0x08, 0x0b]],
  );
  assert.equal(findAbbrev(t, 0, 4, enc, true), undefined);
  assert.equal(refersOutside(t, 0, true), false);
  for (const form of [0x10 /* ref_addr */, 0x20 /* ref_sig8 */, 0x1f20 /* GNU_ref_alt */, 0x16 /* indirect */]) {
    const cross = table([...plain, [3, T.subprogram, 0, [[A.type, form]]]]);
    assert.equal(refersOutside(cross, 0, true), true, `form 0x${form.toString(16)} in the last abbreviation`);
    // findAbbrev reads the whole table and says the same.
    const again = Uint8Array.from(cross);
    assert.equal(findAbbrev(again, 0, 1, enc, true)?.tag, T.base_type);
    assert.equal(refersOutside(again, 0, true), true);
    // A second table after the first is its own.
    const two = Uint8Array.from([...t, ...cross]);
    assert.equal(refersOutside(two, 0, true), false);
    assert.equal(refersOutside(two, t.length, true), true);
  }
  assert.throws(() => refersOutside(t.subarray(0, t.length - 4), 0, true), /LEB128 runs past the end|needs 1 byte/);
});

test('a list read where it is: a read past the first bytes is made again over more, up to the whole section', () => {
  const bytes = Uint8Array.from({ length: 5000 }, (_v, i) => (i % 200) + 1);
  const lists = new Map([['.debug_loclists', bytes]]);
  const whole: SectionSource = { section: (n) => lists.get(n), littleEndian: true, addressSize: 8 };
  const lazy = unreadInfo(whole);
  const dw = new Sections(lazy, false, ['.debug_loclists']);
  // Reads until a byte of 200: from 100 on, 100 bytes; from 3000, past the first 16 (and 256) bytes read.
  const untilLast = (r: ByteReader) => {
    const start = r.pos;
    while (r.u8() !== 200);
    return r.pos - start;
  };
  assert.equal(dw.readAt('.debug_loclists', 100, untilLast, 16), 100);
  assert.equal(lazy.filled('.debug_loclists'), 256, 'two runs: 16 bytes, then 256');
  assert.equal(dw.readAt('.debug_loclists', 3001, untilLast, 16), 199);
  // A read that fails over the whole section fails as it does there.
  const tooFar = (r: ByteReader) => r.skip(10000);
  const err = (f: () => unknown) => {
    try {
      f();
    } catch (e) {
      return (e as Error).message;
    }
    return 'none';
  };
  assert.equal(
    err(() => dw.readAt('.debug_loclists', 10, tooFar, 16)),
    err(() => tooFar(new Sections(whole).reader('.debug_loclists', 10))),
  );
  assert.match(
    err(() => dw.readAt('.debug_loclists', 9999, untilLast)),
    /outside the 5000-byte/,
  );
  // readerOver reads the range it is given; reader() the whole section.
  const over = dw.readerOver('.debug_loclists', 4000, 4010);
  assert.deepEqual(Array.from(over.bytes(10)), Array.from(bytes.subarray(4000, 4010)));
  assert.ok(lazy.filled('.debug_loclists') < 5000);
  assert.equal(dw.reader('.debug_loclists', 4990).u8(), bytes[4990]);
  assert.equal(lazy.filled('.debug_loclists'), 5000);
});

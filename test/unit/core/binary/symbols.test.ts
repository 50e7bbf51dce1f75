// The functions a binary's symbol tables name, as `probelens functions` lists them: defined functions and
// ifuncs only (not imports, objects or nameless entries), aliases grouped by address with the largest size,
// and a string table the header does not point at refused with a message naming the section.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { RawSection } from '../../../../src/core/binary/elfHeader';
import { checkStrtab, groupSymbols, readFunctionSymbols, type FunctionSymbol } from '../../../../src/core/binary/symbols';
import { funcSymbol } from '../../../helpers/symbols';

const STT_OBJECT = 1;
const STT_FUNC = 2;
const STT_GNU_IFUNC = 10;
const GLOBAL = 1;
const WEAK = 2;
const LOCAL = 0;

interface Sym {
  name: string;
  type: number;
  bind: number;
  shndx: number;
  value: bigint;
  size: bigint;
}

function section(name: string, index: number, link = 0): RawSection {
  return { index, name, nameOffset: 0, type: 2, flags: 0n, addr: 0n, offset: 0x1000, size: 0, link, info: 0, addralign: 8n, entsize: 999n };
}

/** A symbol table (entry 0 the null symbol) and its string table, as a linker writes them. */
function tables(syms: Sym[], elfClass: 32 | 64, littleEndian = true): { bytes: Uint8Array; strtab: Uint8Array } {
  const names: string[] = [''];
  const offsets = syms.map((s) => {
    const off = names.join('\0').length + 1;
    names.push(s.name);
    return s.name === '' ? 0 : off;
  });
  const strtab = Buffer.from(names.join('\0') + '\0', 'latin1');
  const size = elfClass === 64 ? 24 : 16;
  const b = Buffer.alloc(size * (syms.length + 1));
  const u16 = (v: number, at: number) => (littleEndian ? b.writeUInt16LE(v, at) : b.writeUInt16BE(v, at));
  const u32 = (v: number, at: number) => (littleEndian ? b.writeUInt32LE(v, at) : b.writeUInt32BE(v, at));
  const u64 = (v: bigint, at: number) => (littleEndian ? b.writeBigUInt64LE(v, at) : b.writeBigUInt64BE(v, at));
  syms.forEach((s, i) => {
    const at = size * (i + 1);
    const info = (s.bind << 4) | s.type;
    u32(offsets[i], at);
    if (elfClass === 64) {
      b[at + 4] = info;
      u16(s.shndx, at + 6);
      u64(s.value, at + 8);
      u64(s.size, at + 16);
    } else {
      u32(Number(s.value), at + 4);
      u32(Number(s.size), at + 8);
      b[at + 12] = info;
      u16(s.shndx, at + 14);
    }
  });
  return { bytes: b, strtab };
}

const fn = (name: string, value: bigint, size: bigint, bind = GLOBAL, type = STT_FUNC, shndx = 14): Sym => ({
  name,
  type,
  bind,
  shndx,
  value,
  size,
});

const SYMS: Sym[] = [
  fn('main', 0x1139n, 0x2an),
  fn('helper', 0x1120n, 0x19n, LOCAL),
  fn('memcpy', 0x1200n, 0x10n, GLOBAL, STT_GNU_IFUNC),
  fn('puts', 0n, 0n, GLOBAL, STT_FUNC, 0), // an import: no code here
  fn('counter', 0x4010n, 4n, GLOBAL, STT_OBJECT, 25), // data, not a function
  fn('abs_fn', 0x10n, 0n, GLOBAL, STT_FUNC, 0xfff1), // SHN_ABS
  fn('', 0x1300n, 4n), // nameless
  fn('weak_alias', 0x1139n, 0x30n, WEAK),
];

test('defined functions and ifuncs are read from 64-bit and 32-bit tables alike, whatever sh_entsize says', () => {
  for (const [elfClass, littleEndian] of [
    [64, true],
    [32, true],
    [64, false],
  ] as const) {
    const { bytes, strtab } = tables(SYMS, elfClass, littleEndian);
    const syms = readFunctionSymbols(section('.symtab', 30, 31), bytes, strtab, '.strtab', elfClass, littleEndian);
    assert.deepEqual(
      syms.map((s) => [s.name, s.address, s.size, s.binding, s.kind, s.sectionIndex, s.table]),
      [
        ['main', 0x1139n, 0x2an, 'global', 'func', 14, '.symtab'],
        ['helper', 0x1120n, 0x19n, 'local', 'func', 14, '.symtab'],
        ['memcpy', 0x1200n, 0x10n, 'global', 'ifunc', 14, '.symtab'],
        ['weak_alias', 0x1139n, 0x30n, 'weak', 'func', 14, '.symtab'],
      ],
      `ELF${elfClass} ${littleEndian ? 'LE' : 'BE'}`,
    );
  }
  const { bytes, strtab } = tables([fn('exported', 0x2000n, 8n)], 64);
  assert.equal(readFunctionSymbols(section('.dynsym', 5, 6), bytes, strtab, '.dynstr', 64, true)[0].table, '.dynsym');
});

test('a name offset outside the string table is an error naming it', () => {
  const { bytes } = tables([fn('main', 0x1139n, 1n)], 64);
  assert.throws(() => readFunctionSymbols(section('.symtab', 30, 31), bytes, Buffer.from('\0'), '.strtab', 64, true), /\.strtab/);
});

test('aliases group by address (sorted), keep the largest size, and a name twice at one address counts once', () => {
  const sym = (name: string, address: bigint, size: bigint, table: FunctionSymbol['table'] = '.symtab'): FunctionSymbol => ({
    name,
    address,
    size,
    binding: 'global',
    kind: 'func',
    sectionIndex: 14,
    table,
  });
  const { symbols, groups } = groupSymbols([
    [sym('malloc', 0x9000n, 0x40n), sym('main', 0x1139n, 0x2an), sym('__libc_malloc', 0x9000n, 0x80n)],
    [sym('malloc', 0x9000n, 0x40n, '.dynsym'), sym('big', 2n ** 60n + 1n, 1n), sym('big_before', 2n ** 60n, 1n)],
  ]);
  assert.deepEqual(
    groups.map((g) => [g.address, g.size, g.symbols.map((s) => s.name)]),
    [
      [0x1139n, 0x2an, ['main']],
      [0x9000n, 0x80n, ['malloc', '__libc_malloc']],
      [2n ** 60n, 1n, ['big_before']],
      [2n ** 60n + 1n, 1n, ['big']],
    ],
  );
  assert.deepEqual(
    symbols.map((s) => `${s.name}@${s.table}`),
    ['main@.symtab', 'malloc@.symtab', '__libc_malloc@.symtab', 'big_before@.symtab', 'big@.symtab'],
  );
});

test('the string table is the section sh_link names; none is an error naming the symbol table', () => {
  const sections = [section('', 0), section('.strtab', 1), section('.symtab', 2, 1)];
  assert.equal(checkStrtab(sections, sections[2]).name, '.strtab');
  assert.throws(() => checkStrtab(sections, section('.symtab', 2, 0)), /malformed ELF in \.symtab: sh_link 0 names no string table/);
  assert.throws(() => checkStrtab(sections, section('.dynsym', 2, 9)), /\.dynsym: sh_link 9/);
});

test('symbols are ordered by address, equal addresses in table order, whatever their high words (a kernel, many, none)', () => {
  let seed = 7;
  const rand = (n: number) => ((seed = (seed * 1103515245 + 12345) % 2 ** 31) % n) >>> 0;
  const sym = (i: number, address: bigint): FunctionSymbol => funcSymbol(`f${i}`, address);
  const kernel = (_i: number) => 0xffffffff81000000n + BigInt(rand(4096) * 16);
  const mixed = (i: number) => (i % 3 ? kernel(i) : BigInt(0x400000 + rand(512) * 8));
  const many = (_i: number) => (BigInt(rand(20)) << 32n) + BigInt(rand(64));
  for (const make of [kernel, mixed, many]) {
    const all = Array.from({ length: 3000 }, (_v, i) => sym(i, make(i)));
    const want = all
      .map((s, i) => ({ s, i }))
      .sort((a, b) => (a.s.address < b.s.address ? -1 : a.s.address > b.s.address ? 1 : a.i - b.i))
      .map((x) => x.s);
    // Group by address, first name of each address in table order (names are unique here).
    const { symbols } = groupSymbols([all.slice(0, 1000), all.slice(1000)]);
    assert.deepEqual(
      symbols.map((s) => s.name),
      want.map((s) => s.name),
    );
  }
});

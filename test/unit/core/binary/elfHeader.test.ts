import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { test } from 'node:test';
import { elfKind, hasElfMagic, readElfHeader, readProgramHeader, readSectionHeader } from '../../../../src/core/binary/elfHeader';
import { ElfFormatError } from '../../../../src/core/binary/errors';
import { fixtureOrSkip } from '../../../helpers/fixtures';

test('header, program headers and section headers read as readelf reads them', async (t) => {
  const f = await fixtureOrSkip(t, 'calls-O2');
  if (!f) return;
  const data = readFileSync(f.path);
  const h = readElfHeader(data);
  const hdr = execFileSync('readelf', ['-hW', f.path], { encoding: 'utf8' });
  const field = (name: string) => new RegExp(`^\\s*${name}:\\s*(.*)$`, 'm').exec(hdr)![1].trim();
  assert.equal(h.elfClass, 64);
  assert.equal(h.littleEndian, true);
  assert.equal(`0x${h.entry.toString(16)}`, field('Entry point address'));
  assert.equal(h.phoff, parseInt(field('Start of program headers'), 10));
  assert.equal(h.shoff, parseInt(field('Start of section headers'), 10));
  assert.equal(h.phnum, parseInt(field('Number of program headers'), 10));
  assert.equal(h.shnum, parseInt(field('Number of section headers'), 10));
  assert.equal(h.shstrndx, parseInt(field('Section header string table index'), 10));
  assert.deepEqual(elfKind(data), { type: h.type, machine: 62 });
  assert.match(field('Type'), h.type === 3 ? /^DYN/ : /^EXEC/);

  // readelf -SW: [Nr] Name Type Address Off Size ES Flg Lk Inf Al
  const secRows = execFileSync('readelf', ['-SW', f.path], { encoding: 'utf8' })
    .split('\n')
    .map((l) =>
      /^\s*\[\s*(\d+)\]\s+(\S*)\s+\S+\s+([0-9a-f]{16})\s+([0-9a-f]+)\s+([0-9a-f]+)\s+([0-9a-f]+)\s+\S*\s+(\d+)\s+(\d+)\s+(\d+)$/.exec(l),
    )
    .filter((m) => m !== null);
  assert.equal(secRows.length, h.shnum);
  const names = readSectionHeader(data, h.shoff + h.shstrndx * h.shentsize, h, h.shstrndx);
  for (const m of secRows) {
    const i = Number(m[1]);
    const s = readSectionHeader(data, h.shoff + i * h.shentsize, h, i);
    const name = i === 0 ? '' : data.toString('latin1', names.offset + s.nameOffset, data.indexOf(0, names.offset + s.nameOffset));
    assert.deepEqual(
      [name, s.addr, s.offset, s.size, s.entsize, s.link, s.info, s.addralign],
      [m[2], BigInt(`0x${m[3]}`), parseInt(m[4], 16), parseInt(m[5], 16), BigInt(`0x${m[6]}`), Number(m[7]), Number(m[8]), BigInt(m[9])],
      `section ${i}`,
    );
  }

  // readelf -lW: Type Offset VirtAddr PhysAddr FileSiz MemSiz Flg Align
  const segRows = execFileSync('readelf', ['-lW', f.path], { encoding: 'utf8' })
    .split('\n')
    .map((l) => /^\s+[A-Z_]+\s+0x([0-9a-f]+) 0x([0-9a-f]+) 0x([0-9a-f]+) 0x([0-9a-f]+) 0x([0-9a-f]+) (.{3}) 0x([0-9a-f]+)$/.exec(l))
    .filter((m) => m !== null);
  assert.equal(segRows.length, h.phnum);
  segRows.forEach((m, i) => {
    const p = readProgramHeader(data, h.phoff + i * h.phentsize, h, i);
    const flags = (m[6].includes('R') ? 4 : 0) | (m[6].includes('W') ? 2 : 0) | (m[6].includes('E') ? 1 : 0);
    assert.deepEqual(
      [p.offset, p.vaddr, p.paddr, p.filesz, p.memsz, p.flags, p.align],
      [parseInt(m[1], 16), BigInt(`0x${m[2]}`), BigInt(`0x${m[3]}`), parseInt(m[4], 16), BigInt(`0x${m[5]}`), flags, BigInt(`0x${m[7]}`)],
      `program header ${i}`,
    );
  });
});

/** A 32-bit big-endian header (52 bytes) with one program header (32 bytes) and one section header (40 bytes). */
function elf32be(): Buffer {
  const b = Buffer.alloc(52 + 32 + 40);
  b.set([0x7f, 0x45, 0x4c, 0x46, 1, 2, 1, 0]);
  b.writeUInt16BE(2, 16); // ET_EXEC
  b.writeUInt16BE(20, 18); // PowerPC
  b.writeUInt32BE(1, 20);
  b.writeUInt32BE(0x10000074, 24); // entry
  b.writeUInt32BE(52, 28); // phoff
  b.writeUInt32BE(84, 32); // shoff
  b.writeUInt16BE(52, 40);
  b.writeUInt16BE(32, 42);
  b.writeUInt16BE(1, 44);
  b.writeUInt16BE(40, 46);
  b.writeUInt16BE(1, 48);
  b.writeUInt16BE(0, 50);
  // PT_LOAD: type offset vaddr paddr filesz memsz flags align
  [1, 0, 0x10000000, 0x10000000, 124, 0x2000, 5, 0x10000].forEach((v, i) => b.writeUInt32BE(v, 52 + i * 4));
  // section: name type flags addr offset size link info addralign entsize
  [7, 1, 6, 0x10000074, 0x74, 8, 0, 0, 4, 0].forEach((v, i) => b.writeUInt32BE(v, 84 + i * 4));
  return b;
}

test('a 32-bit big-endian file: every field in its place and byte order', () => {
  const b = elf32be();
  const h = readElfHeader(b);
  assert.deepEqual(
    { ...h },
    {
      elfClass: 32,
      littleEndian: false,
      osabi: 0,
      type: 2,
      machine: 20,
      entry: 0x10000074n,
      phoff: 52,
      shoff: 84,
      phentsize: 32,
      phnum: 1,
      shentsize: 40,
      shnum: 1,
      shstrndx: 0,
    },
  );
  assert.deepEqual(elfKind(b), { type: 2, machine: 20 });
  assert.deepEqual(readProgramHeader(b, 52, h, 0), {
    index: 0,
    type: 1,
    flags: 5,
    offset: 0,
    vaddr: 0x10000000n,
    paddr: 0x10000000n,
    filesz: 124,
    memsz: 0x2000n,
    align: 0x10000n,
  });
  assert.deepEqual(readSectionHeader(b, 84, h, 0), {
    index: 0,
    name: '',
    nameOffset: 7,
    type: 1,
    flags: 6n,
    addr: 0x10000074n,
    offset: 0x74,
    size: 8,
    link: 0,
    info: 0,
    addralign: 4n,
    entsize: 0n,
  });
});

test('not ELF, cut short or damaged: no kind, or an ElfFormatError naming the field', () => {
  assert.equal(hasElfMagic(Buffer.from('#!/bin/sh\n')), false);
  assert.equal(hasElfMagic(Buffer.from([0x7f, 0x45, 0x4c])), false);
  assert.equal(elfKind(Buffer.from('#!/bin/sh\necho hello world\n')), undefined);
  assert.equal(elfKind(elf32be().subarray(0, 19)), undefined);
  const badOrder = elf32be();
  badOrder[5] = 3;
  assert.equal(elfKind(badOrder), undefined);
  assert.throws(
    () => readElfHeader(badOrder),
    (e) => e instanceof ElfFormatError && /unknown byte order 3/.test(e.message),
  );
  const badClass = elf32be();
  badClass[4] = 9;
  assert.throws(() => readElfHeader(badClass), /ELF header at offset 0x4: unknown ELF class 9/);
  assert.throws(() => readElfHeader(elf32be().subarray(0, 10)), /shorter than the 16-byte identification/);
  assert.throws(() => readElfHeader(elf32be().subarray(0, 40)), /shorter than the 52-byte ELF header/);
  const h = readElfHeader(elf32be());
  assert.throws(
    () => readProgramHeader(elf32be().subarray(0, 60), 52, h, 0, 0),
    (e) => e instanceof ElfFormatError && e.where === 'program header 0' && /needs 4 bytes but only 0 remain/.test(e.message),
  );
  // Offsets a number cannot hold are refused, with the field's name.
  const huge = Buffer.alloc(64);
  huge.set([0x7f, 0x45, 0x4c, 0x46, 2, 1, 1, 0]);
  huge.writeBigUInt64LE(1n << 60n, 40);
  assert.throws(() => readElfHeader(huge), /e_shoff 0x1000000000000000 is impossibly large/);
  const sh = Buffer.alloc(64);
  sh.writeBigUInt64LE(1n << 60n, 32);
  assert.throws(
    () => readSectionHeader(sh, 0, { elfClass: 64, littleEndian: true }, 3, 0x1000),
    /section header table at offset 0x1020: sh_size of section 3 0x1000000000000000 is impossibly large/,
  );
});

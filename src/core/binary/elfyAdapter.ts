// The only module that touches elfy. elfy parses the ELF header, program headers and section headers, but
// (1.0.0) it reads 64-bit sh_addralign/sh_entsize two bytes too early (offsets 46/54 instead of 48/56), turns
// 64-bit words into doubles (a + b·2^32, inexact past 2^53), asserts/throws TypeErrors on a bad e_shstrndx,
// and trusts e_phentsize/e_shentsize. So: we validate the tables' bounds before elfy sees the file (elfy then
// cannot throw on them), keep elfy's answers for the fields it reads right (section names, sh_link, sh_info,
// table counts, class, byte order), and re-read every word-sized field ourselves as an exact bigint, with the
// entry sizes fixed by the ELF class. Replacing elfy means rewriting this file only.
import { parse as elfyParse } from 'elfy';
import { elfReader } from './byteReader';
import { ElfFormatError } from './errors';

export const SHT_NOBITS = 8;
export const SHT_NOTE = 7;
export const SHT_SYMTAB = 2;
export const SHT_DYNSYM = 11;
export const SHT_STRTAB = 3;
export const SHF_ALLOC = 0x2n;
export const SHF_EXECINSTR = 0x4n;
export const SHF_COMPRESSED = 0x800n;
export const PT_LOAD = 1;
export const PT_NOTE = 4;

export interface RawElfHeader {
  elfClass: 32 | 64;
  littleEndian: boolean;
  osabi: number;
  /** e_type: 1 REL, 2 EXEC, 3 DYN, 4 CORE. */
  type: number;
  /** e_machine: 62 x86-64, 183 AArch64… */
  machine: number;
  entry: bigint;
}

export interface RawSection {
  index: number;
  name: string;
  type: number;
  flags: bigint;
  addr: bigint;
  /** File offset; meaningful only when type !== SHT_NOBITS. Not yet checked against the file size. */
  offset: number;
  /** Size in the file (or in memory for SHT_NOBITS). Not yet checked against the file size. */
  size: number;
  link: number;
  info: number;
  addralign: bigint;
  entsize: bigint;
}

export interface RawSegment {
  index: number;
  type: number;
  /** PF_X 1, PF_W 2, PF_R 4. */
  flags: number;
  offset: number;
  vaddr: bigint;
  paddr: bigint;
  filesz: number;
  memsz: bigint;
  align: bigint;
}

export interface RawElf {
  header: RawElfHeader;
  sections: RawSection[];
  segments: RawSegment[];
}

const EHDR_SIZE = { 32: 52, 64: 64 } as const;
const PHDR_SIZE = { 32: 32, 64: 56 } as const;
const SHDR_SIZE = { 32: 40, 64: 64 } as const;

/** Parses the ELF container. `data` must start with the ELF magic (the caller checks, to raise NotElfError). */
export function parseElfContainer(data: Buffer): RawElf {
  if (data.length < 16) throw new ElfFormatError('ELF header', 0, 'file shorter than the 16-byte identification');
  const cls = data[4] === 1 ? 32 : data[4] === 2 ? 64 : undefined;
  if (cls === undefined) throw new ElfFormatError('ELF header', 4, `unknown ELF class ${data[4]}`);
  if (data[5] !== 1 && data[5] !== 2) throw new ElfFormatError('ELF header', 5, `unknown byte order ${data[5]}`);
  const le = data[5] === 1;
  if (data.length < EHDR_SIZE[cls]) throw new ElfFormatError('ELF header', 0, `file shorter than the ${EHDR_SIZE[cls]}-byte ELF header`);
  const wsize = cls === 64 ? 8 : 4;

  const h = elfReader(data.subarray(0, EHDR_SIZE[cls]), le, 'ELF header', 0, 16);
  const type = h.u16();
  const machine = h.u16();
  h.u32(); // e_version
  const entry = h.wordBig(wsize);
  const phoff = h.wordExact(wsize, 'e_phoff');
  const shoff = h.wordExact(wsize, 'e_shoff');
  h.u32(); // e_flags
  h.u16(); // e_ehsize
  const phentsize = h.u16();
  const phnum = h.u16();
  const shentsize = h.u16();
  const shnum = h.u16();
  const shstrndx = h.u16();

  checkTable(data, 'program header table', phoff, phnum, phentsize, PHDR_SIZE[cls]);
  checkTable(data, 'section header table', shoff, shnum, shentsize, SHDR_SIZE[cls]);
  if (phnum === 0xffff) throw new ElfFormatError('ELF header', 0, 'extended program header numbering (PN_XNUM) is not supported');
  if (shoff !== 0 && shnum === 0)
    throw new ElfFormatError('ELF header', 0, 'extended section numbering (more than 65279 sections) is not supported');
  if (shnum > 0) {
    if (shstrndx === 0 || shstrndx >= shnum)
      throw new ElfFormatError('ELF header', 0, `section-name table index ${shstrndx} is not one of the ${shnum} sections`);
    const shstrType = elfReader(data, le, 'section header table', 0, shoff + shstrndx * shentsize + 4).u32();
    if (shstrType !== SHT_STRTAB)
      throw new ElfFormatError(
        'section header table',
        shoff + shstrndx * shentsize,
        `section-name table (index ${shstrndx}) is not a string table`,
      );
  }

  // Without sections elfy has nothing to name and trips over the missing section-name table: the program
  // headers are read below either way.
  if (shnum === 0)
    return { header: { elfClass: cls, littleEndian: le, osabi: data[7], type, machine, entry }, sections: [], segments: readSegments() };
  let parsed;
  try {
    parsed = elfyParse(data);
  } catch (e) {
    // Unreachable after the checks above unless elfy changes; kept typed so callers still see one error kind.
    throw new ElfFormatError('ELF container', undefined, `elfy could not parse it: ${(e as Error).message}`);
  }
  if (parsed.body.sections.length !== shnum || parsed.body.programs.length !== phnum) {
    throw new ElfFormatError('ELF container', undefined, 'elfy read a different number of headers than the ELF header declares');
  }

  const sections: RawSection[] = parsed.body.sections.map((s, index) => {
    const c = elfReader(data, le, 'section header table', 0, shoff + index * shentsize + 4);
    const type = c.u32();
    const flags = c.wordBig(wsize);
    const addr = c.wordBig(wsize);
    const offset = c.wordExact(wsize, `sh_offset of section ${index}`);
    const size = c.wordExact(wsize, `sh_size of section ${index}`);
    c.skip(8); // sh_link, sh_info: elfy's values are right
    const addralign = c.wordBig(wsize);
    const entsize = c.wordBig(wsize);
    return { index, name: s.name, type, flags, addr, offset, size, link: s.link, info: s.info, addralign, entsize };
  });

  return { header: { elfClass: cls, littleEndian: le, osabi: data[7], type, machine, entry }, sections, segments: readSegments() };

  function readSegments(): RawSegment[] {
    return Array.from({ length: phnum }, (_p, index) => readSegment(index));
  }

  function readSegment(index: number): RawSegment {
    const c = elfReader(data, le, `program header ${index}`, 0, phoff + index * phentsize);
    const type = c.u32();
    if (cls === 64) {
      const flags = c.u32();
      const offset = c.u64Exact('p_offset');
      const vaddr = c.u64big();
      const paddr = c.u64big();
      const filesz = c.u64Exact('p_filesz');
      const memsz = c.u64big();
      const align = c.u64big();
      return { index, type, flags, offset, vaddr, paddr, filesz, memsz, align };
    }
    const offset = c.u32();
    const vaddr = BigInt(c.u32());
    const paddr = BigInt(c.u32());
    const filesz = c.u32();
    const memsz = BigInt(c.u32());
    const flags = c.u32();
    const align = BigInt(c.u32());
    return { index, type, flags, offset, vaddr, paddr, filesz, memsz, align };
  }
}

function checkTable(data: Buffer, what: string, off: number, num: number, entsize: number, minEntsize: number): void {
  if (num === 0) return;
  if (entsize < minEntsize)
    throw new ElfFormatError('ELF header', 0, `${what} entry size ${entsize} is smaller than the ${minEntsize} bytes of this ELF class`);
  if (off + num * entsize > data.length) {
    throw new ElfFormatError(what, off, `${num} entries of ${entsize} bytes run past the end of the ${data.length}-byte file`);
  }
}

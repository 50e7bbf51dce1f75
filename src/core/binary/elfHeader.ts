// The ELF header and the entries of its program and section header tables, read in one place. The full parse
// (elfyAdapter), the kind check before it (binaryImage), workspace discovery, the cache key (index/identity) and
// the worker's size budget (index/worker/limits) all ask this module; only the first reads the whole file, the
// others hand it the few bytes they read from disk. Reference: the System V gABI, chapter 4.
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
export const ET_REL = 1;
export const ET_EXEC = 2;
export const ET_DYN = 3;
export const ET_CORE = 4;
export const EM_X86_64 = 62;
export const EM_AARCH64 = 183;

/** Sizes of the header and of one table entry, by ELF class. */
export const EHDR_SIZE = { 32: 52, 64: 64 } as const;
export const PHDR_SIZE = { 32: 32, 64: 56 } as const;
export const SHDR_SIZE = { 32: 40, 64: 64 } as const;

/** What reading a table entry needs to know: the class and the byte order. */
export interface ElfIdent {
  elfClass: 32 | 64;
  littleEndian: boolean;
}

export interface ElfHeader extends ElfIdent {
  osabi: number;
  /** e_type: 1 REL, 2 EXEC, 3 DYN, 4 CORE. */
  type: number;
  /** e_machine: 62 x86-64, 183 AArch64… */
  machine: number;
  entry: bigint;
  phoff: number;
  shoff: number;
  phentsize: number;
  phnum: number;
  shentsize: number;
  shnum: number;
  shstrndx: number;
}

/** One section header; offsets and sizes are not yet checked against the file size. */
export interface RawSection {
  index: number;
  name: string;
  /** sh_name: the name's offset in the section-name table. */
  nameOffset: number;
  type: number;
  flags: bigint;
  addr: bigint;
  /** File offset; meaningful only when type !== SHT_NOBITS. */
  offset: number;
  /** Size in the file (or in memory for SHT_NOBITS). */
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

/** True when the bytes begin with the ELF magic number, \x7fELF. */
export function hasElfMagic(data: Uint8Array): boolean {
  return data.length >= 4 && data[0] === 0x7f && data[1] === 0x45 && data[2] === 0x4c && data[3] === 0x46;
}

/**
 * e_type and e_machine from a file's first 20 bytes, before anything else is checked; undefined when the bytes
 * are not an ELF identification (no magic, unknown byte order, too short).
 */
export function elfKind(data: Uint8Array): { type: number; machine: number } | undefined {
  if (data.length < 20 || !hasElfMagic(data) || (data[5] !== 1 && data[5] !== 2)) return undefined;
  const c = elfReader(data, data[5] === 1, 'ELF header', 0, 16);
  return { type: c.u16(), machine: c.u16() };
}

/**
 * The ELF header at the start of `data` (the magic is the caller's to check, to raise NotElfError). Throws
 * ElfFormatError for an unknown class or byte order, a header cut short, or an offset past 2^53.
 */
export function readElfHeader(data: Uint8Array): ElfHeader {
  if (data.length < 16) throw new ElfFormatError('ELF header', 0, 'file shorter than the 16-byte identification');
  const elfClass = data[4] === 1 ? 32 : data[4] === 2 ? 64 : undefined;
  if (elfClass === undefined) throw new ElfFormatError('ELF header', 4, `unknown ELF class ${data[4]}`);
  if (data[5] !== 1 && data[5] !== 2) throw new ElfFormatError('ELF header', 5, `unknown byte order ${data[5]}`);
  const littleEndian = data[5] === 1;
  if (data.length < EHDR_SIZE[elfClass])
    throw new ElfFormatError('ELF header', 0, `file shorter than the ${EHDR_SIZE[elfClass]}-byte ELF header`);
  const wsize = elfClass === 64 ? 8 : 4;
  const h = elfReader(data.subarray(0, EHDR_SIZE[elfClass]), littleEndian, 'ELF header', 0, 16);
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
  return { elfClass, littleEndian, osabi: data[7], type, machine, entry, phoff, shoff, phentsize, phnum, shentsize, shnum, shstrndx };
}

/**
 * Section header `index`, at `at` of `table` (`fileOffset` is where `table` begins in the file, for errors).
 * The name is left empty: it lives in the section-name table, which the caller reads.
 */
export function readSectionHeader(table: Uint8Array, at: number, h: ElfIdent, index: number, fileOffset = 0): RawSection {
  const wsize = h.elfClass === 64 ? 8 : 4;
  const c = elfReader(table, h.littleEndian, 'section header table', fileOffset, at);
  const nameOffset = c.u32();
  const type = c.u32();
  const flags = c.wordBig(wsize);
  const addr = c.wordBig(wsize);
  const offset = c.wordExact(wsize, `sh_offset of section ${index}`);
  const size = c.wordExact(wsize, `sh_size of section ${index}`);
  const link = c.u32();
  const info = c.u32();
  const addralign = c.wordBig(wsize);
  const entsize = c.wordBig(wsize);
  return { index, name: '', nameOffset, type, flags, addr, offset, size, link, info, addralign, entsize };
}

/** Program header `index`, at `at` of `table` (`fileOffset` is where `table` begins in the file, for errors). */
export function readProgramHeader(table: Uint8Array, at: number, h: ElfIdent, index: number, fileOffset = 0): RawSegment {
  const c = elfReader(table, h.littleEndian, `program header ${index}`, fileOffset, at);
  const type = c.u32();
  if (h.elfClass === 64) {
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

// The only module that touches elfy. elfy parses the ELF header, program headers and section headers, but
// (1.0.0) it reads 64-bit sh_addralign/sh_entsize two bytes too early (offsets 46/54 instead of 48/56), turns
// 64-bit words into doubles (a + b·2^32, inexact past 2^53), asserts/throws TypeErrors on a bad e_shstrndx,
// and trusts e_phentsize/e_shentsize. So: we validate the tables' bounds before elfy sees the file (elfy then
// cannot throw on them), keep elfy's section names, and read every header field ourselves (elfHeader.ts), as
// exact bigints where they are words, with the entry sizes fixed by the ELF class. Replacing elfy means
// rewriting this file only.
// Tests: test/unit/core/binary/elfFile.test.ts, test/unit/core/binary/fuzz.test.ts
import { parse as elfyParse } from 'elfy';
import {
  PHDR_SIZE,
  SHDR_SIZE,
  SHT_STRTAB,
  readElfHeader,
  readProgramHeader,
  readSectionHeader,
  type ElfHeader,
  type RawSection,
  type RawSegment,
} from './elfHeader';
import { ElfFormatError } from './errors';

export interface RawElf {
  header: ElfHeader;
  sections: RawSection[];
  segments: RawSegment[];
}

/** Parses the ELF container. `data` must start with the ELF magic (the caller checks, to raise NotElfError). */
export function parseElfContainer(data: Buffer): RawElf {
  const header = readElfHeader(data);
  const { elfClass: cls, phoff, shoff, phentsize, phnum, shentsize, shnum, shstrndx } = header;

  checkTable(data, 'program header table', phoff, phnum, phentsize, PHDR_SIZE[cls]);
  checkTable(data, 'section header table', shoff, shnum, shentsize, SHDR_SIZE[cls]);
  if (phnum === 0xffff) throw new ElfFormatError('ELF header', 0, 'extended program header numbering (PN_XNUM) is not supported');
  if (shoff !== 0 && shnum === 0)
    throw new ElfFormatError('ELF header', 0, 'extended section numbering (more than 65279 sections) is not supported');
  if (shnum > 0) {
    if (shstrndx === 0 || shstrndx >= shnum)
      throw new ElfFormatError('ELF header', 0, `section-name table index ${shstrndx} is not one of the ${shnum} sections`);
    if (readSectionHeader(data, shoff + shstrndx * shentsize, header, shstrndx).type !== SHT_STRTAB)
      throw new ElfFormatError(
        'section header table',
        shoff + shstrndx * shentsize,
        `section-name table (index ${shstrndx}) is not a string table`,
      );
  }

  // Without sections elfy has nothing to name and trips over the missing section-name table: the program
  // headers are read below either way.
  if (shnum === 0) return { header, sections: [], segments: readSegments() };
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

  const sections: RawSection[] = parsed.body.sections.map((s, index) => ({
    ...readSectionHeader(data, shoff + index * shentsize, header, index),
    name: s.name,
  }));

  return { header, sections, segments: readSegments() };

  function readSegments(): RawSegment[] {
    return Array.from({ length: phnum }, (_p, index) => readProgramHeader(data, phoff + index * phentsize, header, index));
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

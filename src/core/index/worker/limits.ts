// How much time and memory indexing one binary may take. Both scale with the size of its DWARF (the parts the
// index decodes in full: .debug_info and .debug_line), from a floor that every small binary gets: PostgreSQL's
// backend indexes cold in ≈ 3.5 s with a ≈ 365 MiB peak, far inside what it is given here.
// The size is read from the section headers alone (positioned reads, never the whole file), so a hostile file
// cannot make the estimate itself expensive; a separate debug file is measured where gdb would look for it.
// Tests: test/unit/cli/messages.test.ts, test/unit/core/index/worker/client.test.ts, test/unit/cli/limits.test.ts
import type { FileHandle } from 'node:fs/promises';
import { totalmem } from 'node:os';
import { dirname, join } from 'node:path';
import { fileDecompressionLimit, maxDecompressedSize } from '../../binary/compressed';
import {
  SHDR_SIZE,
  SHF_COMPRESSED,
  SHT_NOBITS,
  hasElfMagic,
  readElfHeader,
  readSectionHeader,
  type RawSection,
} from '../../binary/elfHeader';
import { openRegularFile } from '../../binary/regularFile';

export const MIN_TIME_LIMIT_SECONDS = 120;
export const TIME_SECONDS_PER_DWARF_MIB = 3;
export const MIN_MEMORY_LIMIT_MB = 1024;
export const MEMORY_MB_PER_DWARF_MIB = 64;
/** The longest a timer can wait (setTimeout's 2^31−1 ms): a larger limit would fire at once, not never. */
export const MAX_TIME_LIMIT_SECONDS = Math.floor((2 ** 31 - 1) / 1000);

export interface IndexLimits {
  timeLimitSeconds: number;
  memoryLimitMb: number;
}

/** Where the user raises each limit: a setting in the editor, an environment variable for the CLI. */
export interface LimitNames {
  time: string;
  memory: string;
}

export const CLI_LIMIT_NAMES: LimitNames = { time: 'PROBELENS_INDEX_TIME_LIMIT', memory: 'PROBELENS_INDEX_MEMORY_LIMIT_MB' };
export const EDITOR_LIMIT_NAMES: LimitNames = { time: 'probelens.index.timeLimitSeconds', memory: 'probelens.index.memoryLimitMb' };

export function scaledLimits(dwarfBytes: number): IndexLimits {
  const mib = dwarfBytes / (1024 * 1024);
  // Never more than most of the machine: past that the limit would not protect anything.
  const ceiling = Math.max(MIN_MEMORY_LIMIT_MB, Math.floor((totalmem() / (1024 * 1024)) * 0.75));
  return {
    timeLimitSeconds: Math.min(MAX_TIME_LIMIT_SECONDS, Math.max(MIN_TIME_LIMIT_SECONDS, Math.ceil(mib * TIME_SECONDS_PER_DWARF_MIB))),
    memoryLimitMb: Math.min(ceiling, Math.max(MIN_MEMORY_LIMIT_MB, Math.ceil(mib * MEMORY_MB_PER_DWARF_MIB))),
  };
}

/** Indexing stopped at its time or memory limit. */
export class IndexLimitError extends Error {
  constructor(
    readonly path: string,
    readonly kind: 'time' | 'memory',
    readonly limit: number,
    readonly dwarfBytes: number,
    readonly setting: string,
  ) {
    const size =
      dwarfBytes < 1024 * 1024 ? `${Math.ceil(dwarfBytes / 1024)} KiB of DWARF` : `${(dwarfBytes / (1024 * 1024)).toFixed(1)} MiB of DWARF`;
    super(
      kind === 'time'
        ? `indexing ${path} took longer than its ${limit} s time limit (for ${size}): the binary's debug information may be hostile; if it is genuine, raise ${setting}`
        : `indexing ${path} needed more than its ${limit} MiB memory limit (for ${size}): the binary's debug information may be hostile; if it is genuine, raise ${setting}`,
    );
    this.name = 'IndexLimitError';
  }
}

const DWARF_SECTIONS = new Set(['.debug_info', '.debug_line', '.zdebug_info', '.zdebug_line']);
interface Header {
  fileSize: number;
  le: boolean;
  is64: boolean;
  sections: RawSection[];
}

async function readAt(fh: FileHandle, offset: number, length: number): Promise<Buffer> {
  const b = Buffer.alloc(length);
  const { bytesRead } = await fh.read(b, 0, length, offset);
  return b.subarray(0, bytesRead);
}

async function readHeader(fh: FileHandle): Promise<Header | undefined> {
  const e = await readAt(fh, 0, 64);
  if (!hasElfMagic(e)) return undefined;
  // A damaged header throws ElfFormatError here: the caller then measures nothing, and opening the file names it.
  const h = readElfHeader(e);
  const { shoff, shentsize, shnum, shstrndx } = h;
  if (shnum === 0 || shentsize < SHDR_SIZE[h.elfClass] || shstrndx >= shnum) return undefined;
  const table = await readAt(fh, shoff, shnum * shentsize);
  if (table.length < shnum * shentsize) return undefined;
  const raw = Array.from({ length: shnum }, (_, i) => readSectionHeader(table, i * shentsize, h, i, shoff));
  const strtab = raw[shstrndx];
  const fileSize = (await fh.stat()).size;
  if (strtab.offset >= fileSize) return undefined;
  const names = await readAt(fh, strtab.offset, Math.min(strtab.size, 1 << 20));
  const sections = raw.map((s) => {
    const end = names.indexOf(0, s.nameOffset);
    return {
      ...s,
      name: s.nameOffset < names.length ? names.toString('latin1', s.nameOffset, end < 0 ? names.length : end) : '',
    };
  });
  return { fileSize, le: h.littleEndian, is64: h.elfClass === 64, sections };
}

/**
 * Decompressed size of the DWARF the index decodes in full; 0 when there is none. A size the file cannot hold
 * (a section past its end, a declared size over what a file this size may decompress to) counts only as
 * much as it could be: opening the file then fails on it, in its own words, within the floors.
 */
async function ownDwarfBytes(fh: FileHandle, h: Header): Promise<number> {
  let total = 0;
  const decompressed = fileDecompressionLimit(h.fileSize);
  for (const s of h.sections) {
    if (!DWARF_SECTIONS.has(s.name) || s.type === SHT_NOBITS) continue;
    let size = Math.max(0, Math.min(s.size, h.fileSize - s.offset));
    if ((s.flags & SHF_COMPRESSED) !== 0n) {
      const c = await readAt(fh, s.offset, h.is64 ? 24 : 12);
      const declared = h.is64 ? Number(h.le ? c.readBigUInt64LE(8) : c.readBigUInt64BE(8)) : h.le ? c.readUInt32LE(4) : c.readUInt32BE(4);
      size = Math.min(declared, maxDecompressedSize(s.size), decompressed);
    } else if (s.name.startsWith('.zdebug_')) {
      const c = await readAt(fh, s.offset, 12);
      if (c.length === 12 && c.toString('latin1', 0, 4) === 'ZLIB')
        size = Math.min(Number(c.readBigUInt64BE(4)), maxDecompressedSize(s.size), decompressed);
    }
    total += size;
  }
  return Math.min(total, h.fileSize + decompressed);
}

async function sectionBytes(fh: FileHandle, h: Header, name: string, max: number): Promise<Buffer | undefined> {
  const s = h.sections.find((x) => x.name === name && x.type !== SHT_NOBITS);
  return s ? readAt(fh, s.offset, Math.min(s.size, max)) : undefined;
}

/** The separate debug files gdb would try, in its order (build-id first, then .gnu_debuglink's places). */
async function debugCandidates(path: string, fh: FileHandle, h: Header, debugDirs: string[]): Promise<string[]> {
  const roots = [...debugDirs, '/usr/lib/debug'];
  const out: string[] = [];
  const note = await sectionBytes(fh, h, '.note.gnu.build-id', 1024);
  if (note && note.length >= 16) {
    const namesz = h.le ? note.readUInt32LE(0) : note.readUInt32BE(0);
    const descsz = h.le ? note.readUInt32LE(4) : note.readUInt32BE(4);
    const start = 12 + Math.ceil(namesz / 4) * 4;
    const id = note.subarray(start, start + descsz).toString('hex');
    if (id.length > 2) for (const r of roots) out.push(join(r, '.build-id', id.slice(0, 2), `${id.slice(2)}.debug`));
  }
  const link = await sectionBytes(fh, h, '.gnu_debuglink', 4096);
  if (link) {
    const file = link.toString('latin1', 0, Math.max(0, link.indexOf(0)));
    const dir = dirname(path);
    if (file && !file.includes('/')) out.push(join(dir, file), join(dir, '.debug', file), ...roots.map((r) => join(r, dir, file)));
  }
  return out;
}

async function withFile<T>(path: string, f: (fh: FileHandle, h: Header) => Promise<T>): Promise<T | undefined> {
  let fh: FileHandle | undefined;
  try {
    fh = await openRegularFile(path);
    const h = await readHeader(fh);
    return h ? await f(fh, h) : undefined;
  } catch {
    return undefined;
  } finally {
    await fh?.close();
  }
}

/**
 * Bytes of .debug_info + .debug_line (decompressed) of a binary, or of its separate debug file when it has
 * none of its own; 0 when neither is found or readable (the floors then apply).
 */
export async function dwarfSizeOf(path: string, debugDirs: string[] = []): Promise<number> {
  const own = await withFile(path, async (fh, h) => ({
    bytes: await ownDwarfBytes(fh, h),
    candidates: await debugCandidates(path, fh, h, debugDirs),
  }));
  if (!own) return 0;
  if (own.bytes > 0) return own.bytes;
  for (const c of own.candidates) {
    const bytes = await withFile(c, ownDwarfBytes);
    if (bytes) return bytes;
  }
  return 0;
}

// Compressed debug sections, decoded to the bytes `objcopy --decompress-debug-sections` would give:
//  - SHF_COMPRESSED (gABI): an Elf32_Chdr/Elf64_Chdr, then a zlib (ELFCOMPRESS_ZLIB 1) or zstd
//    (ELFCOMPRESS_ZSTD 2) stream;
//  - legacy GNU `.zdebug_*`: "ZLIB", the size as 8 big-endian bytes, then a zlib stream.
// The declared size is attacker-controlled: it is checked against a hard cap and a ratio to the compressed
// size before anything is allocated, and the decoder is limited to exactly that size. A file's sections
// together also share one total (DecompressionBudget): many sections each just under the per-section cap
// must not add up to more memory than any real binary's debug info needs.
import { inflateSync } from 'node:zlib';
import { elfReader } from './byteReader';
import { ElfFormatError } from './errors';
import { zstdDecompressExact } from './zstd';

export const ELFCOMPRESS_ZLIB = 1;
export const ELFCOMPRESS_ZSTD = 2;

/** No debug section we read is anywhere near this; larger declared sizes are treated as hostile. */
export const MAX_DECOMPRESSED_BYTES = 1024 * 1024 * 1024;
/** deflate cannot exceed ~1032:1; zstd can, but not on real DWARF. Small sections get a fixed allowance. */
const MAX_RATIO = 2048;
const SMALL_ALLOWANCE = 1024 * 1024;

/** Total decompressed bytes of all the debug sections read from one file. */
export const MAX_TOTAL_DECOMPRESSED_BYTES = 2 * 1024 * 1024 * 1024;

/**
 * What one file's compressed sections may decompress to, together, relative to the file: real debug info
 * compresses 3–8:1 (zlib, zstd), so 32 times the file's size (from a floor that small files get) never
 * refuses a real binary, while a 1 MB file declaring a 1 GiB section is refused before anything is inflated.
 */
export const DECOMPRESSED_PER_FILE_BYTE = 32;
export const MIN_FILE_DECOMPRESSED_BYTES = 64 * 1024 * 1024;

export function fileDecompressionLimit(fileBytes: number): number {
  return Math.min(MAX_TOTAL_DECOMPRESSED_BYTES, Math.max(MIN_FILE_DECOMPRESSED_BYTES, fileBytes * DECOMPRESSED_PER_FILE_BYTE));
}

/** The decompressed bytes one file has used so far, against its total. */
export class DecompressionBudget {
  used = 0;
  constructor(
    readonly limit = MAX_TOTAL_DECOMPRESSED_BYTES,
    /** How the limit was set, for the message ("" when it is a fixed total). */
    private readonly why = '',
  ) {}

  /** The budget of a file of `fileBytes` bytes (fileDecompressionLimit). */
  static forFile(fileBytes: number): DecompressionBudget {
    return new DecompressionBudget(
      fileDecompressionLimit(fileBytes),
      ` (${DECOMPRESSED_PER_FILE_BYTE} times the size of this ${fileBytes}-byte file, at least ${MIN_FILE_DECOMPRESSED_BYTES}: real debug info compresses far less)`,
    );
  }

  /** Takes `size` bytes from the budget before they are allocated; throws ElfFormatError past the total. */
  reserve(size: number, where: string, fileOffset: number): void {
    if (this.used + size > this.limit) {
      throw new ElfFormatError(
        where,
        fileOffset,
        `decompressing its ${size} bytes would bring this file's decompressed debug sections to ${this.used + size} bytes, over the total of ${this.limit} ProbeLens decompresses per file${this.why}`,
      );
    }
    this.used += size;
  }
}

export function maxDecompressedSize(compressedBytes: number): number {
  return Math.min(MAX_DECOMPRESSED_BYTES, Math.max(SMALL_ALLOWANCE, compressedBytes * MAX_RATIO));
}

/** Decodes an SHF_COMPRESSED section's raw bytes. */
export function decompressGabi(
  raw: Uint8Array,
  elfClass: 32 | 64,
  littleEndian: boolean,
  where: string,
  fileOffset: number,
  budget?: DecompressionBudget,
): Uint8Array {
  const c = elfReader(raw, littleEndian, where, fileOffset);
  const chType = c.u32();
  let size: number;
  if (elfClass === 64) {
    c.u32(); // ch_reserved
    size = c.u64Exact('ch_size');
    c.u64(); // ch_addralign
  } else {
    size = c.u32();
    c.u32(); // ch_addralign
  }
  const payload = raw.subarray(c.pos);
  checkSize(size, payload.length, where, fileOffset);
  if (chType !== ELFCOMPRESS_ZLIB && chType !== ELFCOMPRESS_ZSTD)
    throw new ElfFormatError(where, fileOffset, `unknown compression type ${chType} (expected zlib 1 or zstd 2)`);
  budget?.reserve(size, where, fileOffset);
  if (chType === ELFCOMPRESS_ZLIB) return inflateExact(payload, size, where, fileOffset + c.pos);
  try {
    return zstdDecompressExact(payload, size);
  } catch (e) {
    throw new ElfFormatError(where, fileOffset + c.pos, (e as Error).message);
  }
}

/** Decodes a legacy `.zdebug_*` section's raw bytes. */
export function decompressZdebug(raw: Uint8Array, where: string, fileOffset: number, budget?: DecompressionBudget): Uint8Array {
  const c = elfReader(raw, false, where, fileOffset);
  const magic = Buffer.from(c.bytes(4)).toString('latin1');
  if (magic !== 'ZLIB')
    throw new ElfFormatError(where, fileOffset, `expected "ZLIB" header of a .zdebug section, found ${JSON.stringify(magic)}`);
  const size = c.u64Exact('.zdebug size');
  const payload = raw.subarray(c.pos);
  checkSize(size, payload.length, where, fileOffset);
  budget?.reserve(size, where, fileOffset);
  return inflateExact(payload, size, where, fileOffset + c.pos);
}

function checkSize(size: number, compressed: number, where: string, off: number): void {
  const max = maxDecompressedSize(compressed);
  if (size > max) {
    throw new ElfFormatError(
      where,
      off,
      `declared uncompressed size ${size} is implausible for ${compressed} compressed bytes (limit ${max})`,
    );
  }
}

function inflateExact(payload: Uint8Array, size: number, where: string, off: number): Uint8Array {
  let out: Buffer;
  try {
    // maxOutputLength stops a stream that would inflate past the declared size instead of letting it grow.
    out = inflateSync(payload, { maxOutputLength: Math.max(1, size) });
  } catch (e) {
    throw new ElfFormatError(where, off, `zlib data is corrupt or larger than declared (${(e as Error).message})`);
  }
  if (out.length !== size) throw new ElfFormatError(where, off, `zlib data inflates to ${out.length} bytes, the header says ${size}`);
  return out;
}

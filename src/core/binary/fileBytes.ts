// A regular file's bytes read on demand: one zero-filled buffer as long as the file (pages never written cost no
// memory), filled by positional reads of the ranges asked for, a 4 KiB chunk at the least, each chunk once. What
// reads a range of `data` asks for it first (`ensure`); ElfFile does for the headers, a section, code or notes,
// and the DWARF reader for a unit (unit.ts). So an index of one source file of a 590 MB vmlinux reads a few MB of
// it, not the whole file (nor its 300 MB of relocation sections no index reads).
// A section read range by range may also get a buffer of its own (region): dropped with its reader, its pages go
// with it, so a DWARF reader made per batch of units holds no more of `.debug_info` than that batch's units.
// The descriptor stays open until close() (or until the FileBytes is collected), so the bytes all come from the file
// that was opened even when a build replaces it by rename meanwhile; after close() a range not read before throws.
// What was read, into whichever buffer, is kept as a map of chunks (readMap): how much of which section a build read.
// Tests: test/unit/core/binary/fileBytes.test.ts
import { closeSync, fstatSync, readSync } from 'node:fs';
import { ElfFormatError } from './errors';
import { openRegularFileSync } from './regularFile';

/** The unit of reading: a range is widened to whole chunks (a unit's root DIE then costs one read). */
export const FILE_CHUNK = 4096;

/** One read(2) at the most (Node refuses 2 GiB and more in one call). */
const MAX_READ = 1 << 30;

/**
 * The descriptor of a FileBytes collected without close() (one a long-lived reader, such as a session's DebugAccess,
 * reads through for as long as it lives) is closed then: nothing can read through it any more.
 */
const closeWhenCollected = new FinalizationRegistry<number>((fd) => {
  try {
    closeSync(fd);
  } catch {
    // already closed with the process's other descriptors
  }
});

export class FileBytes {
  /** The file's bytes; only the ranges ensure() was asked for hold them (the rest is zeros). */
  readonly data: Buffer;
  private readonly have: Uint8Array;
  /** The chunks read so far into `data` or a region (readMap). */
  private readonly seen: Uint8Array;
  private fd: number | undefined;
  /** Bytes read so far, and how many reads it took (for tests and benchmarks). */
  bytesRead = 0;
  reads = 0;

  private constructor(
    readonly path: string,
    fd: number,
    size: number,
  ) {
    this.fd = fd;
    this.data = Buffer.alloc(size);
    this.have = new Uint8Array(Math.ceil(size / FILE_CHUNK));
    this.seen = new Uint8Array(this.have.length);
    // Last: a constructor that threw has its descriptor closed by open(), never again by the registry.
    closeWhenCollected.register(this, fd, this);
  }

  /**
   * Opens a regular file for reading on demand (NotRegularFileError otherwise, or the fs error). Nothing is read
   * yet; close() when done.
   */
  static open(path: string): FileBytes {
    const fd = openRegularFileSync(path);
    try {
      return new FileBytes(path, fd, fstatSync(fd).size);
    } catch (e) {
      closeSync(fd);
      throw e;
    }
  }

  get size(): number {
    return this.data.length;
  }

  /** Whether every byte of [offset, offset + length) (clipped to the file) has been read. */
  has(offset: number, length: number): boolean {
    const [first, last] = this.chunks(offset, length);
    for (let c = first; c < last; c++) if (!this.have[c]) return false;
    return true;
  }

  /**
   * Makes [offset, offset + length) of `data` hold the file's bytes, reading the chunks not read before (runs of
   * them in one read each). The range is clipped to the file: what lies past its end is the caller's to refuse.
   * Throws ElfFormatError when the file ends early (it was truncated since it was opened), or when it was closed.
   */
  ensure(offset: number, length: number): void {
    const [first, last] = this.chunks(offset, length);
    for (let c = first; c < last;) {
      if (this.have[c]) {
        c++;
        continue;
      }
      let end = c + 1;
      while (end < last && !this.have[end]) end++;
      this.read(c * FILE_CHUNK, Math.min(end * FILE_CHUNK, this.data.length));
      this.have.fill(1, c, end);
      c = end;
    }
  }

  /**
   * [offset, offset + size) of the file (clipped to it) in a buffer of its own, read range by range as ensure()
   * does: `data` is left as it is, and the region's pages are freed with it.
   */
  region(offset: number, size: number): FileRegion {
    const start = Math.max(0, Math.min(offset, this.data.length));
    return new FileRegion(this, start, Math.max(0, Math.min(size, this.data.length - start)));
  }

  /** Which chunks of the file were read so far (into `data` or a region). */
  readMap(): FileReadMap {
    return { path: this.path, size: this.data.length, chunks: this.seen.slice() };
  }

  /** Reads the whole file (what a checksum of it needs). */
  ensureAll(): void {
    this.ensure(0, this.data.length);
  }

  /** Closes the descriptor; the ranges read stay readable. */
  close(): void {
    if (this.fd === undefined) return;
    closeWhenCollected.unregister(this);
    closeSync(this.fd);
    this.fd = undefined;
  }

  private chunks(offset: number, length: number): [number, number] {
    const start = Math.max(0, Math.min(offset, this.data.length));
    const end = Math.max(start, Math.min(offset + Math.max(0, length), this.data.length));
    if (end === start) return [0, 0];
    return [Math.floor(start / FILE_CHUNK), Math.ceil(end / FILE_CHUNK)];
  }

  private read(start: number, end: number): void {
    this.readInto(this.data, start, start, end - start);
  }

  /** Reads `length` bytes at file offset `at` into `into` from `intoOffset` (FileRegion reads through it). */
  readInto(into: Buffer, intoOffset: number, start: number, length: number): void {
    const end = start + length;
    if (this.fd === undefined) throw new ElfFormatError(this.path, start, `bytes ${start}–${end} were asked for after the file was closed`);
    const shift = intoOffset - start;
    for (let at = start; at < end;) {
      const n = readSync(this.fd, into, at + shift, Math.min(end - at, MAX_READ), at);
      if (n === 0)
        throw new ElfFormatError(
          this.path,
          at,
          `the file ends at ${at}, short of the ${this.data.length} bytes it had when opened: it changed while being read`,
        );
      at += n;
      this.bytesRead += n;
    }
    this.reads++;
    if (length > 0) this.seen.fill(1, Math.floor(start / FILE_CHUNK), Math.ceil(end / FILE_CHUNK));
  }
}

/** A range of a FileBytes' file in a buffer of its own, read chunk by chunk (region-relative chunks) on demand. */
export class FileRegion {
  /** The region's bytes; only the ranges ensure() was asked for hold them (the rest is zeros). */
  readonly data: Buffer;
  private readonly have: Uint8Array;

  constructor(
    private readonly file: FileBytes,
    /** Where the region starts in the file. */
    readonly offset: number,
    size: number,
  ) {
    this.data = Buffer.alloc(size);
    this.have = new Uint8Array(Math.ceil(size / FILE_CHUNK));
  }

  /** Makes [start, end) of `data` (region offsets, clipped to it) hold the file's bytes. Throws as FileBytes.ensure. */
  ensure(start: number, end: number): void {
    const size = this.data.length;
    start = Math.max(0, Math.min(start, size));
    end = Math.max(start, Math.min(end, size));
    if (end === start) return;
    const last = Math.ceil(end / FILE_CHUNK);
    for (let c = Math.floor(start / FILE_CHUNK); c < last;) {
      if (this.have[c]) {
        c++;
        continue;
      }
      let e = c + 1;
      while (e < last && !this.have[e]) e++;
      const from = c * FILE_CHUNK;
      this.file.readInto(this.data, from, this.offset + from, Math.min(e * FILE_CHUNK, size) - from);
      this.have.fill(1, c, e);
      c = e;
    }
  }
}

/** The chunks (FILE_CHUNK bytes) of a file that were read: chunks[i] is 1 when [i, i + 1) chunks were. */
export interface FileReadMap {
  path: string;
  size: number;
  chunks: Uint8Array;
}

/** The maps of several readers (threads) of the same files joined: a chunk read by any of them was read. */
export function joinReadMaps(maps: readonly FileReadMap[]): FileReadMap[] {
  const byPath = new Map<string, FileReadMap>();
  for (const m of maps) {
    const have = byPath.get(m.path);
    if (!have || have.size !== m.size) {
      byPath.set(m.path, { path: m.path, size: m.size, chunks: m.chunks.slice() });
      continue;
    }
    for (let i = 0; i < m.chunks.length; i++) have.chunks[i] |= m.chunks[i];
  }
  return [...byPath.values()];
}

/** Bytes of [offset, offset + size) of the file that `map` says were read. */
export function bytesReadIn(map: FileReadMap, offset: number, size: number): number {
  const start = Math.max(0, Math.min(offset, map.size));
  const end = Math.max(start, Math.min(offset + size, map.size));
  let n = 0;
  for (let c = Math.floor(start / FILE_CHUNK); c * FILE_CHUNK < end; c++)
    if (map.chunks[c]) n += Math.min(end, (c + 1) * FILE_CHUNK) - Math.max(start, c * FILE_CHUNK);
  return n;
}

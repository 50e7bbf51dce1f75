// A regular file's bytes read on demand: one zero-filled buffer as long as the file (pages never written cost no
// memory), filled by positional reads of the ranges asked for, a 4 KiB chunk at the least, each chunk once. What
// reads a range of `data` asks for it first (`ensure`); ElfFile does for the headers, a section, code or notes,
// and the DWARF reader for a unit (unit.ts). So an index of one source file of a 590 MB vmlinux reads a few MB of
// it, not the whole file (nor its 300 MB of relocation sections no index reads).
// The descriptor stays open until close(), so the bytes all come from the file that was opened even when a build
// replaces it by rename meanwhile; after close() a range not read before throws.
// Tests: test/unit/core/binary/fileBytes.test.ts
import { closeSync, fstatSync, readSync } from 'node:fs';
import { ElfFormatError } from './errors';
import { openRegularFileSync } from './regularFile';

/** The unit of reading: a range is widened to whole chunks (a unit's root DIE then costs one read). */
export const FILE_CHUNK = 4096;

/** One read(2) at the most (Node refuses 2 GiB and more in one call). */
const MAX_READ = 1 << 30;

export class FileBytes {
  /** The file's bytes; only the ranges ensure() was asked for hold them (the rest is zeros). */
  readonly data: Buffer;
  private readonly have: Uint8Array;
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

  /** Reads the whole file (what a checksum of it needs). */
  ensureAll(): void {
    this.ensure(0, this.data.length);
  }

  /** Closes the descriptor; the ranges read stay readable. */
  close(): void {
    if (this.fd === undefined) return;
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
    if (this.fd === undefined) throw new ElfFormatError(this.path, start, `bytes ${start}–${end} were asked for after the file was closed`);
    for (let at = start; at < end;) {
      const n = readSync(this.fd, this.data, at, Math.min(end - at, MAX_READ), at);
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
  }
}

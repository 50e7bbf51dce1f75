// The cache key of a binary without reading the whole file: the ELF header, the program headers and the
// PT_NOTE segments are a few KiB at the start of the file, and the GNU build-id note lives there. A cache hit
// must stay far under 50 ms even for a 100 MB binary, so this never reads section contents.
import { closeSync, fstatSync, readSync } from 'node:fs';
import { openRegularFileSync } from '../binary/regularFile';

const PT_NOTE = 4;
const NT_GNU_BUILD_ID = 3;
const MAX_NOTE_BYTES = 1 << 16;

export interface BinaryIdentity {
  size: number;
  mtimeMs: number;
  buildId?: string;
  /** File offset and length of the build-id bytes, so a target can compare its copy without parsing ELF. */
  buildIdOffset?: number;
  buildIdLength?: number;
  /** Offset of the build-id bytes inside their PT_NOTE segment (a kernel exports that segment as /sys/kernel/notes). */
  buildIdNoteOffset?: number;
}

export function readBinaryIdentity(path: string): BinaryIdentity {
  // A FIFO, device or directory is refused at once (NotRegularFileError) instead of blocking in open(2).
  const fd = openRegularFileSync(path);
  try {
    const st = fstatSync(fd);
    const id: BinaryIdentity = { size: st.size, mtimeMs: st.mtimeMs };
    const read = (pos: number, len: number): Buffer => {
      // Header fields of a damaged file can point anywhere: read nothing rather than fail on them.
      if (!Number.isSafeInteger(pos) || pos < 0 || pos >= st.size || len <= 0) return Buffer.alloc(0);
      len = Math.min(len, st.size - pos);
      const b = Buffer.alloc(len);
      const n = readSync(fd, b, 0, len, pos);
      return b.subarray(0, n);
    };
    const h = read(0, 64);
    if (h.length < 52 || h.readUInt32BE(0) !== 0x7f454c46) return id;
    const is64 = h[4] === 2;
    const le = h[5] === 1;
    const u16 = (b: Buffer, o: number) => (le ? b.readUInt16LE(o) : b.readUInt16BE(o));
    const u32 = (b: Buffer, o: number) => (le ? b.readUInt32LE(o) : b.readUInt32BE(o));
    const word = (b: Buffer, o: number) => (is64 ? Number(le ? b.readBigUInt64LE(o) : b.readBigUInt64BE(o)) : u32(b, o));
    if (is64 && h.length < 64) return id;
    const phoff = word(h, is64 ? 32 : 28);
    const phentsize = u16(h, is64 ? 54 : 42);
    const phnum = u16(h, is64 ? 56 : 44);
    if (phnum === 0 || phentsize < (is64 ? 56 : 32) || phnum > 4096) return id;
    const ph = read(phoff, phentsize * phnum);
    for (let i = 0; i < phnum && (i + 1) * phentsize <= ph.length; i++) {
      const p = i * phentsize;
      if (u32(ph, p) !== PT_NOTE) continue;
      const off = word(ph, is64 ? p + 8 : p + 4);
      const filesz = word(ph, is64 ? p + 32 : p + 16);
      const align = Math.max(4, word(ph, is64 ? p + 48 : p + 28));
      const notes = read(off, Math.min(filesz, MAX_NOTE_BYTES));
      let q = 0;
      while (q + 12 <= notes.length) {
        const namesz = u32(notes, q);
        const descsz = u32(notes, q + 4);
        const type = u32(notes, q + 8);
        const nameEnd = q + 12 + namesz;
        const descStart = nameEnd + ((align - (namesz % align)) % align);
        if (descStart + descsz > notes.length) break;
        if (type === NT_GNU_BUILD_ID && namesz === 4 && notes.toString('latin1', q + 12, q + 15) === 'GNU' && descsz > 0) {
          id.buildId = notes.toString('hex', descStart, descStart + descsz);
          id.buildIdOffset = off + descStart;
          id.buildIdLength = descsz;
          id.buildIdNoteOffset = descStart;
          return id;
        }
        q = descStart + descsz + ((align - (descsz % align)) % align);
      }
    }
    return id;
  } finally {
    closeSync(fd);
  }
}

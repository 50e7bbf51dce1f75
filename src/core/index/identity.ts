// The cache key of a binary without reading the whole file: the ELF header, the program headers and the
// PT_NOTE segments are a few KiB at the start of the file, and the GNU build-id note lives there. A cache hit
// must stay far under 50 ms even for a 100 MB binary, so this never reads section contents.
import { closeSync, fstatSync, readSync } from 'node:fs';
import {
  PHDR_SIZE,
  PT_NOTE,
  SHDR_SIZE,
  SHT_NOTE,
  hasElfMagic,
  readElfHeader,
  readProgramHeader,
  readSectionHeader,
  type ElfHeader,
  type RawSection,
  type RawSegment,
} from '../binary/elfHeader';
import { isBinaryFormatError } from '../binary/errors';
import { openRegularFileSync } from '../binary/regularFile';

const NT_GNU_BUILD_ID = 3;
const MAX_NOTE_BYTES = 1 << 16;

export interface BinaryIdentity {
  size: number;
  mtimeMs: number;
  buildId?: string;
  /** File offset and length of the build-id bytes, so a target can compare its copy without parsing ELF. */
  buildIdOffset?: number;
  buildIdLength?: number;
  /**
   * Offset of the build-id bytes inside their PT_NOTE segment (a kernel exports that segment as /sys/kernel/notes),
   * or, in a relocatable object (a module's .ko), inside their note section (/sys/module/NAME/notes/SECTION).
   */
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
    const head = read(0, 64);
    if (!hasElfMagic(head)) return id;
    // A damaged header or program header gives no build-id rather than an error: opening the file names it.
    const h = lenient((): ElfHeader => readElfHeader(head));
    if (!h) return id;
    const u32 = (b: Buffer, o: number) => (h.littleEndian ? b.readUInt32LE(o) : b.readUInt32BE(o));
    // The note regions to search: PT_NOTE segments, or in a relocatable object (no segments) its note sections.
    const regions: Array<{ offset: number; size: number; align: number }> = [];
    const { phoff, phentsize, phnum } = h;
    if (phnum > 0 && phentsize >= PHDR_SIZE[h.elfClass] && phnum <= 4096) {
      const ph = read(phoff, phentsize * phnum);
      for (let i = 0; i < phnum && (i + 1) * phentsize <= ph.length; i++) {
        const seg = lenient((): RawSegment => readProgramHeader(ph, i * phentsize, h, i, phoff));
        if (seg?.type === PT_NOTE) regions.push({ offset: seg.offset, size: seg.filesz, align: Number(seg.align) });
      }
    } else if (h.type === 1 && h.shnum > 0 && h.shnum <= 65535 && h.shentsize >= SHDR_SIZE[h.elfClass]) {
      const sh = read(h.shoff, h.shentsize * h.shnum);
      for (let i = 0; i < h.shnum && (i + 1) * h.shentsize <= sh.length; i++) {
        const sec = lenient((): RawSection => readSectionHeader(sh, i * h.shentsize, h, i, h.shoff));
        if (sec?.type === SHT_NOTE) regions.push({ offset: sec.offset, size: sec.size, align: Number(sec.addralign) });
      }
    }
    for (const r of regions) {
      const off = r.offset;
      const align = Math.max(4, r.align);
      const notes = read(off, Math.min(r.size, MAX_NOTE_BYTES));
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

function lenient<T>(read: () => T): T | undefined {
  try {
    return read();
  } catch (e) {
    if (isBinaryFormatError(e)) return undefined;
    throw e;
  }
}

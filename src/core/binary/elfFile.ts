// One ELF object (executable, shared library or separate debug file) over its bytes: in memory, or read from the
// file range by range as they are asked for (ElfFile.open, FileBytes). Addresses are bigint (a 64-bit address may
// exceed 2^53); file offsets and sizes within the file are numbers, checked against the file size before use.
// Tests: test/unit/core/binary/elfFile.test.ts, test/unit/core/binary/fileBytes.test.ts
import { elfReader, hex } from './byteReader';
import { DecompressionBudget, decompressGabi, decompressZdebug } from './compressed';
import { ElfFormatError, NotElfError, UnsupportedArchError } from './errors';
import { FILE_CHUNK, FileBytes, type FileReadMap } from './fileBytes';
import {
  EM_AARCH64,
  EM_X86_64,
  PT_LOAD,
  PT_NOTE,
  SHDR_SIZE,
  SHF_COMPRESSED,
  SHT_DYNSYM,
  SHT_NOBITS,
  SHT_NOTE,
  SHT_SYMTAB,
  hasElfMagic,
  readElfHeader,
  readSectionHeader,
  type RawSection,
  type RawSegment,
} from './elfHeader';
import { parseElfContainer, type RawElf } from './elfyAdapter';
import { NT_GNU_BUILD_ID, parseNotes, type ElfNote } from './notes';
import { checkStrtab, groupSymbols, readFunctionSymbols, type FunctionSymbol, type SymbolGroup } from './symbols';
import type { SectionSource } from './sections';
import { applyRelocations, layoutRelocatable, type RelocatableLayout } from './relocatable';

export type Arch = 'x86_64' | 'aarch64';
export type ElfType = 'REL' | 'EXEC' | 'DYN' | 'CORE' | 'UNKNOWN';
export type ElfSection = RawSection;
export type ElfSegment = RawSegment;

const MACHINES: Record<number, string> = {
  3: 'i386',
  8: 'MIPS',
  20: 'PowerPC',
  21: 'PowerPC64',
  22: 'S/390',
  40: 'ARM (32-bit)',
  62: 'x86-64',
  183: 'AArch64',
  243: 'RISC-V',
  258: 'LoongArch',
};
/** Human name of an e_machine number ("x86-64", "PowerPC64", "machine 1234"). */
export function machineName(machine: number): string {
  return MACHINES[machine] ?? `machine ${machine}`;
}
const TYPES: Record<number, ElfType> = { 1: 'REL', 2: 'EXEC', 3: 'DYN', 4: 'CORE' };

export interface ElfParseOptions {
  /** Total decompressed bytes of this file's compressed sections (default: fileDecompressionLimit of its size). */
  maxDecompressedBytes?: number;
}

export interface DebugLink {
  /** File name as stored (no directory). */
  file: string;
  crc32: number;
}

export class ElfFile {
  readonly elfClass: 32 | 64;
  readonly littleEndian: boolean;
  readonly addressSize: 4 | 8;
  /** e_machine number. */
  readonly machine: number;
  /** Human name of the machine ("x86-64", "AArch64", "RISC-V", "machine 1234"). */
  readonly machineName: string;
  /** The probe-able architectures; undefined for any other machine. */
  readonly arch: Arch | undefined;
  readonly type: ElfType;
  readonly entry: bigint;
  readonly sections: readonly ElfSection[];
  readonly segments: readonly ElfSegment[];
  readonly loadSegments: readonly ElfSegment[];

  private readonly byName = new Map<string, ElfSection>();
  private readonly contents = new Map<number, Uint8Array | undefined>();
  private readonly decompression: DecompressionBudget;
  private symbolCache?: { symbols: FunctionSymbol[]; groups: SymbolGroup[] };
  /** A relocatable object's sections laid out as if linked (relocatable.ts); undefined for a linked file. */
  readonly layout: RelocatableLayout | undefined;

  private constructor(
    readonly path: string,
    /** The file's bytes; of a file opened with open(), only the ranges read so far (see ensure). */
    readonly data: Buffer,
    raw: RawElf,
    opts: ElfParseOptions,
    /** Where the bytes not read yet come from (open()); undefined when `data` holds the whole file. */
    private readonly file?: FileBytes,
  ) {
    this.decompression =
      opts.maxDecompressedBytes !== undefined
        ? new DecompressionBudget(opts.maxDecompressedBytes)
        : DecompressionBudget.forFile(data.length);
    const h = raw.header;
    this.elfClass = h.elfClass;
    this.littleEndian = h.littleEndian;
    this.addressSize = h.elfClass === 64 ? 8 : 4;
    this.machine = h.machine;
    this.machineName = machineName(h.machine);
    this.arch = h.machine === EM_X86_64 ? 'x86_64' : h.machine === EM_AARCH64 ? 'aarch64' : undefined;
    this.type = TYPES[h.type] ?? 'UNKNOWN';
    this.entry = h.entry;
    this.sections = raw.sections;
    this.segments = raw.segments;
    for (const s of raw.sections) if (!this.byName.has(s.name)) this.byName.set(s.name, s);
    // A relocatable object has no segments: its allocated sections, laid out, stand in for them.
    this.layout =
      this.type === 'REL'
        ? layoutRelocatable({
            sections: raw.sections,
            littleEndian: this.littleEndian,
            elfClass: this.elfClass,
            bytes: (s) => this.rawSectionBytes(s),
          })
        : undefined;
    this.loadSegments = this.layout ? this.layout.segments : raw.segments.filter((s) => s.type === PT_LOAD);
  }

  /** Parses an ELF image. Throws NotElfError for non-ELF data, ElfFormatError for a damaged one. */
  static parse(data: Buffer, path = '<memory>', opts: ElfParseOptions = {}, file?: FileBytes): ElfFile {
    if (!hasElfMagic(data)) {
      const head = data.subarray(0, 2).toString('latin1');
      throw new NotElfError(path, data.length === 0 ? 'the file is empty' : head === '#!' ? 'it is a script' : 'no ELF magic number');
    }
    return new ElfFile(path, data, parseElfContainer(data), opts, file);
  }

  /**
   * Opens an ELF file to read its bytes as they are needed (positional reads, FileBytes) instead of reading it
   * whole: the headers now, a section when it is first asked for, and with sectionBytesUnread() a section's
   * ranges one by one. `checkHeader` sees the file's first 64 bytes before the tables are read. Throws as parse()
   * does, or the fs error; close() when done (an ElfFile it fails to make closes the file itself).
   */
  static open(path: string, opts: ElfParseOptions = {}, checkHeader?: (head: Buffer) => void): ElfFile {
    const file = FileBytes.open(path);
    try {
      const data = file.data;
      file.ensure(0, 64);
      checkHeader?.(data);
      if (hasElfMagic(data)) {
        // The tables and the section-name table, which elfy reads; damaged ones are refused by parseElfContainer.
        const h = readElfHeader(data);
        file.ensure(h.phoff, h.phnum * h.phentsize);
        file.ensure(h.shoff, h.shnum * h.shentsize);
        if (h.shstrndx < h.shnum && h.shentsize >= SHDR_SIZE[h.elfClass] && h.shoff + h.shnum * h.shentsize <= data.length) {
          const names = readSectionHeader(data, h.shoff + h.shstrndx * h.shentsize, h, h.shstrndx);
          file.ensure(names.offset, names.size);
        }
      }
      return ElfFile.parse(data, path, opts, file);
    } catch (e) {
      file.close();
      throw e;
    }
  }

  /** Closes the file of an ElfFile made by open() (the ranges read stay readable); nothing for one in memory. */
  close(): void {
    this.file?.close();
  }

  /** Bytes read from the file so far (the whole file for one in memory). */
  get bytesRead(): number {
    return this.file ? this.file.bytesRead : this.data.length;
  }

  /** Which chunks of the file were read so far (FileBytes.readMap); every chunk of a file read whole. */
  readMap(): FileReadMap {
    return (
      this.file?.readMap() ?? {
        path: this.path,
        size: this.data.length,
        chunks: new Uint8Array(Math.ceil(this.data.length / FILE_CHUNK)).fill(1),
      }
    );
  }

  /** Makes [offset, offset + length) of `data` hold the file's bytes (a file opened with open()). */
  ensure(offset: number, length: number): void {
    this.file?.ensure(offset, length);
  }

  /** The whole file's bytes (reading what was not read yet): what a checksum of the file needs. */
  wholeFile(): Buffer {
    this.file?.ensureAll();
    return this.data;
  }

  /** Throws UnsupportedArchError unless this is an x86-64 or AArch64 object. */
  requireProbeableArch(): Arch {
    if (!this.arch) throw new UnsupportedArchError(this.machineName, this.path);
    return this.arch;
  }

  section(name: string): ElfSection | undefined {
    return this.byName.get(name);
  }

  /** The section's bytes as stored in the file (still compressed if it is). Undefined for SHT_NOBITS. */
  rawSectionBytes(sec: ElfSection): Uint8Array | undefined {
    if (sec.type === SHT_NOBITS) return undefined;
    if (sec.size === 0) return new Uint8Array(0);
    if (sec.offset + sec.size > this.data.length) {
      throw new ElfFormatError(
        sec.name || `section ${sec.index}`,
        sec.offset,
        `${sec.size} bytes run past the end of the ${this.data.length}-byte file`,
      );
    }
    this.file?.ensure(sec.offset, sec.size);
    return this.data.subarray(sec.offset, sec.offset + sec.size);
  }

  /**
   * An uncompressed section's bytes as stored, not read yet, in a buffer of its own (FileBytes.region): of a file
   * opened with open(), the reader asks for each range before reading it (`ensure`, section offsets), and the
   * buffer's pages go when the reader drops it. Each call gives a new buffer. Undefined where the contents are not
   * the stored bytes as they are (compressed, a relocatable object's to relocate, SHT_NOBITS), the section was
   * read whole already, or the file is in memory: there sectionContents() is the way.
   */
  sectionBytesUnread(name: string): { bytes: Uint8Array; ensure(start: number, end: number): void } | undefined {
    const sec = this.byName.get(name);
    if (!this.file || !sec || sec.type === SHT_NOBITS || (sec.flags & SHF_COMPRESSED) !== 0n || this.layout) return undefined;
    if (this.contents.has(sec.index) || sec.offset + sec.size > this.data.length) return undefined;
    const region = this.file.region(sec.offset, sec.size);
    return { bytes: region.data, ensure: (start, end) => region.ensure(start, end) };
  }

  /**
   * Decompressed contents of a section by name, decoded once and cached. `.debug_x` is also found as a legacy
   * `.zdebug_x`. Undefined when absent or SHT_NOBITS (a stripped debug file's placeholder).
   */
  sectionContents(name: string): Uint8Array | undefined {
    let sec = this.byName.get(name);
    if (!sec && name.startsWith('.debug_')) sec = this.byName.get(`.zdebug_${name.slice(7)}`);
    if (!sec) return undefined;
    return this.contentsOf(sec);
  }

  /**
   * A section's decompressed contents, cached; a relocatable object's with its relocations applied against its
   * layout (relocatable.ts), never a linked file's (a vmlinux's `.rela.debug_*` are already applied).
   */
  contentsOf(sec: ElfSection): Uint8Array | undefined {
    if (this.contents.has(sec.index)) return this.contents.get(sec.index);
    const raw = this.rawSectionBytes(sec);
    let out = raw;
    if (raw && (sec.flags & SHF_COMPRESSED) !== 0n)
      out = decompressGabi(raw, this.elfClass, this.littleEndian, sec.name, sec.offset, this.decompression);
    else if (raw && sec.name.startsWith('.zdebug_')) out = decompressZdebug(raw, sec.name, sec.offset, this.decompression);
    if (out && this.layout?.relocations.has(sec.index))
      out = applyRelocations(sec, out === raw ? Uint8Array.from(out) : out, this.layout, {
        sections: this.sections,
        littleEndian: this.littleEndian,
        elfClass: this.elfClass,
        machine: this.machine,
        bytes: (s) => this.rawSectionBytes(s),
      });
    this.contents.set(sec.index, out);
    return out;
  }

  /** A symbol's address: its value, in a relocatable object plus its section's place in the layout. */
  symbolAddress(sectionIndex: number, value: bigint): bigint {
    return this.layout ? value + (this.layout.base.get(sectionIndex) ?? 0n) : value;
  }

  /** True when the file carries DWARF data (not just SHT_NOBITS placeholders). */
  get hasDebugInfo(): boolean {
    const s = this.byName.get('.debug_info') ?? this.byName.get('.zdebug_info');
    return !!s && s.type !== SHT_NOBITS && s.size > 0;
  }

  /** A SectionSource for the DWARF reader over this file's sections. */
  sectionSource(): SectionSource {
    return {
      section: (name) => this.sectionContents(name),
      unread: this.file ? (name) => this.sectionBytesUnread(name) : undefined,
      littleEndian: this.littleEndian,
      addressSize: this.addressSize,
    };
  }

  /** Defined function symbols of .symtab and .dynsym (aliases kept), and the same grouped by address. */
  functionSymbols(): { symbols: FunctionSymbol[]; groups: SymbolGroup[] } {
    if (this.symbolCache) return this.symbolCache;
    const tables: FunctionSymbol[][] = [];
    for (const type of [SHT_SYMTAB, SHT_DYNSYM]) {
      for (const t of this.sections) {
        if (t.type !== type) continue;
        const strSec = checkStrtab(this.sections as RawSection[], t);
        const strtab = this.rawSectionBytes(strSec) ?? new Uint8Array(0);
        const bytes = this.rawSectionBytes(t) ?? new Uint8Array(0);
        const syms = readFunctionSymbols(t, bytes, strtab, strSec.name, this.elfClass, this.littleEndian);
        if (this.layout) for (const f of syms) f.address = this.symbolAddress(f.sectionIndex, f.address);
        tables.push(syms);
      }
    }
    this.symbolCache = groupSymbols(tables);
    return this.symbolCache;
  }

  /** The PT_LOAD segment whose file-backed part contains vaddr, if any. */
  loadSegmentOf(vaddr: bigint): ElfSegment | undefined {
    // Each segment's end is made once (a symbol merge asks for every function symbol's address).
    const ends = (this.segmentEnds ??= this.loadSegments.map((s) => s.vaddr + BigInt(s.filesz)));
    for (let i = 0; i < ends.length; i++) if (vaddr >= this.loadSegments[i].vaddr && vaddr < ends[i]) return this.loadSegments[i];
    return undefined;
  }
  private segmentEnds: bigint[] | undefined;

  /**
   * File offset of a virtual address: vaddr − p_vaddr + p_offset of the PT_LOAD containing it (what uprobes
   * and `perf probe` use). Throws ElfFormatError when no loadable, file-backed segment contains it.
   */
  fileOffsetOf(vaddr: bigint): number {
    const seg = this.loadSegmentOf(vaddr);
    if (!seg) throw new ElfFormatError('program headers', undefined, `address ${hex(vaddr)} is in no file-backed PT_LOAD segment`);
    const off = Number(vaddr - seg.vaddr) + seg.offset;
    if (off >= this.data.length)
      throw new ElfFormatError(`program header ${seg.index}`, seg.offset, `address ${hex(vaddr)} maps past the end of the file`);
    return off;
  }

  /**
   * The N of a tracefs `@+N` fetcharg that reads `address` (a global) from a uprobe at `probeAddress`. The kernel
   * computes @+N as (runtime probe address − probe file offset) + N (trace_uprobe.c, translate_user_vaddr), i.e.
   * through the *probed* segment's vaddr−offset delta — so N is not fileOffsetOf(address) whenever the data
   * segment's delta differs (gcc PIE: text 0x1000/0x1000, data 0x3dd0/0x2dd0). Also valid for .bss.
   */
  fetchOffsetOf(address: bigint, probeAddress: bigint): bigint {
    const seg = this.loadSegmentOf(probeAddress);
    if (!seg)
      throw new ElfFormatError('program headers', undefined, `probe address ${hex(probeAddress)} is in no file-backed PT_LOAD segment`);
    const n = address - (seg.vaddr - BigInt(seg.offset));
    if (n < 0n)
      throw new ElfFormatError(
        'program headers',
        undefined,
        `${hex(address)} lies below the probed segment's base and cannot be fetched as @+N`,
      );
    return n;
  }

  /** `size` bytes of the loaded image at vaddr (e.g. a function's code), from the file. */
  bytesAt(vaddr: bigint, size: number): Uint8Array {
    if (this.layout) return this.relocatedBytesAt(vaddr, size);
    const seg = this.loadSegmentOf(vaddr);
    const off = this.fileOffsetOf(vaddr);
    if (!seg || size < 0 || vaddr + BigInt(size) > seg.vaddr + BigInt(seg.filesz) || off + size > this.data.length) {
      throw new ElfFormatError(
        `program header ${seg?.index ?? '?'}`,
        off,
        `${size} bytes at ${hex(vaddr)} run past the end of the segment`,
      );
    }
    this.file?.ensure(off, size);
    return this.data.subarray(off, off + size);
  }

  /** A relocatable object's bytes at a layout address, from its section with the relocations applied. */
  private relocatedBytesAt(vaddr: bigint, size: number): Uint8Array {
    for (const [index, base] of this.layout!.base) {
      const sec = this.sections[index];
      if (sec.type === SHT_NOBITS || vaddr < base || vaddr >= base + BigInt(sec.size)) continue;
      const at = Number(vaddr - base);
      if (size < 0 || at + size > sec.size)
        throw new ElfFormatError(sec.name, sec.offset + at, `${size} bytes at ${hex(vaddr)} run past the end of the section`);
      return this.contentsOf(sec)!.subarray(at, at + size);
    }
    throw new ElfFormatError('section headers', undefined, `address ${hex(vaddr)} is in no allocated section`);
  }

  /** Code bytes of a function symbol (st_size bytes from its entry). */
  functionBytes(sym: Pick<FunctionSymbol, 'address' | 'size'>): Uint8Array {
    if (sym.size > BigInt(this.data.length))
      throw new ElfFormatError('symbol table', undefined, `function at ${hex(sym.address)} claims ${sym.size} bytes, more than the file`);
    return this.bytesAt(sym.address, Number(sym.size));
  }

  /** Notes from SHT_NOTE sections, or from PT_NOTE segments when the section table is gone. */
  notes(sectionName?: string): ElfNote[] {
    const out: ElfNote[] = [];
    const noteSections = this.sections.filter((s) => s.type === SHT_NOTE && (sectionName === undefined || s.name === sectionName));
    for (const s of noteSections) {
      const bytes = this.rawSectionBytes(s);
      if (bytes) out.push(...parseNotes(bytes, this.littleEndian, Number(s.addralign), s.name, s.offset));
    }
    if (sectionName === undefined && noteSections.length === 0) {
      for (const p of this.segments) {
        if (p.type !== PT_NOTE || p.filesz === 0) continue;
        if (p.offset + p.filesz > this.data.length)
          throw new ElfFormatError(`program header ${p.index}`, p.offset, 'PT_NOTE runs past the end of the file');
        this.file?.ensure(p.offset, p.filesz);
        out.push(
          ...parseNotes(
            this.data.subarray(p.offset, p.offset + p.filesz),
            this.littleEndian,
            Number(p.align),
            `PT_NOTE ${p.index}`,
            p.offset,
          ),
        );
      }
    }
    return out;
  }

  /** GNU build-id as lower-case hex, or undefined. */
  get buildId(): string | undefined {
    const pick = (notes: ElfNote[]) => notes.find((n) => n.owner === 'GNU' && n.type === NT_GNU_BUILD_ID && n.desc.length > 0);
    const n = pick(this.notes('.note.gnu.build-id')) ?? pick(this.notes());
    return n ? Buffer.from(n.desc).toString('hex') : undefined;
  }

  /** Contents of .gnu_debuglink: the debug file's name and the CRC32 of its whole contents. */
  get debugLink(): DebugLink | undefined {
    const sec = this.byName.get('.gnu_debuglink');
    const bytes = sec && this.rawSectionBytes(sec);
    if (!sec || !bytes) return undefined;
    const c = elfReader(bytes, this.littleEndian, '.gnu_debuglink', sec.offset);
    const file = c.cstr();
    c.align(4);
    const crc32 = c.u32();
    if (file === '' || file.includes('/'))
      throw new ElfFormatError('.gnu_debuglink', sec.offset, `debug file name ${JSON.stringify(file)} is not a plain file name`);
    return { file, crc32 };
  }
}

// The DWARF sections of one object file, fetched lazily from its SectionSource: whole, or range by range where the
// file is read that way (.debug_info and the sections named), each range read once.
// Tests: test/unit/core/dwarf/unit.test.ts, test/unit/core/dwarf/unreadInfo.test.ts
import type { SectionSource } from '../binary/sections';
import type { ByteReader } from '../binary/byteReader';
import { DwarfFormatError, dwarfReader } from './format';

const INFO = '.debug_info';

/** The sections of one object file, fetched lazily. */
export class Sections {
  private readonly got = new Map<string, Uint8Array | undefined>();
  readonly le: boolean;
  readonly addressSize: number;
  /** Type-unit signature → offset of its type DIE (DW_FORM_ref_sig8 targets), filled by parseUnits. */
  readonly typeBySignature = new Map<bigint, number>();
  /** The sections read range by range where the file is (SectionSource.unread): .debug_info, and those named. */
  private readonly byRange: ReadonlySet<string>;
  constructor(
    private readonly src: SectionSource,
    /** Relocatable objects (.o) have real code at address 0; in linked files 0 marks discarded code. */
    readonly zeroIsCode = false,
    /** Other sections its readers read where they are (the list sections: lists.ts names them). */
    byRange: readonly string[] = [],
  ) {
    this.le = src.littleEndian;
    this.addressSize = src.addressSize;
    this.byRange = new Set([INFO, ...byRange]);
  }
  /** Reads [start, end) of a section got unread (see fill); none for the others. */
  private readonly fills = new Map<string, (start: number, end: number) => void>();

  /** The sections got unread whose every byte has been read since (fill is then nothing to do). */
  private readonly whole = new Set<string>();

  /**
   * A section's bytes. `.debug_info` and the list sections of a file read range by range come unread: a reader
   * of them reads the range it reads first (fill: Unit.reader does for its unit, parseUnits for each header and
   * root DIE; readAt and readerOver for a list), and reader() reads the whole section.
   */
  get(name: string): Uint8Array | undefined {
    if (!this.got.has(name)) this.got.set(name, name === INFO ? this.infoAndTypes() : this.load(name));
    return this.got.get(name);
  }

  private load(name: string): Uint8Array | undefined {
    const unread = this.byRange.has(name) ? this.src.unread?.(name) : undefined;
    if (!unread) return this.src.section(name);
    this.fills.set(name, (start, end) => unread.ensure(start, end));
    return unread.bytes;
  }

  /** Makes [start, end) of a section hold its bytes (only a section got unread needs it). */
  fill(name: string, start: number, end: number): void {
    const read = this.whole.has(name) ? undefined : this.fills.get(name);
    if (!read) return;
    start = Math.max(0, start);
    end = Math.min(end, this.got.get(name)?.length ?? 0);
    if (end > start) read(start, end);
  }

  /**
   * `read` over a reader of section `name` standing at `at`. Where the section came unread, the reader ends
   * `window` bytes on at first (those are read), and a read past that (a DwarfFormatError) runs `read` again
   * over 16 times as many, up to the section's end, where its reader is reader()'s: `read` keeps nothing from a
   * failed run, and what it gives or throws is what it would over the whole section.
   */
  readAt<T>(name: string, at: number, read: (r: ByteReader) => T, window = 1024): T {
    const b = this.get(name);
    if (!b) throw new DwarfFormatError(name, at, 'section is missing');
    if (!this.fills.has(name) || this.whole.has(name)) return read(this.reader(name, at));
    for (let w = window; ; w *= 16) {
      const end = Math.min(b.length, at + w);
      this.fill(name, at, end);
      const r = dwarfReader(b, name, this.le, 0, end);
      r.seek(at);
      if (end === b.length) return read(r);
      try {
        return read(r);
      } catch (e) {
        if (!(e instanceof DwarfFormatError)) throw e;
      }
    }
  }

  /**
   * A reader over the whole of section `name` at `at` with only [at, end) read: for a reader that reads no
   * further than `end` whatever the bytes say (reader() reads the whole of a section got unread).
   */
  readerOver(name: string, at: number, end: number): ByteReader {
    const b = this.get(name);
    if (!b) throw new DwarfFormatError(name, at, 'section is missing');
    this.fill(name, at, end);
    const r = dwarfReader(b, name, this.le);
    r.seek(at);
    return r;
  }

  /** Whether the section came unread (fill() reads its ranges). */
  unread(name: string): boolean {
    return this.fills.has(name);
  }

  /** Where DWARF 4 .debug_types begins in the combined .debug_info offset space (Infinity: no such section). */
  typesStart = Infinity;

  // DWARF 4 type units (.debug_types) have DIE offsets that collide with .debug_info's. Appending them to
  // .debug_info gives every DIE one unique offset, so references, caches and type-signature lookups need no
  // second offset space. The copy is made only for the (rare) binaries built with -fdebug-types-section.
  private infoAndTypes(): Uint8Array | undefined {
    const types = this.src.section('.debug_types');
    const unread = !types?.length ? this.src.unread?.(INFO) : undefined;
    if (unread) {
      this.fills.set(INFO, (start, end) => unread.ensure(start, end));
      return unread.bytes;
    }
    const info = this.src.section(INFO);
    if (!types || types.length === 0) return info;
    const all = new Uint8Array((info?.length ?? 0) + types.length);
    if (info) all.set(info);
    all.set(types, info?.length ?? 0);
    this.typesStart = info?.length ?? 0;
    return all;
  }
  reader(name: string, at = 0): ByteReader {
    const b = this.get(name);
    if (!b) throw new DwarfFormatError(name, at, 'section is missing');
    if (this.fills.has(name) && !this.whole.has(name)) {
      this.fill(name, 0, b.length);
      this.whole.add(name);
    }
    const r = dwarfReader(b, name, this.le);
    r.seek(at);
    return r;
  }
}

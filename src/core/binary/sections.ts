// The seam between the ELF container and the DWARF reader: the DWARF code sees only named, already
// decompressed section bytes, so it never knows whether they came from the executable, a separate debug
// file, a zlib/zstd SHF_COMPRESSED section or a legacy .zdebug_* one.
// Tests: test/unit/core/binary/compressed.test.ts, test/unit/core/dwarf/unit.test.ts, test/unit/core/binary/fileBytes.test.ts

export interface SectionSource {
  /** Decompressed contents of the named section (".debug_info", ".debug_line"…), or undefined if absent. */
  section(name: string): Uint8Array | undefined;
  /**
   * Where the file is read range by range (ElfFile.open): the named section as stored, not read yet, when it is
   * stored uncompressed; its reader reads a range with `ensure(start, end)` (section offsets) before using it.
   * Undefined (the function, or its result) where only section() gives the contents.
   */
  unread?(name: string): { bytes: Uint8Array; ensure(start: number, end: number): void } | undefined;
  /** Byte order of the object file. */
  readonly littleEndian: boolean;
  /** Size of a target address in bytes (ELF class). */
  readonly addressSize: 4 | 8;
}

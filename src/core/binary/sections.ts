// The seam between the ELF container and the DWARF reader: the DWARF code sees only named, already
// decompressed section bytes, so it never knows whether they came from the executable, a separate debug
// file, a zlib/zstd SHF_COMPRESSED section or a legacy .zdebug_* one.
// Tests: test/unit/core/binary/compressed.test.ts, test/unit/core/dwarf/unit.test.ts

export interface SectionSource {
  /** Decompressed contents of the named section (".debug_info", ".debug_line"…), or undefined if absent. */
  section(name: string): Uint8Array | undefined;
  /** Byte order of the object file. */
  readonly littleEndian: boolean;
  /** Size of a target address in bytes (ELF class). */
  readonly addressSize: 4 | 8;
}

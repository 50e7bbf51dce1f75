// The public surface of the ELF layer. Everything else reads binaries through these names.
// Tests: test/unit/core/probes/returns.test.ts
export { openBinary, BinaryImage, type OpenBinaryOptions } from './binaryImage';
export { ElfFile, type Arch, type ElfType, type ElfSection, type ElfSegment, type DebugLink } from './elfFile';
export {
  findDebugFile,
  SYSTEM_DEBUG_DIR,
  type DebugLookupOptions,
  type DebugLookupResult,
  type DebugCandidate,
  type DebugVia,
} from './debugFile';
export { NotElfError, ElfFormatError, UnsupportedArchError, DebugFileMismatchError, isBinaryFormatError } from './errors';
export type { FunctionSymbol, SymbolGroup, SymbolBinding } from './symbols';
export { parseUsdtArgs, type UsdtProbe, type UsdtArg, type UsdtOperand } from './usdt';
export type { GoInfo, GoAbi } from './goinfo';
export type { SectionSource } from './sections';
export { hex } from './byteReader';
export { crc32 } from './crc32';

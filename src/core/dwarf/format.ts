// What every DWARF decoder here shares: its error, its byte reader (the binary layer's ByteReader, throwing
// DwarfFormatError), the addresses that mark discarded code, and string-section lookups.
import { readFoldedAddress } from '../binary/addressFold';
import { ByteReader, decodeString, type FormatErrorOf } from '../binary/byteReader';

export { addressBig, addressNumber, foldAddress, KERNEL_FOLD } from '../binary/addressFold';

export class DwarfFormatError extends Error {
  constructor(
    readonly section: string,
    readonly offset: number,
    readonly what: string,
  ) {
    super(
      `malformed DWARF in ${section} at offset 0x${offset.toString(16)}: ${what}; the debug info is damaged or ` +
        `produced by an unsupported compiler — rebuild with -g, or report the binary`,
    );
    this.name = 'DwarfFormatError';
  }
}

const dwarfFormatError: FormatErrorOf = (section, offset, what) => new DwarfFormatError(section, offset, what);

/** A reader over [start, end) of a DWARF section whose failed reads throw DwarfFormatError naming `section`. */
export function dwarfReader(buf: Uint8Array, section: string, le: boolean, start = 0, end = buf.length): ByteReader {
  return new ByteReader(buf, le, section, dwarfFormatError, start, end);
}

/** Addresses at or above 2^53 (the -1/-2 tombstones of discarded sections) are not real code addresses. */
export const MAX_ADDRESS = 2 ** 53;
export function isTombstone(addr: number): boolean {
  return addr >= MAX_ADDRESS;
}

/** Reads a DWARF address of `size` bytes (an 8-byte one folded: see KERNEL_FOLD in binary/addressFold.ts). */
export function readAddress(r: ByteReader, size: number): number {
  return size === 8 ? readFoldedAddress(r, 8) : r.uN(size);
}

/**
 * An address that marks code the linker discarded: the -1/-2 tombstones (lld, newer binutils), their 32-bit
 * forms, and 0 — what older linkers resolve a discarded section's relocation to. 0 is real code only in a
 * relocatable object (.o), hence `zeroIsCode`.
 */
export function isDeadAddress(addr: number, addrSize: number, zeroIsCode: boolean): boolean {
  return (addr === 0 && !zeroIsCode) || addr >= MAX_ADDRESS || (addrSize === 4 && addr >= 0xfffffff0);
}

// Names repeat (every `int`, every parameter called `p`): string-section lookups are memoised per buffer.
const stringCache = new WeakMap<Uint8Array, Map<number, string>>();

/** NUL-terminated string at `offset` of a string section (.debug_str, .debug_line_str). */
export function stringAt(buf: Uint8Array | undefined, section: string, offset: number): string {
  if (!buf || offset < 0 || offset >= buf.length) throw new DwarfFormatError(section, offset, 'string offset out of range');
  let cache = stringCache.get(buf);
  if (!cache) stringCache.set(buf, (cache = new Map()));
  const hit = cache.get(offset);
  if (hit !== undefined) return hit;
  const nul = buf.indexOf(0, offset);
  if (nul < 0) throw new DwarfFormatError(section, offset, 'unterminated string');
  const s = decodeString(buf, offset, nul);
  cache.set(offset, s);
  return s;
}

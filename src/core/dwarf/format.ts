// What every DWARF decoder here shares: its error, its byte reader (the binary layer's ByteReader, throwing
// DwarfFormatError), the addresses that mark discarded code, and string-section lookups.
import { ByteReader, decodeString, type FormatErrorOf } from '../binary/byteReader';

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

/**
 * A Linux kernel's code lies in the top 4 GiB of the 64-bit space (0xffffffff80000000 up: the image, its modules),
 * far above 2^53, where a double is exact only to 2048 bytes. The DWARF decoders keep addresses as numbers, so an
 * 8-byte address whose high word is all ones is folded into [2^53 - 2^32, 2^53): exact, below every tombstone and
 * above any user-space address (x86-64 and AArch64 user space end below 2^52), its order and distances kept. The
 * index and the compiler work in bigints and cross with addressBig/addressNumber. The top 16 values stay the
 * tombstones they are (-1, -2: discarded code).
 */
export const KERNEL_FOLD = 2 ** 53 - 2 ** 32;
const FOLD_DELTA = 0xffffffff00000000n - BigInt(KERNEL_FOLD);
const TOMBSTONES = 0xfffffff0;

/** An 8-byte address from its two 32-bit words, folded when it is a kernel address (see KERNEL_FOLD). */
export function foldAddress(hi: number, lo: number): number {
  if (hi === 0xffffffff && lo < TOMBSTONES) return KERNEL_FOLD + lo;
  return hi * 2 ** 32 + lo;
}

/** Reads a DWARF address of `size` bytes (an 8-byte one folded: see KERNEL_FOLD). */
export function readAddress(r: ByteReader, size: number): number {
  if (size !== 8) return r.uN(size);
  const a = r.u32(),
    b = r.u32();
  return r.le ? foldAddress(b, a) : foldAddress(a, b);
}

/** The true address of a DWARF address number (a folded kernel address unfolded). */
export function addressBig(n: number): bigint {
  return n >= KERNEL_FOLD && n < MAX_ADDRESS ? BigInt(n) + FOLD_DELTA : BigInt(n);
}

/** A true address as the DWARF decoders' number (a kernel address folded). */
export function addressNumber(a: bigint): number {
  return a >= 0xffffffff00000000n && a < 0xffffffff00000000n + BigInt(TOMBSTONES) ? Number(a - FOLD_DELTA) : Number(a);
}
export function isTombstone(addr: number): boolean {
  return addr >= MAX_ADDRESS;
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

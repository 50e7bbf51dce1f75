// Kernel addresses as exact numbers. A Linux kernel's code lies in the top 4 GiB of the 64-bit space
// (0xffffffff80000000 up: the image, its modules), far above 2^53, where a double is exact only to 2048 bytes. The
// DWARF and call-frame decoders keep addresses as numbers, so an 8-byte address whose high word is all ones is
// folded into [2^53 - 2^32, 2^53): exact, below every tombstone and above any user-space address (x86-64 and AArch64
// user space end below 2^52), its order and distances kept. The index and the compiler work in bigints and cross
// with addressBig/addressNumber. The top 16 values stay the tombstones they are (-1, -2: discarded code).
// Tests: test/unit/core/dwarf/format.test.ts, test/unit/core/unwind/cfi.test.ts
import type { ByteReader } from './byteReader';

export const KERNEL_FOLD = 2 ** 53 - 2 ** 32;
const FOLD_DELTA = 0xffffffff00000000n - BigInt(KERNEL_FOLD);
const MAX_ADDRESS = 2 ** 53;
const TOMBSTONES = 0xfffffff0;
const FOLD_START = 0xffffffff00000000n;
const FOLD_END = FOLD_START + BigInt(TOMBSTONES);

/** An 8-byte address from its two 32-bit words, folded when it is a kernel address (see KERNEL_FOLD). */
export function foldAddress(hi: number, lo: number): number {
  if (hi === 0xffffffff && lo < TOMBSTONES) return KERNEL_FOLD + lo;
  return hi * 2 ** 32 + lo;
}

/** The true address of a DWARF address number (a folded kernel address unfolded). */
export function addressBig(n: number): bigint {
  return n >= KERNEL_FOLD && n < MAX_ADDRESS ? BigInt(n) + FOLD_DELTA : BigInt(n);
}

/** A true address as the DWARF decoders' number (a kernel address folded). */
export function addressNumber(a: bigint): number {
  // The bounds are constants: a symbol merge asks this for every function symbol of a kernel (46,000).
  return a >= FOLD_START && a < FOLD_END ? Number(a - FOLD_DELTA) : Number(a);
}

/** Reads an 8-byte address folded (see KERNEL_FOLD), or a 4-byte one as it is. */
export function readFoldedAddress(r: ByteReader, size: 4 | 8): number {
  if (size !== 8) return r.u32();
  const a = r.u32(),
    b = r.u32();
  return r.le ? foldAddress(b, a) : foldAddress(a, b);
}

// Strings shown only by their beginning: a C string the kernel could not read whole is rebuilt from its hidden
// head words (see withStringHeads in the compiler), and the names of such arguments travel with the hit (Hit.cut).
import type { CompiledProbe } from '../probes/compiler';
import type { HitValue } from '../tracefs/hitParser';

/**
 * A string's first bytes from its hidden head words (`x64[8]`, little-endian), when they hold no NUL: the
 * string goes on past them (a NUL among them means a short string whose fetch faulted: left a fault). Whole
 * UTF-8 characters only.
 */
export function stringHead(words: HitValue | undefined): string | undefined {
  if (!Array.isArray(words) || words.length === 0) return undefined;
  const bytes = Buffer.alloc(words.length * 8);
  for (let i = 0; i < words.length; i++) {
    const w = words[i];
    if (typeof w !== 'string' && typeof w !== 'number') return undefined;
    bytes.writeBigUInt64LE(BigInt.asUintN(64, BigInt(w)), i * 8);
  }
  if (bytes.includes(0)) return undefined;
  let end = bytes.length;
  // Drop a character the head cuts in two: back up over continuation bytes to its lead byte, and drop that too
  // unless the sequence is complete.
  let k = end - 1;
  while (k > end - 4 && k > 0 && (bytes[k] & 0xc0) === 0x80) k--;
  const lead = bytes[k];
  const need = lead >= 0xf0 ? 4 : lead >= 0xe0 ? 3 : lead >= 0xc0 ? 2 : 1;
  if (end - k < need) end = k;
  return bytes.subarray(0, end).toString('utf8');
}

/** The same list object for the same cut names of one probe (the panel's batches collapse notes by identity). */
const cutLists = new WeakMap<CompiledProbe, Map<string, string[]>>();
export function internCut(probe: CompiledProbe, names: string[]): string[] {
  let m = cutLists.get(probe);
  if (!m) cutLists.set(probe, (m = new Map()));
  const key = names.join('\0');
  let l = m.get(key);
  if (!l) m.set(key, (l = names));
  return l;
}

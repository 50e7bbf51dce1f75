// Inlined copies written as instruction bytes at one address, the shared vocabulary of the entry analysis's tests.
import type { findInlinedEntries, InlinedEntryQuery } from '../../../../src/core/probes/inlinedEntries';

export const B = 0x401000n;
export const bytes = (...b: number[]) => new Uint8Array(b);

/** One host range at B entered at B; copies as [entry, [[lo, hi]…]] offsets. */
export function query(code: Uint8Array, copies: Array<[number, Array<[number, number]>]>): InlinedEntryQuery {
  return {
    arch: 'x86_64',
    host: [{ start: B, bytes: code }],
    hostEntry: B,
    copies: copies.map(([entry, ranges]) => ({
      entry: B + BigInt(entry),
      ranges: ranges.map(([lo, hi]) => [B + BigInt(lo), B + BigInt(hi)]),
    })),
  };
}
export const site = (offset: number, copy: number) => ({ address: B + BigInt(offset), copy });
export const addrs = (r: ReturnType<typeof findInlinedEntries>) => (r.ok ? r.entries.map((e) => Number(e.address - B)) : r);

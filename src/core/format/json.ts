// JSON value rules shared by the CLI and the extension (contracts.md): integers as numbers only while exact
// (|v| < 2^53), otherwise decimal strings; addresses, offsets and pointers as "0x…" hex strings.

const LIMIT = 2n ** 53n;

export function jsonInteger(v: number | bigint): number | string {
  if (typeof v === 'number') {
    if (!Number.isInteger(v)) throw new RangeError(`not an integer: ${v}`);
    return Math.abs(v) < 2 ** 53 ? v : BigInt(v).toString();
  }
  return v < LIMIT && v > -LIMIT ? Number(v) : v.toString();
}

export function hexAddress(v: number | bigint): string {
  if (typeof v === 'number' && (!Number.isInteger(v) || v < 0)) throw new RangeError(`not an address: ${v}`);
  if (typeof v === 'bigint' && v < 0n) throw new RangeError(`not an address: ${v}`);
  return `0x${v.toString(16)}`;
}

/** JSON.stringify that writes bigint values by the rules above instead of throwing. */
export function toJson(value: unknown, indent?: number): string {
  return JSON.stringify(value, (_k, v) => (typeof v === 'bigint' ? jsonInteger(v) : v), indent);
}

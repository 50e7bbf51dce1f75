// Typing of fetcharg values as trace_pipe prints them, per contracts' JSON rules: integers as numbers when
// |v| < 2^53, else decimal strings; hex types (x8…x64) as "0x…" strings; strings as they are; `(fault)` as null.
export type HitValue = number | string | null | HitValue[];

const SAFE = 2n ** 53n;
const INT = /^-?\d+$/;
const HEX_TYPE = /^x\d+$/;

/** A decimal integer text as a JSON number when exactly representable, otherwise as its decimal string. */
export function jsonInteger(text: string): number | string {
  // Up to 15 digits is always below 2^53: skip BigInt on the hot path.
  if (text.length <= 15) return Number(text);
  const v = BigInt(text);
  return v < SAFE && v > -SAFE ? Number(v) : v.toString();
}

export function parseTypedValue(raw: string | null, type: string): HitValue {
  if (raw === null) return null;
  const arr = type.endsWith(']') ? /^(.+)\[(\d+)\]$/.exec(type) : null;
  if (arr && raw.startsWith('{') && raw.endsWith('}')) {
    const inner = raw.slice(1, -1);
    return inner === '' ? [] : inner.split(',').map((x) => parseTypedValue(x, arr[1]));
  }
  if (type === 'string' || type === 'ustring' || type === 'symstr' || type === 'symbol') return raw;
  if (HEX_TYPE.test(type)) return /^0x[0-9a-fA-F]+$/.test(raw) ? `0x${raw.slice(2).toLowerCase()}` : raw;
  if (INT.test(raw)) return jsonInteger(raw);
  if (/^0x[0-9a-fA-F]+$/.test(raw)) return `0x${raw.slice(2).toLowerCase()}`;
  return raw;
}

// Typing of fetcharg values as trace_pipe prints them, per contracts' JSON rules: integers as numbers when
// |v| < 2^53, else decimal strings; hex types (x8…x64) as "0x…" strings; strings as they are; `(fault)` as null.
import type { HitValue } from '../../shared/hit';
import { jsonIntegerText } from '../../shared/hitJson';

export type { HitValue } from '../../shared/hit';

const INT = /^-?\d+$/;
const HEX_TYPE = /^x\d+$/;

export function parseTypedValue(raw: string | null, type: string): HitValue {
  if (raw === null) return null;
  const arr = type.endsWith(']') ? /^(.+)\[(\d+)\]$/.exec(type) : null;
  if (arr && raw.startsWith('{') && raw.endsWith('}')) {
    const inner = raw.slice(1, -1);
    return inner === '' ? [] : inner.split(',').map((x) => parseTypedValue(x, arr[1]));
  }
  if (type === 'string' || type === 'ustring' || type === 'symstr' || type === 'symbol') return raw;
  if (HEX_TYPE.test(type)) return /^0x[0-9a-fA-F]+$/.test(raw) ? `0x${raw.slice(2).toLowerCase()}` : raw;
  if (INT.test(raw)) return jsonIntegerText(raw);
  if (/^0x[0-9a-fA-F]+$/.test(raw)) return `0x${raw.slice(2).toLowerCase()}`;
  return raw;
}

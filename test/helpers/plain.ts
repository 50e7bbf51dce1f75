import { isNameRecord } from '../../src/shared/names';

// The engine's maps keyed by names from outside inherit nothing (src/shared/names.ts); node's deepStrictEqual
// compares prototypes, so a test that compares one with a literal compares `plainData(value)`: the same data with
// Object.prototype, as a JSON reader would see it.
export function plainData<T>(value: T): T {
  if (Array.isArray(value)) return value.map((v: unknown) => plainData(v)) as T;
  if (value === null || typeof value !== 'object') return value;
  const proto = Object.getPrototypeOf(value) as unknown;
  if (proto !== null && proto !== Object.prototype && !isNameRecord(value)) return value;
  const out: Record<string, unknown> = {};
  for (const k of Object.keys(value))
    Object.defineProperty(out, k, {
      value: plainData((value as Record<string, unknown>)[k]),
      enumerable: true,
      writable: true,
      configurable: true,
    });
  return out as T;
}

// Names from outside (functions, arguments, hosts, comm values, spec text) can be `__proto__` or `constructor`, so
// a record keyed by them inherits nothing: every key is data and a name it lacks reads as undefined. The lint rule
// `probelens/name-records` (eslint.config.mjs) refuses any other object used as a map.

/**
 * The prototype of every name record: an object with no prototype and no members, frozen. A record made from it
 * inherits nothing, yet keeps V8's fast properties, which Object.create(null) gives up for a dictionary (about 6×
 * slower to make, on every hit's arguments).
 */
const NAMES = Object.freeze(Object.create(null) as object);

/** Whether `value`'s prototype is a name record's (it inherits nothing). */
export function isNameRecord(value: object): boolean {
  return Object.getPrototypeOf(value) === NAMES;
}

/** A record that inherits nothing, optionally filled from entries or from another record's own keys. */
export function nameRecord<T>(from?: Iterable<readonly [string, T]> | Readonly<Record<string, T>>): Record<string, T> {
  const out = Object.create(NAMES) as Record<string, T>;
  if (!from) return out;
  if (Symbol.iterator in from) for (const [k, v] of from as Iterable<readonly [string, T]>) out[k] = v;
  else for (const k of Object.keys(from)) out[k] = (from as Readonly<Record<string, T>>)[k];
  return out;
}

/** `rec[key]` when `key` is one of its own keys: safe on records that came from JSON or another realm's clone. */
export function own<T>(rec: Readonly<Record<string, T>> | undefined, key: string): T | undefined {
  return rec !== undefined && Object.prototype.hasOwnProperty.call(rec, key) ? rec[key] : undefined;
}

/**
 * `value` with every plain object in it (JSON.parse's, a structured clone's) made a record that inherits nothing, so
 * the maps in data from a file, a child process or a webview message are read as maps.
 */
export function namesAsData<T>(value: T): T {
  if (Array.isArray(value)) {
    for (let i = 0; i < value.length; i++) value[i] = namesAsData(value[i]);
    return value;
  }
  if (value === null || typeof value !== 'object' || Object.getPrototypeOf(value) !== Object.prototype) return value;
  const out = Object.create(NAMES) as Record<string, unknown>;
  for (const k of Object.keys(value)) out[k] = namesAsData((value as Record<string, unknown>)[k]);
  return out as T;
}

/** JSON.parse whose objects inherit nothing (see namesAsData). */
export function parseJsonNames(text: string): unknown {
  return namesAsData(JSON.parse(text) as unknown);
}

// The per-unit cache beside the index cache: one file per DWARF unit's share of the index (its functions, code
// ranges and line table), named by the unit's key (unitReuse.ts: a hash of everything indexing the unit reads).
// A rebuilt binary has a new build-id, so its whole index is cold; its unchanged units are read from here.
//
// An entry is MAGIC, then the SHA-256 of the key and the payload, then the payload (v8-serialised). A file whose
// checksum does not match (a torn write, a disk error, a file renamed to another key) is removed and its unit
// indexed again, never used. Writes are atomic (temp file + rename: concurrent writers of one key write the same
// bytes, a reader sees one whole file or none); the directory is private like the index cache's (cache.ts), and
// bounded: past `maxBytes` the least recently used entries (a hit refreshes its mtime) are removed.
// Tests: test/unit/core/index/unitCache.test.ts, test/unit/core/index/unitReuse.test.ts
import { createHash } from 'node:crypto';
import { closeSync, fstatSync, readdirSync, readSync, statSync, unlinkSync, utimesSync } from 'node:fs';
import { join } from 'node:path';
import { deserialize, serialize } from 'node:v8';
import { ensureCacheDir, openPrivateFile, UnsafeCacheError, writeAtomically } from './cache';

const MAGIC = Buffer.from('PLUNIT1\n', 'latin1');
const SUM = 32;
const EXT = '.unit';
/** The default bound of the unit cache: a few builds' worth of the largest programs' units. */
export const UNIT_CACHE_MAX_BYTES = 512 * 1024 * 1024;
/** A larger file is not an entry this code wrote (no unit's share comes near it): never read whole. */
const MAX_ENTRY_BYTES = 256 * 1024 * 1024;

/** The unit cache's directory: `units` beside the index cache's entries. */
export function unitCacheDir(indexDir: string): string {
  return join(indexDir, 'units');
}

function checksum(key: string, payload: Uint8Array): Buffer {
  return createHash('sha256').update(key).update('\0').update(payload).digest();
}

/**
 * The value stored under `key`, or undefined when there is none or it is not sound (then the file is removed).
 * Throws UnsafeCacheError for a directory or entry someone else could have written.
 */
export function readUnitEntry(dir: string, key: string): unknown {
  const opened = openPrivateFile(dir, `${key}${EXT}`);
  if (!opened) return undefined;
  const { fd, file } = opened;
  let bytes: Buffer;
  try {
    const size = fstatSync(fd).size;
    if (size > MAX_ENTRY_BYTES) return undefined;
    bytes = Buffer.alloc(size);
    let at = 0;
    while (at < bytes.length) {
      const n = readSync(fd, bytes, at, bytes.length - at, at);
      if (n === 0) break;
      at += n;
    }
    if (at !== bytes.length) return undefined;
  } finally {
    closeSync(fd);
  }
  const payload = bytes.subarray(MAGIC.length + SUM);
  const sound =
    bytes.length > MAGIC.length + SUM &&
    bytes.subarray(0, MAGIC.length).equals(MAGIC) &&
    bytes.subarray(MAGIC.length, MAGIC.length + SUM).equals(checksum(key, payload));
  let value: unknown;
  try {
    value = sound ? deserialize(payload) : undefined;
  } catch {
    value = undefined;
  }
  if (value === undefined) {
    removeQuietly(file);
    return undefined;
  }
  try {
    // A hit is recent use: eviction removes the entries no build has asked for longest.
    const now = new Date();
    utimesSync(file, now, now);
  } catch {
    /* evicted meanwhile: the value read stays good */
  }
  return value;
}

/** Stores `value` under `key` atomically; the number of bytes written (0 when it could not be). */
export function writeUnitEntry(dir: string, key: string, value: unknown): number {
  const payload = serialize(value);
  return writeAtomically(dir, `${key}${EXT}`, [MAGIC, checksum(key, payload), payload]) ? MAGIC.length + SUM + payload.length : 0;
}

/** Creates the directory (private, as the index cache's); false when it cannot be. Throws UnsafeCacheError. */
export function prepareUnitCache(indexDir: string): boolean {
  try {
    ensureCacheDir(indexDir);
    ensureCacheDir(unitCacheDir(indexDir));
    return true;
  } catch (e) {
    if (e instanceof UnsafeCacheError) throw e;
    return false;
  }
}

/**
 * Keeps the directory under `maxBytes`: the least recently used entries go first, down to three quarters of it
 * (so the next builds do not each pay a sweep). Stale temp files of writers that died go too. The number removed.
 */
export function evictUnitEntries(dir: string, maxBytes = UNIT_CACHE_MAX_BYTES): number {
  let names: string[];
  try {
    names = readdirSync(dir);
  } catch {
    return 0;
  }
  const entries: Array<{ file: string; size: number; mtimeMs: number }> = [];
  let total = 0;
  const hourAgo = Date.now() - 3600_000;
  for (const n of names) {
    const file = join(dir, n);
    try {
      const st = statSync(file);
      if (n.endsWith('.tmp') && st.mtimeMs < hourAgo) removeQuietly(file);
      if (!n.endsWith(EXT) || !st.isFile()) continue;
      entries.push({ file, size: st.size, mtimeMs: st.mtimeMs });
      total += st.size;
    } catch {
      /* gone meanwhile */
    }
  }
  if (total <= maxBytes) return 0;
  entries.sort((a, b) => a.mtimeMs - b.mtimeMs);
  let removed = 0;
  for (const e of entries) {
    if (total <= maxBytes * 0.75) break;
    removeQuietly(e.file);
    total -= e.size;
    removed++;
  }
  return removed;
}

function removeQuietly(file: string): void {
  try {
    unlinkSync(file);
  } catch {
    /* already gone */
  }
}

// The on-disk index cache shared by the CLI and the extension (contracts.md):
// $XDG_CACHE_HOME/probelens/index/ (default ~/.cache/probelens/index/). Entries are keyed by GNU build-id, or by
// path + size + mtime for binaries without one, and written with v8.serialize: typed arrays and bigints
// round-trip exactly and load far faster than JSON (the line tables dominate the size).
import { createHash } from 'node:crypto';
import { mkdirSync, readFileSync, renameSync, statSync, writeFileSync, unlinkSync } from 'node:fs';
import { homedir } from 'node:os';
import { join } from 'node:path';
import { deserialize, serialize } from 'node:v8';

export function indexCacheDir(env: NodeJS.ProcessEnv = process.env): string {
  const base = env.XDG_CACHE_HOME && env.XDG_CACHE_HOME.startsWith('/') ? env.XDG_CACHE_HOME : join(homedir(), '.cache');
  return join(base, 'probelens', 'index');
}

export interface CacheKeyInput {
  buildId?: string;
  path: string;
  size: number;
  mtimeMs: number;
  /** Anything else the index depends on (format version, debug directories searched). */
  salt: string;
}

export function cacheKey(k: CacheKeyInput): string {
  const identity = k.buildId ? `build-id:${k.buildId}` : `file:${k.path}:${k.size}:${Math.trunc(k.mtimeMs)}`;
  return createHash('sha256').update(`${identity}\0${k.salt}`).digest('hex').slice(0, 40);
}

/** The cached value, or undefined when absent, unreadable or of another format (then it is rebuilt). */
export function readCache<T>(key: string, isValid: (v: unknown) => v is T, dir = indexCacheDir()): T | undefined {
  let buf: Buffer;
  try {
    buf = readFileSync(join(dir, `${key}.v8`));
  } catch {
    return undefined;
  }
  try {
    const v: unknown = deserialize(buf);
    return isValid(v) ? v : undefined;
  } catch {
    return undefined;
  }
}

/** Writes atomically (temp file + rename) so a concurrent reader never sees half an entry. Best effort. */
export function writeCache(key: string, value: unknown, dir = indexCacheDir()): boolean {
  const tmp = join(dir, `.${key}.${process.pid}.${Date.now()}.tmp`);
  try {
    mkdirSync(dir, { recursive: true });
    writeFileSync(tmp, serialize(value));
    renameSync(tmp, join(dir, `${key}.v8`));
    return true;
  } catch {
    try {
      unlinkSync(tmp);
    } catch {
      /* nothing to remove */
    }
    return false;
  }
}

export function fileIdentity(path: string): { size: number; mtimeMs: number } {
  const st = statSync(path);
  return { size: st.size, mtimeMs: st.mtimeMs };
}

// The on-disk index cache shared by the CLI and the extension (docs/contracts.md, caches):
// $XDG_CACHE_HOME/probelens/index/ (default ~/.cache/probelens/index/). Entries are keyed by GNU build-id, or by
// path + size + mtime for binaries without one; their bytes are container.ts's (raw typed-array columns a load reads
// as it needs them).
//
// An index decides where probes are placed — by root, on the target — so whoever can write the cache can make a
// session patch arbitrary code. The directories are therefore 0700 and the entries 0600 whatever the umask, and a
// directory owned by someone else or writable by group or others is refused rather than used.
import { createHash } from 'node:crypto';
import {
  chmodSync,
  closeSync,
  constants,
  fstatSync,
  lstatSync,
  mkdirSync,
  openSync,
  renameSync,
  statSync,
  unlinkSync,
  writeSync,
} from 'node:fs';
import { homedir } from 'node:os';
import { basename, dirname, join } from 'node:path';

/** An entry's file name after its key (container.ts lays out its bytes). */
const ENTRY = '.idx';

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

/** A cache directory or entry that someone other than this user could have written; it is never used. */
export class UnsafeCacheError extends Error {
  constructor(
    readonly path: string,
    why: string,
  ) {
    super(
      `refusing the index cache ${path}: ${why}; anyone who can write it decides where probes are placed. ` +
        `Remove it (rm -rf ${path}) or make it yours and private (chown, chmod 700), or pass --no-cache`,
    );
    this.name = 'UnsafeCacheError';
  }
}

const myUid = (): number | undefined => (typeof process.getuid === 'function' ? process.getuid() : undefined);

function checkOwned(path: string, st: { uid: number; mode: number }, kind: string): void {
  const uid = myUid();
  if (uid !== undefined && st.uid !== uid)
    throw new UnsafeCacheError(path, `the ${kind} is owned by uid ${st.uid}, not by you (uid ${uid})`);
  if (st.mode & 0o022)
    throw new UnsafeCacheError(path, `the ${kind} is writable by group or others (mode ${(st.mode & 0o777).toString(8)})`);
}

/**
 * Checks `dir` (and its parent when that is the `probelens` directory we create too) before use: a real directory,
 * ours, not writable by group or others; tightens one of ours that is merely readable by others (older versions
 * created them 0755) to 0700. Throws UnsafeCacheError; returns false when it does not exist (yet).
 */
export function checkCacheDir(dir: string): boolean {
  const parent = dirname(dir);
  for (const d of basename(parent) === 'probelens' ? [parent, dir] : [dir]) {
    let st;
    try {
      st = lstatSync(d);
    } catch {
      return false;
    }
    if (!st.isDirectory()) throw new UnsafeCacheError(d, st.isSymbolicLink() ? 'it is a symbolic link' : 'it is not a directory');
    checkOwned(d, st, 'directory');
    if (st.mode & 0o077) chmodSync(d, 0o700);
  }
  return true;
}

/** Creates `dir` (and the `probelens` directory above it) 0700 whatever the umask, then checks it as above. */
export function ensureCacheDir(dir: string): void {
  const parent = dirname(dir);
  for (const d of basename(parent) === 'probelens' ? [parent, dir] : [dir]) {
    try {
      mkdirSync(d, { recursive: true, mode: 0o700 });
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code !== 'EEXIST') throw e;
    }
  }
  checkCacheDir(dir);
}

/**
 * The entry's file, opened for reading (the caller closes `fd`), or undefined when there is none or it is not a
 * regular file (then it is rebuilt and renamed over). Throws UnsafeCacheError for a directory or entry someone else
 * could have written.
 */
export function openCacheEntry(key: string, dir = indexCacheDir()): { fd: number; file: string } | undefined {
  return openPrivateFile(dir, `${key}${ENTRY}`);
}

/**
 * `name` in the cache directory `dir`, opened for reading (the caller closes `fd`), or undefined when there is none
 * or it is not a regular file. Throws UnsafeCacheError for a directory or file someone else could have written.
 * Shared with the unit cache (unitCache.ts).
 */
export function openPrivateFile(dir: string, name: string): { fd: number; file: string } | undefined {
  if (!checkCacheDir(dir)) return undefined;
  const file = join(dir, name);
  let fd: number;
  try {
    // Never blocks (a FIFO opens at once) and never follows a link.
    fd = openSync(file, constants.O_RDONLY | constants.O_NONBLOCK | constants.O_NOCTTY | constants.O_NOFOLLOW);
  } catch {
    return undefined;
  }
  try {
    const st = fstatSync(fd);
    if (!st.isFile()) {
      closeSync(fd);
      return undefined;
    }
    checkOwned(file, st, 'entry');
  } catch (e) {
    closeSync(fd);
    if (e instanceof UnsafeCacheError) throw e;
    return undefined;
  }
  return { fd, file };
}

/**
 * Writes the entry's bytes (`chunks`, one after another) atomically (temp file + rename) so a concurrent reader
 * never sees half an entry, and one that has the old entry open keeps reading it whole; the entry is 0600. Best
 * effort, except that an unsafe directory throws UnsafeCacheError.
 */
export function writeCacheEntry(key: string, chunks: readonly Uint8Array[], dir = indexCacheDir()): boolean {
  try {
    ensureCacheDir(dir);
  } catch (e) {
    if (e instanceof UnsafeCacheError) throw e;
    return false;
  }
  if (!writeAtomically(dir, `${key}${ENTRY}`, chunks)) return false;
  // The same index as an earlier release wrote it (one v8-serialised file): never read again, so not kept.
  try {
    unlinkSync(join(dir, `${key}.v8`));
  } catch {
    /* none */
  }
  return true;
}

/**
 * Writes `chunks` to `name` in the existing cache directory `dir` atomically (a temp file, 0600, renamed over it);
 * false when it could not be (nothing is left behind). Shared with the unit cache (unitCache.ts).
 */
export function writeAtomically(dir: string, name: string, chunks: readonly Uint8Array[]): boolean {
  const tmp = join(dir, `.${name}.${process.pid}.${Date.now()}.${Math.random().toString(36).slice(2)}.tmp`);
  let fd: number | undefined;
  try {
    // `wx`: never follow or reuse something already at the temp name; chmod because the umask applies to `mode`.
    fd = openSync(tmp, 'wx', 0o600);
    for (const c of chunks) {
      let at = 0;
      while (at < c.byteLength) at += writeSync(fd, c, at, c.byteLength - at);
    }
    closeSync(fd);
    fd = undefined;
    chmodSync(tmp, 0o600);
    renameSync(tmp, join(dir, name));
    return true;
  } catch {
    if (fd !== undefined) closeSync(fd);
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

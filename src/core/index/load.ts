// Loading a binary's index: from the on-disk cache when its identity matches, else built (in a worker thread
// when asked, so an editor never blocks) and stored.
// Tests: test/unit/core/index/cacheColumns.test.ts, test/unit/core/index/openFile.test.ts, test/unit/cli/messages.test.ts
import { existsSync } from 'node:fs';
import { resolve } from 'node:path';
import { buildIndex, type BuildOptions } from './build';
import { BinaryIndex } from './binaryIndex';
import { cacheKey, indexCacheDir, openCacheEntry, writeCacheEntry } from './cache';
import { encodeContainer, openContainer, releaseContainer } from './container';
import { readBinaryIdentity } from './identity';
import { requireRegularFile } from '../binary/regularFile';
import { findDebugFile } from '../binary/debugFile';
import { cachedDebugFile, DebuginfodError, debuginfodRoot, debuginfodUrls, fetchDebugFile, type FetchProgress } from '../binary/debuginfod';
import { ElfFile } from '../binary/elfFile';
import { runWorkerJob, WorkerJobError } from './worker/client';
import type { IndexStored } from './worker/messages';
import {
  dwarfSizeOf,
  EDITOR_LIMIT_NAMES,
  IndexLimitError,
  MAX_TIME_LIMIT_SECONDS,
  scaledLimits,
  type IndexLimits,
  type LimitNames,
} from './worker/limits';
import { CODEC_VERSION, decodeIndex, encodeIndex, type EncodedIndex } from './codec';
import { INDEX_FORMAT, type IndexData } from './model';

export interface LoadOptions {
  /** Ignore and do not write the cache. */
  noCache?: boolean;
  /** Extra directories searched for separate debug files (before /usr/lib/debug). */
  debugDirs?: string[];
  /** debuginfod servers to fetch a stripped binary's debug file from (default: DEBUGINFOD_URLS). */
  debuginfodUrls?: string;
  /** Called as a debug file is fetched from a debuginfod server (bytes so far). */
  onDebugFetch?: (p: FetchProgress) => void;
  /**
   * Build in a worker thread, under a time and memory limit scaled to the binary's DWARF (the extension and
   * the CLI); in-process otherwise (tests, benchmarks), without limits.
   */
  inWorker?: boolean;
  /** Fixed limits instead of the scaled ones (a setting or an environment variable; 0 or absent = scaled). */
  limits?: Partial<IndexLimits>;
  /** What an error at a limit tells the user to raise (default: the editor's settings). */
  limitNames?: LimitNames;
  /** Threads indexing the DWARF of a cold build; absent or 0: sized to the machine and the binary. */
  workers?: number;
  /**
   * Needed now for one source file only (the editor's open file): a cached index is still returned whole, but
   * a cold build indexes only the units naming this file (BuildOptions.onlyFile) and is not cached.
   */
  onlyFile?: string;
  /** Cache directory override (tests). */
  cacheDir?: string;
  onProgress?: (message: string) => void;
}

export interface LoadedIndex {
  index: BinaryIndex;
  fromCache: boolean;
}

function keyFor(path: string, debugDirs: string[] | undefined): string {
  const id = readBinaryIdentity(path);
  // The build-id names the code; path and debug directories decide where its DWARF was found (a debug file
  // fetched later from debuginfod too: the index of the stripped file alone is another).
  const fetched = id.buildId && existsSync(cachedDebugFile(debuginfodRoot(), id.buildId)) ? '\0debuginfod' : '';
  return cacheKey({
    ...id,
    path,
    salt: `format ${INDEX_FORMAT} codec ${CODEC_VERSION}\0${path}\0${(debugDirs ?? []).join('\0')}${fetched}`,
  });
}

/**
 * A stripped binary whose debug file is nowhere here gets it from the debuginfod servers DEBUGINFOD_URLS names
 * (`debuginfodUrls` overrides), before the index looks for it; a refusal says each server's answer.
 */
async function fetchMissingDebugFile(path: string, opts: LoadOptions): Promise<void> {
  const urls = debuginfodUrls(opts.debuginfodUrls);
  if (urls.length === 0) return;
  const elf = ElfFile.open(path);
  try {
    const buildId = elf.buildId;
    if (elf.hasDebugInfo || !buildId) return;
    const found = await findDebugFile(elf, { debugDirs: opts.debugDirs, readOnDemand: true });
    found.debug?.close();
    if (found.debug) return;
    opts.onDebugFetch?.({ url: urls[0], bytes: 0 });
    try {
      await fetchDebugFile(buildId, urls, debuginfodRoot(), opts.onDebugFetch);
    } catch (e) {
      if (!(e instanceof DebuginfodError)) throw e;
      throw new DebuginfodError(`${path} has no DWARF debug information and no separate debug file was found here; ${e.message}`);
    }
  } finally {
    elf.close();
  }
}

export async function loadIndex(binaryPath: string, opts: LoadOptions = {}): Promise<LoadedIndex> {
  const path = resolve(binaryPath);
  // Before anything opens it: a FIFO, device, directory or link loop is refused in one sentence, never waited on.
  requireRegularFile(path);
  await fetchMissingDebugFile(path, opts);
  const key = opts.noCache ? undefined : keyFor(path, opts.debugDirs);
  if (key) {
    const cached = openEntry(key, opts.cacheDir);
    if (cached && isCurrent(path, cached)) return { index: new BinaryIndex(decodeIndex(cached)), fromCache: true };
    if (cached) releaseContainer(cached);
  }
  // A cold build of the whole binary reuses the units an earlier build of it (or of any binary) left unchanged.
  const unitCacheDir = key && opts.onlyFile === undefined ? (opts.cacheDir ?? indexCacheDir()) : undefined;
  // A whole index built in a worker is stored there and opened here as a cached one is (see storeIndex).
  const storeAs = opts.inWorker && key && opts.onlyFile === undefined ? key : undefined;
  let data: IndexData;
  try {
    const built = opts.inWorker
      ? await buildInWorker(path, { ...opts, unitCacheDir, cacheKey: storeAs })
      : await buildIndex(path, {
          debugDirs: opts.debugDirs,
          workers: opts.workers,
          onlyFile: opts.onlyFile,
          onProgress: opts.onProgress,
          unitCacheDir,
        });
    if (!('stored' in built)) data = built;
    else {
      const stored = storeAs === undefined ? undefined : openEntry(storeAs, opts.cacheDir);
      if (stored) return { index: new BinaryIndex(decodeIndex(stored)), fromCache: false };
      // Gone between the worker's write and this open (another process's cleanup): built again, by copy, and
      // returned uncached.
      data = (await buildInWorker(path, { ...opts, unitCacheDir })) as IndexData;
    }
  } catch (e) {
    throw namingFile(e, path);
  }
  // An index of one file's units is never cached: the next load must not take it for the whole. One the worker was
  // asked to store and sent back could not be stored: not tried again.
  const encoded = key && data.onlyFile === undefined && storeAs === undefined ? encodeIndex(data) : undefined;
  if (key && encoded) writeCacheEntry(key, encodeContainer(encoded), opts.cacheDir);
  return { index: new BinaryIndex(data), fromCache: false };
}

/** The cache entry `key`, opened and checked (openContainer); undefined when there is none or it is unsound. */
function openEntry(key: string, dir: string | undefined): EncodedIndex | undefined {
  const entry = openCacheEntry(key, dir);
  return entry && openContainer(entry.fd, entry.file);
}

/** Every message says which file it is about: a failure deep in a section ("malformed DWARF in…") gets the path. */
function namingFile(e: unknown, path: string): unknown {
  if (e instanceof Error && !e.message.includes(path)) e.message = `${path}: ${e.message}`;
  return e;
}

/** Whether a sound entry (openContainer checked it) is of this binary as it is now. */
function isCurrent(path: string, v: EncodedIndex): boolean {
  if (v.meta.path !== path) return false;
  const id = readBinaryIdentity(path);
  // A binary rebuilt without a build-id keeps its path: size and mtime tell the builds apart.
  return v.meta.buildId !== undefined ? v.meta.buildId === id.buildId : v.meta.size === id.size && v.meta.mtimeMs === id.mtimeMs;
}

/** The limits a build of `path` runs under: the fixed ones given, else scaled to its DWARF. */
export async function indexLimitsFor(
  path: string,
  opts: Pick<LoadOptions, 'limits' | 'debugDirs'> = {},
): Promise<IndexLimits & { dwarfBytes: number }> {
  const dwarfBytes = await dwarfSizeOf(path, opts.debugDirs);
  const scaled = scaledLimits(dwarfBytes);
  return {
    dwarfBytes,
    timeLimitSeconds: Math.min(MAX_TIME_LIMIT_SECONDS, opts.limits?.timeLimitSeconds || scaled.timeLimitSeconds),
    memoryLimitMb: opts.limits?.memoryLimitMb || scaled.memoryLimitMb,
  };
}

async function buildInWorker(path: string, opts: BuildOptions & LoadOptions & { cacheKey?: string }): Promise<IndexData | IndexStored> {
  const l = await indexLimitsFor(path, opts);
  const names = opts.limitNames ?? EDITOR_LIMIT_NAMES;
  const memory = () => new IndexLimitError(path, 'memory', l.memoryLimitMb, l.dwarfBytes, names.memory);
  try {
    // Helper workers get the same heap limit as the coordinator.
    return await runWorkerJob(
      {
        kind: 'index',
        path,
        debugDirs: opts.debugDirs,
        workers: opts.workers,
        onlyFile: opts.onlyFile,
        memoryLimitMb: l.memoryLimitMb,
        unitCacheDir: opts.unitCacheDir,
        cacheKey: opts.cacheKey,
        cacheDir: opts.cacheDir,
      },
      opts.onProgress,
      {
        timeLimitMs: l.timeLimitSeconds * 1000,
        memoryLimitMb: l.memoryLimitMb,
        onLimit: (kind) => (kind === 'time' ? new IndexLimitError(path, 'time', l.timeLimitSeconds, l.dwarfBytes, names.time) : memory()),
      },
    );
  } catch (e) {
    if (e instanceof WorkerJobError && e.errorName === 'IndexHelperMemoryError') throw memory();
    throw e;
  }
}

// The DWARF half of a cold index on every core: the coordinator (the index worker, or the caller in tests and
// benchmarks) indexes share 0 itself while a helper worker thread indexes each other share; the shares are
// merged in part order, so the index is the same whatever the pool size (test/unit/core/index/pool.test.ts).
// Tests: test/unit/core/index/worker/pool.test.ts, test/unit/core/index/unitReuse.test.ts
import { availableParallelism } from 'node:os';
import type { BinaryImage, OpenBinaryOptions } from '../../binary/binaryImage';
import type { Dwarf } from '../../dwarf';
import { dwarfSlice, dwarfUnitSlices, type DwarfSlice, type UnitSlice } from '../fromDwarf';
import { runWorkerJob } from './client';

/** Below this much `.debug_info` a helper's start-up (and its own function pass) costs more than it saves. */
export const PARALLEL_MIN_DEBUG_INFO_BYTES = 4 * 1024 * 1024;
/** Each helper pays a fixed cost (its start, reading the file, every unit header, the symbol table, cloning its share back; ≈ 1.7 s CPU and 95 MiB on postgres): past this many it stops paying. */
export const MAX_INDEX_WORKERS = 4;

/**
 * How many threads index a binary with `debugInfoBytes` of (decompressed) `.debug_info`: `requested` when given
 * (a setting, PROBELENS_INDEX_WORKERS, a test), else one per core up to MAX_INDEX_WORKERS for a binary large
 * enough to gain from it, and one otherwise.
 */
export function indexWorkerCount(debugInfoBytes: number, requested?: number): number {
  if (requested !== undefined && requested > 0) return Math.floor(requested);
  if (debugInfoBytes < PARALLEL_MIN_DEBUG_INFO_BYTES) return 1;
  return Math.max(1, Math.min(availableParallelism(), MAX_INDEX_WORKERS, Math.ceil(debugInfoBytes / PARALLEL_MIN_DEBUG_INFO_BYTES)));
}

export class IndexHelperMemoryError extends Error {
  constructor() {
    super('an index helper worker ran out of memory');
    this.name = 'IndexHelperMemoryError';
  }
}

/**
 * Every share of the DWARF half of `image`'s index, in part order: share 0 here, the others in helper workers
 * (each opens the binary and the same debug file itself, under the heap limit `memoryLimitMb` when given).
 */
export async function dwarfSlices(
  image: BinaryImage,
  parts: number,
  opts: OpenBinaryOptions & { memoryLimitMb?: number } = {},
): Promise<DwarfSlice[]> {
  if (parts <= 1) return [dwarfSlice(image, 0, 1)];
  const abort = new AbortController();
  const debugFile = image.debugPath !== undefined && image.debugPath !== image.elf.path ? image.debugPath : undefined;
  const helpers = Array.from({ length: parts - 1 }, (_, i) =>
    runWorkerJob(
      {
        kind: 'slice',
        path: image.elf.path,
        debugDirs: opts.debugDirs,
        debugFile: debugFile ?? opts.debugFile,
        noSystemDebugDir: opts.noSystemDebugDir,
        part: i + 1,
        parts,
      },
      undefined,
      {
        memoryLimitMb: opts.memoryLimitMb,
        signal: abort.signal,
        onLimit: () => new IndexHelperMemoryError(),
      },
    ),
  );
  // Whichever fails first decides; the others are stopped rather than left running.
  for (const h of helpers)
    h.catch(() => {
      abort.abort();
    });
  try {
    const own = dwarfSlice(image, 0, parts);
    return [own, ...(await Promise.all(helpers))];
  } catch (e) {
    abort.abort();
    await Promise.allSettled(helpers);
    throw e;
  }
}

/**
 * One slice per unit of `units` (offset and byte size, in unit order), what dwarfUnitSlices() gives: the units are
 * cut into `parts` contiguous runs of about the same number of bytes, the first indexed here, each other in a
 * helper worker. Where references stay in units only.
 */
export async function dwarfUnitSlicesInPool(
  image: BinaryImage,
  units: ReadonlyArray<{ offset: number; size: number }>,
  parts: number,
  opts: OpenBinaryOptions & { memoryLimitMb?: number } = {},
  /** The image's Dwarf for the share indexed here (dwarfUnitSlices). */
  dw?: Dwarf,
): Promise<UnitSlice[]> {
  const total = units.reduce((n, u) => n + u.size, 0);
  const runs: number[][] = Array.from({ length: Math.max(1, Math.min(parts, units.length)) }, () => []);
  let before = 0;
  for (const u of units) {
    runs[Math.min(runs.length - 1, Math.floor((before * runs.length) / Math.max(1, total)))].push(u.offset);
    before += u.size;
  }
  if (runs.length <= 1) return dwarfUnitSlices(image, runs[0], dw);
  const abort = new AbortController();
  const debugFile = image.debugPath !== undefined && image.debugPath !== image.elf.path ? image.debugPath : undefined;
  const helpers = runs.slice(1).map((unitOffsets) =>
    runWorkerJob(
      {
        kind: 'units',
        path: image.elf.path,
        debugDirs: opts.debugDirs,
        debugFile: debugFile ?? opts.debugFile,
        noSystemDebugDir: opts.noSystemDebugDir,
        unitOffsets,
      },
      undefined,
      { memoryLimitMb: opts.memoryLimitMb, signal: abort.signal, onLimit: () => new IndexHelperMemoryError() },
    ),
  );
  for (const h of helpers)
    h.catch(() => {
      abort.abort();
    });
  try {
    const own = dwarfUnitSlices(image, runs[0], dw);
    return [...own, ...(await Promise.all(helpers)).flat()];
  } catch (e) {
    abort.abort();
    await Promise.allSettled(helpers);
    throw e;
  }
}

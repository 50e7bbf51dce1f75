// Worker-thread entry: the binary indexer runs here so the extension host never blocks on DWARF.
// IndexData crosses back by structured clone (bigints and typed arrays survive it).
// Tests: test/unit/core/index/worker/client.test.ts, test/unit/core/index/worker/pool.test.ts
import { getHeapStatistics } from 'node:v8';
import { parentPort } from 'node:worker_threads';
import { openBinary, type BinaryImage } from '../../binary/binaryImage';
import { buildIndex } from '../build';
import { dwarfSlice, dwarfUnitSlices, type DwarfSlice } from '../fromDwarf';
import type { IndexStored, WorkerRequest, WorkerResponse } from './messages';
import { writeCacheEntry } from '../cache';
import { encodeIndex } from '../codec';
import { encodeContainer } from '../container';
import type { IndexData } from '../model';
import { unreachable } from '../../../shared/unreachable';

async function handle(req: WorkerRequest): Promise<WorkerResponse> {
  switch (req.kind) {
    case 'ping':
      return { kind: 'ping', result: `pong ${req.text}` };
    case 'heapLimit':
      // The heap limit V8 applies in this worker, in MiB: what resourceLimits turned into.
      return { kind: 'heapLimit', result: getHeapStatistics().heap_size_limit / (1024 * 1024) };
    case 'index': {
      const data = await buildIndex(req.path, {
        debugDirs: req.debugDirs,
        workers: req.workers,
        onlyFile: req.onlyFile,
        memoryLimitMb: req.memoryLimitMb,
        unitCacheDir: req.unitCacheDir,
        onProgress: (progress) => parentPort?.postMessage({ progress }),
      });
      return { kind: 'index', result: (req.cacheKey !== undefined && storeIndex(data, req.cacheKey, req.cacheDir)) || data };
    }
    case 'slice': {
      const image = await openShared(req);
      try {
        return { kind: 'slice', result: { ...dwarfSlice(image, req.part, req.parts), fileReads: image.readMaps() } };
      } finally {
        image.close();
      }
    }
    case 'units': {
      const image = await openShared(req);
      try {
        return { kind: 'units', result: dwarfUnitSlices(image, req.unitOffsets) };
      } finally {
        image.close();
      }
    }
    default:
      return unreachable(req, 'index worker request');
  }
}

/**
 * Encodes a whole index and writes it as the cache entry `key` here, so the caller's thread (the extension host's,
 * the CLI's) neither receives a copy of every function nor encodes them: it opens the entry as a cached load does
 * (for vmlinux a 6 s stall of the caller's thread and a second copy of the index, before). Undefined when the index
 * cannot be stored (one of a single file, an encoding refused, the cache not writable): then it goes back by copy.
 */
function storeIndex(data: IndexData, key: string, dir: string | undefined): IndexStored | undefined {
  if (data.onlyFile !== undefined) return undefined;
  const encoded = encodeIndex(data);
  return encoded && writeCacheEntry(key, encodeContainer(encoded), dir) ? { stored: true } : undefined;
}

/** The binary a helper indexes a share of, read range by range as the coordinator reads it (build.ts). */
function openShared(req: { path: string; debugDirs?: string[]; debugFile?: string; noSystemDebugDir?: boolean }): Promise<BinaryImage> {
  return openBinary(req.path, {
    debugDirs: req.debugDirs,
    debugFile: req.debugFile,
    noSystemDebugDir: req.noSystemDebugDir,
    readOnDemand: true,
  });
}

parentPort?.once('message', (req: WorkerRequest) => {
  handle(req).then(
    // A share's line columns move to the coordinator, the index's to the caller, rather than being copied.
    (res) =>
      parentPort?.postMessage(
        res,
        res.kind === 'slice'
          ? transferables([res.result])
          : res.kind === 'units'
            ? transferables(res.result)
            : res.kind === 'index' && !('stored' in res.result)
              ? lineBuffers(res.result)
              : undefined,
      ),
    (e: unknown) => {
      const err = e instanceof Error ? e : new Error(String(e));
      parentPort?.postMessage({ error: err.message, name: err.name });
    },
  );
});

/** The index's line columns move to the caller rather than being copied (a copy would be the largest thing here). */
function lineBuffers(data: IndexData): ArrayBuffer[] {
  const { address, line, file, flags } = data.lines;
  return [...new Set([address.buffer, line.buffer, file.buffer, flags.buffer] as ArrayBuffer[])];
}

function transferables(slices: readonly DwarfSlice[]): ArrayBuffer[] {
  const out = new Set<ArrayBuffer>();
  for (const s of slices)
    for (const t of s.tables) for (const a of [t.address, t.line, t.file, t.flags, t.sequences]) out.add(a.buffer as ArrayBuffer);
  return [...out];
}

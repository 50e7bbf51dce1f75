// Worker-thread entry: the binary indexer runs here so the extension host never blocks on DWARF.
// IndexData crosses back by structured clone (bigints and typed arrays survive it).
// Tests: test/unit/core/index/worker/client.test.ts, test/unit/core/index/worker/pool.test.ts
import { getHeapStatistics } from 'node:v8';
import { parentPort } from 'node:worker_threads';
import { openBinary } from '../../binary/binaryImage';
import { buildIndex } from '../build';
import { dwarfSlice, dwarfUnitSlices, type DwarfSlice } from '../fromDwarf';
import type { WorkerRequest, WorkerResponse } from './messages';
import { unreachable } from '../../../shared/unreachable';

async function handle(req: WorkerRequest): Promise<WorkerResponse> {
  switch (req.kind) {
    case 'ping':
      return { kind: 'ping', result: `pong ${req.text}` };
    case 'heapLimit':
      // The heap limit V8 applies in this worker, in MiB: what resourceLimits turned into.
      return { kind: 'heapLimit', result: getHeapStatistics().heap_size_limit / (1024 * 1024) };
    case 'index':
      return {
        kind: 'index',
        result: await buildIndex(req.path, {
          debugDirs: req.debugDirs,
          workers: req.workers,
          onlyFile: req.onlyFile,
          memoryLimitMb: req.memoryLimitMb,
          unitCacheDir: req.unitCacheDir,
          onProgress: (progress) => parentPort?.postMessage({ progress }),
        }),
      };
    case 'slice': {
      const image = await openBinary(req.path, {
        debugDirs: req.debugDirs,
        debugFile: req.debugFile,
        noSystemDebugDir: req.noSystemDebugDir,
      });
      return { kind: 'slice', result: dwarfSlice(image, req.part, req.parts) };
    }
    case 'units': {
      const image = await openBinary(req.path, {
        debugDirs: req.debugDirs,
        debugFile: req.debugFile,
        noSystemDebugDir: req.noSystemDebugDir,
      });
      return { kind: 'units', result: dwarfUnitSlices(image, req.unitOffsets) };
    }
    default:
      return unreachable(req, 'index worker request');
  }
}

parentPort?.once('message', (req: WorkerRequest) => {
  handle(req).then(
    // A share's line columns move to the coordinator rather than being copied.
    (res) =>
      parentPort?.postMessage(
        res,
        res.kind === 'slice' ? transferables([res.result]) : res.kind === 'units' ? transferables(res.result) : undefined,
      ),
    (e: unknown) => {
      const err = e instanceof Error ? e : new Error(String(e));
      parentPort?.postMessage({ error: err.message, name: err.name });
    },
  );
});

function transferables(slices: readonly DwarfSlice[]): ArrayBuffer[] {
  const out = new Set<ArrayBuffer>();
  for (const s of slices)
    for (const t of s.tables) for (const a of [t.address, t.line, t.file, t.flags, t.sequences]) out.add(a.buffer as ArrayBuffer);
  return [...out];
}

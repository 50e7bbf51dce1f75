// Worker-thread entry: the binary indexer runs here so the extension host never blocks on DWARF.
// IndexData crosses back by structured clone (bigints and typed arrays survive it).
import { getHeapStatistics } from 'node:v8';
import { parentPort } from 'node:worker_threads';
import { buildIndex } from '../index/build';
import type { WorkerRequest, WorkerResponse } from './messages';

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
        result: await buildIndex(req.path, { debugDirs: req.debugDirs, onProgress: (progress) => parentPort?.postMessage({ progress }) }),
      };
  }
}

parentPort?.once('message', (req: WorkerRequest) => {
  handle(req).then(
    (res) => parentPort?.postMessage(res),
    (e: unknown) => {
      const err = e instanceof Error ? e : new Error(String(e));
      parentPort?.postMessage({ error: err.message, name: err.name });
    },
  );
});

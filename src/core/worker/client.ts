// Runs index jobs in a worker thread so the extension host (and the CLI's event loop) never blocks on DWARF.
// From the bundles the worker is dist/worker.js beside the caller; from source (tests, tsx) it is the
// TypeScript entry run through the same loader.
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { Worker } from 'node:worker_threads';
import type { WorkerRequest, WorkerResponse } from './messages';

function startWorker(): Worker {
  const bundled = join(__dirname, 'worker.js');
  if (__filename.endsWith('.js') && existsSync(bundled)) return new Worker(bundled);
  // Running from source: load the TypeScript entry through tsx's CommonJS hook inside the worker.
  const entry = JSON.stringify(join(__dirname, 'indexWorker.ts'));
  return new Worker(`require('tsx/cjs'); require(${entry});`, { eval: true });
}

export class WorkerJobError extends Error {
  constructor(
    message: string,
    readonly errorName: string,
  ) {
    super(message);
    this.name = errorName;
  }
}

type ResultOf<K extends WorkerRequest['kind']> = Extract<WorkerResponse, { kind: K }>['result'];

/** Runs one request in a fresh worker and resolves with its result; the worker exits afterwards. */
export function runWorkerJob<K extends WorkerRequest['kind']>(
  request: Extract<WorkerRequest, { kind: K }>,
  onProgress?: (message: string) => void,
): Promise<ResultOf<K>> {
  return new Promise<unknown>((resolve, reject) => {
    const worker = startWorker();
    let settled = false;
    const finish = (fn: () => void) => {
      if (settled) return;
      settled = true;
      fn();
      void worker.terminate();
    };
    worker.on('message', (msg: WorkerResponse | { progress: string } | { error: string; name: string }) => {
      if ('progress' in msg) onProgress?.(msg.progress);
      else if ('error' in msg) finish(() => reject(new WorkerJobError(msg.error, msg.name)));
      else finish(() => resolve((msg as { result: unknown }).result));
    });
    worker.on('error', (e) => finish(() => reject(e)));
    worker.on('exit', (code) => finish(() => reject(new Error(`index worker exited with code ${code} before answering`))));
    worker.postMessage(request);
  }) as Promise<ResultOf<K>>;
}

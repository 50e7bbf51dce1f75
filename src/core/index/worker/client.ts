// Runs index jobs in a worker thread so the extension host (and the CLI's event loop) never blocks on DWARF.
// From the bundles the worker is dist/worker.js beside the caller; from source (tests, tsx) it is the
// TypeScript entry run through the same loader.
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { Worker, type ResourceLimits } from 'node:worker_threads';
import type { WorkerRequest, WorkerResponse } from './messages';

function startWorker(resourceLimits: ResourceLimits | undefined): Worker {
  const bundled = join(__dirname, 'worker.js');
  if (__filename.endsWith('.js') && existsSync(bundled)) return new Worker(bundled, { resourceLimits });
  // Running from source: load the TypeScript entry through tsx's CommonJS hook inside the worker.
  const entry = JSON.stringify(join(__dirname, 'indexWorker.ts'));
  return new Worker(`require('tsx/cjs'); require(${entry});`, { eval: true, resourceLimits });
}

export interface JobLimits {
  /** Wall-clock time from the worker's start; past it the worker is terminated, wherever its code is. */
  timeLimitMs?: number;
  /** The worker's V8 heap (old generation) in MiB; exceeding it ends the worker (ERR_WORKER_OUT_OF_MEMORY). */
  memoryLimitMb?: number;
  /** The error a job that hit a limit rejects with. */
  onLimit?: (kind: 'time' | 'memory') => Error;
  /** Aborting it terminates the worker and rejects the job with the signal's reason. */
  signal?: AbortSignal;
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
  limits: JobLimits = {},
): Promise<ResultOf<K>> {
  return new Promise<unknown>((resolve, reject) => {
    const limitError = (kind: 'time' | 'memory') =>
      limits.onLimit?.(kind) ?? new Error(kind === 'time' ? 'index worker ran out of time' : 'index worker ran out of memory');
    const worker = startWorker(limits.memoryLimitMb ? { maxOldGenerationSizeMb: limits.memoryLimitMb } : undefined);
    let settled = false;
    const timer = limits.timeLimitMs ? setTimeout(() => finish(() => reject(limitError('time'))), limits.timeLimitMs) : undefined;
    const onAbort = () => finish(() => reject(limits.signal?.reason ?? new Error('index job aborted')));
    const finish = (fn: () => void) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      limits.signal?.removeEventListener('abort', onAbort);
      fn();
      void worker.terminate();
    };
    worker.on('message', (msg: WorkerResponse | { progress: string } | { error: string; name: string }) => {
      if ('progress' in msg) onProgress?.(msg.progress);
      else if ('error' in msg) finish(() => reject(new WorkerJobError(msg.error, msg.name)));
      else finish(() => resolve((msg as { result: unknown }).result));
    });
    worker.on('error', (e: NodeJS.ErrnoException) =>
      finish(() => reject(e.code === 'ERR_WORKER_OUT_OF_MEMORY' ? limitError('memory') : e)),
    );
    if (limits.signal?.aborted) onAbort();
    else limits.signal?.addEventListener('abort', onAbort, { once: true });
    worker.on('exit', (code) => finish(() => reject(new Error(`index worker exited with code ${code} before answering`))));
    worker.postMessage(request);
  }) as Promise<ResultOf<K>>;
}

// Worker-thread entry: the binary indexer runs here so the extension host never blocks on DWARF.
import { parentPort } from 'node:worker_threads';
import type { WorkerRequest, WorkerResponse } from './messages';

function handle(req: WorkerRequest): WorkerResponse {
  switch (req.kind) {
    case 'ping':
      return { kind: 'ping', result: `pong ${req.text}` };
  }
}

parentPort?.once('message', (req: WorkerRequest) => {
  try {
    parentPort?.postMessage(handle(req));
  } catch (e) {
    const err = e instanceof Error ? e : new Error(String(e));
    parentPort?.postMessage({ error: err.message, name: err.name });
  }
});

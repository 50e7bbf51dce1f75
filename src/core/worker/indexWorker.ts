// Worker-thread entry: the binary indexer runs here so the extension host never blocks on DWARF.
import { parentPort } from 'node:worker_threads';

parentPort?.on('message', (msg: { id: number; kind: string }) => {
  parentPort?.postMessage({ id: msg.id, error: `unknown request '${msg.kind}'` });
});

// Requests and responses between runWorkerJob() and the index worker.
import type { IndexData } from '../index/model';

export type WorkerRequest = { kind: 'ping'; text: string } | { kind: 'heapLimit' } | { kind: 'index'; path: string; debugDirs?: string[] };

export type WorkerResponse =
  { kind: 'ping'; result: string } | { kind: 'heapLimit'; result: number } | { kind: 'index'; result: IndexData };

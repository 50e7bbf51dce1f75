// Requests and responses between runWorkerJob() and the index worker.
export type WorkerRequest =
  | { kind: 'ping'; text: string };

export type WorkerResponse =
  | { kind: 'ping'; result: string };

// The CLI indexes in the same worker as the editor, under the same scaled time and memory limits; these
// environment variables fix them instead (the error at a limit names the one to raise).
import type { LoadOptions } from '../core/index/load';
import { CLI_LIMIT_NAMES } from '../core/index/worker/limits';
import { UsageError } from './args';

function positive(name: string): number | undefined {
  const v = process.env[name];
  if (v === undefined || v.trim() === '') return undefined;
  const n = Number(v);
  if (!Number.isFinite(n) || n <= 0) throw new UsageError(`${name} must be a positive number, got '${v}'`);
  return n;
}

export function indexOptions(): Pick<LoadOptions, 'inWorker' | 'limits' | 'limitNames' | 'workers' | 'onDebugFetch'> {
  const workers = positive('PROBELENS_INDEX_WORKERS');
  if (workers !== undefined && !Number.isInteger(workers))
    throw new UsageError(`PROBELENS_INDEX_WORKERS must be a positive whole number, got '${process.env.PROBELENS_INDEX_WORKERS}'`);
  return {
    inWorker: true,
    workers,
    limits: { timeLimitSeconds: positive(CLI_LIMIT_NAMES.time), memoryLimitMb: positive(CLI_LIMIT_NAMES.memory) },
    limitNames: CLI_LIMIT_NAMES,
    onDebugFetch: debugFetchProgress(),
  };
}

/** A line on stderr as a debug file starts coming from a debuginfod server, and one per further 16 MiB. */
function debugFetchProgress(): NonNullable<LoadOptions['onDebugFetch']> {
  let next = 0;
  return (p) => {
    if (p.bytes < next) return;
    next = p.bytes + 16 * 2 ** 20;
    const mib = (n: number) => (n / 2 ** 20).toFixed(1);
    process.stderr.write(`probelens: fetching debug info from ${p.url}: ${mib(p.bytes)} MiB${p.total ? ` of ${mib(p.total)} MiB` : ''}\n`);
  };
}

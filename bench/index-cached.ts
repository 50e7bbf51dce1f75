// Child of bench/index.ts: one cached load of BIN's index from CACHEDIR in a fresh process, then the first query by
// name (NAME), as the CLI asks, then the functions of that function's source file, as the editor asks for an open
// file; then, as the baseline, every function built (what any first query cost before queries read the cache's
// columns). Prints its own times as JSON, with the process's start-up and module loading apart (startMs).
// argv: BIN CACHEDIR NAME
import { performance } from 'node:perf_hooks';
import { loadIndex } from '../src/core/index/load';

const ms = (from: bigint): number => Number(process.hrtime.bigint() - from) / 1e6;

void (async () => {
  const [bin, cacheDir, name] = process.argv.slice(2);
  const startMs = performance.now();
  let t = process.hrtime.bigint();
  const { index, fromCache } = await loadIndex(bin, { cacheDir });
  const loadMs = ms(t);
  if (!fromCache) throw new Error(`${bin}: cache miss`);
  t = process.hrtime.bigint();
  const found = index.function(name);
  const byName = found.length;
  const nameMs = ms(t);
  t = process.hrtime.bigint();
  const inFile = index.functionsInFile(found[0]?.file ?? '').length;
  const fileMs = ms(t);
  t = process.hrtime.bigint();
  const all = index.functions().length;
  const allMs = ms(t);
  if (byName === 0) throw new Error(`${bin}: no function ${name}`);
  console.log(JSON.stringify({ startMs, loadMs, nameMs, byName, fileMs, inFile, allMs, all, rssMb: process.memoryUsage().rss / 2 ** 20 }));
})().catch((e: unknown) => {
  console.error(e instanceof Error ? e.message : String(e));
  process.exit(1);
});

// Child of bench/index.ts: builds one binary's full index cold and reports time and peak RSS as JSON.
import { buildIndex } from '../src/core/index/build';

void (async () => {
  const t = process.hrtime.bigint();
  const data = await buildIndex(process.argv[2]);
  const ms = Number(process.hrtime.bigint() - t) / 1e6;
  process.stdout.write(
    JSON.stringify({ ms, maxRssKb: process.resourceUsage().maxRSS, functions: data.functions.length, rows: data.lines.address.length }),
  );
})();

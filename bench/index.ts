// npm run bench:index -- [BIN…]
// Cold full index (in a fresh process: time and peak RSS), in-process cache load, and beside them gdb's
// `info functions ^main$` and `readelf --debug-dump=decodedline` on the same binary, with ratios.
// Without arguments: a few fixtures and the corpus's postgres if it is built (bench/build-real-projects.sh).
import { spawnSync } from 'node:child_process';
import { mkdtempSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { loadIndex } from '../src/core/index/load';
import { builtCorpusBinary } from '../test/helpers/corpus';
import { fixture, type FixtureName } from '../test/helpers/fixtures';

const CHILD = resolve(__dirname, 'index-cold.ts');

function timeCommand(cmd: string, args: string[]): number {
  const t = process.hrtime.bigint();
  const r = spawnSync(cmd, args, { stdio: ['ignore', 'ignore', 'ignore'] });
  if (r.error) return NaN;
  return Number(process.hrtime.bigint() - t) / 1e6;
}

function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.floor(s.length / 2)];
}

async function defaultBinaries(): Promise<string[]> {
  const out: string[] = [];
  for (const n of ['calls-O2', 'cpp-O2', 'go', 'rust-O2'] as FixtureName[]) out.push((await fixture(n)).path);
  const pg = builtCorpusBinary('postgres', 'postgres');
  if (pg) out.push(pg);
  return out;
}

async function main(): Promise<void> {
  const bins = process.argv.slice(2).length ? process.argv.slice(2).map((b) => resolve(b)) : await defaultBinaries();
  const rows: string[][] = [
    [
      'binary',
      'size',
      'functions',
      'line rows',
      'cold index',
      'peak RSS',
      'cache load',
      'first query',
      'gdb info functions',
      'readelf decodedline',
      'index/gdb',
      'index/readelf',
    ],
  ];
  for (const bin of bins) {
    const cold = spawnSync(process.execPath, ['--import', 'tsx', CHILD, bin], { encoding: 'utf8' });
    if (cold.status !== 0) {
      console.error(`${bin}: cold index failed: ${cold.stderr.trim().split('\n').pop()}`);
      continue;
    }
    const c = JSON.parse(cold.stdout) as { ms: number; maxRssKb: number; functions: number; rows: number };
    const cacheDir = mkdtempSync(join(tmpdir(), 'probelens-bench-cache-'));
    await loadIndex(bin, { cacheDir });
    const loads: number[] = [];
    const firstQuery: number[] = [];
    for (let i = 0; i < 7; i++) {
      const t = process.hrtime.bigint();
      const { index, fromCache } = await loadIndex(bin, { cacheDir });
      loads.push(Number(process.hrtime.bigint() - t) / 1e6);
      if (!fromCache) throw new Error('cache miss in the cache-load measurement');
      // What an editor asks first: the functions of one source file (builds the function objects).
      const t2 = process.hrtime.bigint();
      index.functionsInFile(index.sourceFiles()[0] ?? '');
      firstQuery.push(Number(process.hrtime.bigint() - t2) / 1e6);
    }
    const gdb = median([0, 1, 2].map(() => timeCommand('gdb', ['-nx', '-batch', '-ex', 'info functions ^main$', bin])));
    const readelf = median([0, 1, 2].map(() => timeCommand('sh', ['-c', 'readelf --debug-dump=decodedline "$1" >/dev/null', 'sh', bin])));
    rows.push([
      bin.replace(/^.*\/probelens-test\/(fixtures|corpus)\//, ''),
      `${(statSync(bin).size / 1048576).toFixed(1)} MiB`,
      String(c.functions),
      String(c.rows),
      `${c.ms.toFixed(0)} ms`,
      `${(c.maxRssKb / 1024).toFixed(0)} MiB`,
      `${median(loads).toFixed(1)} ms`,
      `${median(firstQuery).toFixed(1)} ms`,
      `${gdb.toFixed(0)} ms`,
      `${readelf.toFixed(0)} ms`,
      `${(c.ms / gdb).toFixed(2)}×`,
      `${(c.ms / readelf).toFixed(2)}×`,
    ]);
  }
  const widths = rows[0].map((_, i) => Math.max(...rows.map((r) => r[i].length)));
  for (const r of rows) console.log(r.map((x, i) => x.padEnd(widths[i])).join('  '));
  console.log(
    '\ncold index: a fresh process building the full index (--no-cache); baselines: gdb -batch -ex "info functions ^main$", readelf --debug-dump=decodedline >/dev/null (median of 3); cache load: in-process loadIndex() from the cache, median of 7; first query: functionsInFile() right after it, which rebuilds the function objects from the cached columns.',
  );
}

void main();

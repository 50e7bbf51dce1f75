// npm run bench:index -- [BIN…]
// Cold full index in a fresh process (time, CPU time and peak RSS; one thread and the pool), alternated with gdb's
// `info functions ^main$` on the same binary (three rounds, medians, load average printed), in-process cache
// load, and `readelf --debug-dump=decodedline`, with ratios.
// Without arguments: a few fixtures and the corpus's postgres if it is built (bench/build-real-projects.sh).
import { spawnSync } from 'node:child_process';
import { mkdtempSync, statSync } from 'node:fs';
import { availableParallelism, loadavg, tmpdir } from 'node:os';
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

interface Cold {
  ms: number;
  cpuMs: number;
  maxRssKb: number;
  functions: number;
  rows: number;
  /** Threads the pool sized to this machine and binary has. */
  poolThreads: number;
  debugBytes: number;
}

const CLI = resolve(__dirname, '..', 'dist', 'cli.js');

/** What the cold index needs to be described: counts and the DWARF it reads (one in-process build, untimed). */
function facts(bin: string): Cold {
  const r = spawnSync(process.execPath, ['--import', 'tsx', CHILD, bin, '1'], { encoding: 'utf8' });
  if (r.status !== 0) throw new Error(`${bin}: cold index failed: ${r.stderr.trim().split('\n').pop()}`);
  return JSON.parse(r.stdout) as Cold;
}

/**
 * The bundled CLI's `functions BIN --no-cache` (what users run; helper threads load dist/worker.js): wall time,
 * CPU time of all threads and peak RSS, by GNU time.
 */
function cold(bin: string, workers: number): { ms: number; cpuMs: number; maxRssKb: number } {
  const t = process.hrtime.bigint();
  const r = spawnSync('/usr/bin/time', ['-f', '%U %S %M', process.execPath, CLI, 'functions', bin, '--no-cache'], {
    stdio: ['ignore', 'ignore', 'pipe'],
    encoding: 'utf8',
    env: { ...process.env, PROBELENS_INDEX_WORKERS: workers ? String(workers) : '' },
  });
  const ms = Number(process.hrtime.bigint() - t) / 1e6;
  if (r.error || r.status !== 0)
    throw new Error(`${bin}: probelens functions failed: ${(r.stderr ?? String(r.error)).trim().split('\n').pop()}`);
  const [user, sys, rss] = r.stderr.trim().split('\n').pop()!.split(' ').map(Number);
  return { ms, cpuMs: (user + sys) * 1000, maxRssKb: rss };
}

const load = () =>
  loadavg()
    .map((x) => x.toFixed(2))
    .join(' ');

async function main(): Promise<void> {
  const bins = process.argv.slice(2).length ? process.argv.slice(2).map((b) => resolve(b)) : await defaultBinaries();
  console.log(`load average at the start: ${load()} (${availableParallelism()} cores)`);
  const mib = (b: number) => `${(b / 1048576).toFixed(0)} MiB`;
  const rows: string[][] = [
    [
      'binary',
      'size',
      'functions',
      'line rows',
      'debug read',
      'cold 1 thread',
      'cpu',
      'peak RSS',
      'cold pool',
      'threads',
      'cpu',
      'peak RSS',
      'gdb info functions',
      'gdb RSS',
      'pool/gdb',
      'RSS/debug',
      'cache load',
      'first query',
      'readelf decodedline',
    ],
  ];
  for (const bin of bins) {
    // Alternated in the same run: one thread, the pool, gdb; three times; medians.
    let f: Cold;
    const one: Array<ReturnType<typeof cold>> = [];
    const pool: Array<ReturnType<typeof cold>> = [];
    const gdb: Array<{ ms: number; rssKb: number }> = [];
    try {
      f = facts(bin);
      for (let i = 0; i < 3; i++) {
        one.push(cold(bin, 1));
        pool.push(cold(bin, 0));
        gdb.push(timeWithRss('gdb', ['-nx', '-batch', '-ex', 'info functions ^main$', bin]));
      }
    } catch (e) {
      console.error(e instanceof Error ? e.message : String(e));
      continue;
    }
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
    const readelf = median([0, 1, 2].map(() => timeCommand('sh', ['-c', 'readelf --debug-dump=decodedline "$1" >/dev/null', 'sh', bin])));
    const m = (xs: typeof one, k: keyof (typeof one)[number]) => median(xs.map((x) => x[k]));
    const gdbMs = median(gdb.map((g) => g.ms));
    rows.push([
      bin.replace(/^.*\/probelens-test\/(fixtures|corpus)\//, ''),
      mib(statSync(bin).size),
      String(f.functions),
      String(f.rows),
      mib(f.debugBytes),
      `${m(one, 'ms').toFixed(0)} ms`,
      `${m(one, 'cpuMs').toFixed(0)} ms`,
      mib(m(one, 'maxRssKb') * 1024),
      `${m(pool, 'ms').toFixed(0)} ms`,
      String(f.poolThreads),
      `${m(pool, 'cpuMs').toFixed(0)} ms`,
      mib(m(pool, 'maxRssKb') * 1024),
      `${gdbMs.toFixed(0)} ms`,
      mib(median(gdb.map((g) => g.rssKb)) * 1024),
      `${(m(pool, 'ms') / gdbMs).toFixed(2)}×`,
      `${((m(pool, 'maxRssKb') * 1024) / f.debugBytes).toFixed(1)}×`,
      `${median(loads).toFixed(1)} ms`,
      `${median(firstQuery).toFixed(1)} ms`,
      `${readelf.toFixed(0)} ms`,
    ]);
  }
  const widths = rows[0].map((_, i) => Math.max(...rows.map((r) => r[i].length)));
  for (const r of rows) console.log(r.map((x, i) => x.padEnd(widths[i])).join('  '));
  console.log(`load average at the end: ${load()}`);
  console.log(
    '\ncold: the bundled CLI (npm run build first), `probelens functions BIN --no-cache`, with 1 thread (PROBELENS_INDEX_WORKERS=1) and with the pool sized to the machine and the binary; cpu: user + system time of all its threads; peak RSS: GNU time\'s maximum resident set; debug read: the decompressed DWARF sections the index decodes. gdb: gdb -batch -ex "info functions ^main$". Cold builds and gdb alternate, three rounds, medians. cache load: in-process loadIndex() from the cache, median of 7; first query: functionsInFile() right after it; readelf --debug-dump=decodedline >/dev/null, median of 3.',
  );
}

/** Wall time and peak RSS of a command (GNU time's %M through wait4's rusage, which spawnSync does not give). */
function timeWithRss(cmd: string, args: string[]): { ms: number; rssKb: number } {
  const t = process.hrtime.bigint();
  const r = spawnSync('/usr/bin/time', ['-f', '%M', cmd, ...args], { stdio: ['ignore', 'ignore', 'pipe'], encoding: 'utf8' });
  const ms = Number(process.hrtime.bigint() - t) / 1e6;
  // Without GNU time (the `time` package), the wall time alone.
  if (r.error) return { ms: timeCommand(cmd, args), rssKb: NaN };
  if (r.status !== 0) return { ms: NaN, rssKb: NaN };
  return { ms, rssKb: Number(r.stderr.trim().split('\n').pop()) };
}

void main();

// npm run bench:index -- [BIN…]
// Cold full index in a fresh process (time, CPU time and peak RSS; one thread and the pool), alternated with gdb's
// `info functions ^main$` on the same binary (three rounds, medians, load average printed), in-process cache
// load, and `readelf --debug-dump=decodedline`, with ratios.
// Without arguments: a few fixtures, and the corpus's postgres and redis-server and the VM tier's dbg vmlinux where
// the test cache has them (bench/build-real-projects.sh, test/helpers/vm.ts),
// then the open-file table: the index of one source file's units (what the editor draws a cold binary's lenses
// from first) beside the whole cold index and gdb's `info functions ^NAME$` for a function of that file, for
// postgres (src/backend/tcop/postgres.c) and redis-server (src/object.c) when the corpus has them, and the VM
// tier's dbg vmlinux (fs/open.c) when the test cache has it. `--open-file [NAME…]`: that table alone (NAME:
// postgres, redis-server, vmlinux to run only those). Then (and with `--cached` alone) the cached load: a fresh process loads the index
// of postgres, redis-server and the VM tier's dbg vmlinux (when the test cache has them) from the cache and answers
// one query by name, then one by file, beside the time to build every function (the baseline: what a first query
// cost when it built them all).
// `--stall`: how long a cold index keeps the caller's thread (the extension host's) from running, in a fresh
// process, for postgres and the VM tier's dbg vmlinux: the index stored by the worker and the entry opened (as
// shipped), beside the index copied back and encoded there (the way before) — alternated, medians of 3.
// `--rebuild` (and without arguments, last): re-indexing redis-server after one source file is changed and redis
// rebuilt (a copy of the corpus tree: touch src/t_string.c, a comment added, a line of code added), by the bundled
// CLI with the index and unit caches of the build before, beside the cold index.
import { spawnSync } from 'node:child_process';
import {
  copyFileSync,
  cpSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  statSync,
  utimesSync,
  writeFileSync,
} from 'node:fs';
import { availableParallelism, homedir, loadavg, tmpdir } from 'node:os';
import { basename, dirname, join, resolve } from 'node:path';
import { loadIndex } from '../src/core/index/load';
import { buildIndex } from '../src/core/index/build';
import { readBinaryIdentity } from '../src/core/index/identity';
import type { UnitReuseStats } from '../src/core/index/unitReuse';
import { builtCorpusBinary, corpusWorkTree } from '../test/helpers/corpus';
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
  // The large cases when the test cache has them: postgres, redis-server, the VM tier's dbg vmlinux.
  for (const b of [builtCorpusBinary('postgres', 'postgres'), builtCorpusBinary('redis', 'redis-server'), cachedVmlinux()])
    if (b) out.push(b);
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
  /** Of those, what the build read (1 thread), and of the files all it read. */
  debugReadBytes: number;
  fileReadBytes: number;
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
  const args = process.argv.slice(2);
  if (args.includes('--open-file')) return openFileTable(args.filter((a) => !a.startsWith('--')));
  if (args.includes('--cached')) return cachedTable();
  if (args.includes('--rebuild')) return rebuildTable();
  if (args.includes('--stall')) return stallTable();
  const bins = args.length ? args.map((b) => resolve(b)) : await defaultBinaries();
  console.log(`load average at the start: ${load()} (${availableParallelism()} cores)`);
  const mib = (b: number) => `${(b / 1048576).toFixed(0)} MiB`;
  const rows: string[][] = [
    [
      'binary',
      'size',
      'functions',
      'line rows',
      'debug sections read',
      'file read',
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
      'peak RSS/debug read (1 / pool)',
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
      `${mib(f.debugReadBytes)} of ${mib(f.debugBytes)}`,
      mib(f.fileReadBytes),
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
      `${((m(one, 'maxRssKb') * 1024) / f.debugReadBytes).toFixed(1)}× / ${((m(pool, 'maxRssKb') * 1024) / f.debugReadBytes).toFixed(1)}×`,
      `${median(loads).toFixed(1)} ms`,
      `${median(firstQuery).toFixed(1)} ms`,
      `${readelf.toFixed(0)} ms`,
    ]);
  }
  const widths = rows[0].map((_, i) => Math.max(...rows.map((r) => r[i].length)));
  for (const r of rows) console.log(r.map((x, i) => x.padEnd(widths[i])).join('  '));
  console.log(`load average at the end: ${load()}`);
  console.log(
    '\ncold: the bundled CLI (npm run build first), `probelens functions BIN --no-cache`, with 1 thread (PROBELENS_INDEX_WORKERS=1) and with the pool sized to the machine and the binary; cpu: user + system time of all its threads; peak RSS: GNU time\'s maximum resident set; debug sections read: of the decompressed DWARF sections the index may decode, the bytes the one-thread build read (a compressed section read at all counts whole), of their total; file read: all the build read of the binary and its debug file. gdb: gdb -batch -ex "info functions ^main$". Cold builds and gdb alternate, three rounds, medians. cache load: in-process loadIndex() from the cache, median of 7; first query: functionsInFile() right after it; readelf --debug-dump=decodedline >/dev/null, median of 3.',
  );
  if (args.length === 0) {
    await openFileTable();
    await cachedTable();
    await rebuildTable();
  }
}

/** The dbg package's vmlinux the VM tier extracted into the test cache (`kdebug-…/`, an older cache's `vmlinux-…/`), if it did. */
function cachedVmlinux(): string | undefined {
  const vm = join(homedir(), '.cache', 'probelens-test', 'vm');
  for (const d of existsSync(vm) ? readdirSync(vm) : []) {
    if (!d.startsWith('kdebug-') && !d.startsWith('vmlinux-')) continue;
    const f = readdirSync(join(vm, d)).find((x) => x.startsWith('vmlinux-'));
    if (f) return join(vm, d, f);
  }
  return undefined;
}

const CACHED_CHILD = resolve(__dirname, 'index-cached.ts');

/** Cached load + first queries in fresh processes (five, medians), beside building every function. */
const STALL_CHILD = resolve(__dirname, 'index-stall.ts');

async function stallTable(): Promise<void> {
  console.log(`
the caller's thread during a cold index; load average at the start: ${load()}`);
  const rows: string[][] = [['binary', 'mode', 'total', "caller's stall at the end", 'longest stall before']];
  for (const bin of [builtCorpusBinary('postgres', 'postgres'), cachedVmlinux()]) {
    if (!bin) continue;
    const runs: Record<string, Array<{ totalMs: number; finalStallMs: number; longestBeforeMs: number }>> = { stored: [], copy: [] };
    for (let i = 0; i < 3; i++)
      for (const mode of ['stored', 'copy']) {
        const r = spawnSync(process.execPath, ['--import', 'tsx', STALL_CHILD, bin, mode], { encoding: 'utf8' });
        if (r.status !== 0) throw new Error(`${bin}: ${mode} index failed: ${r.stderr.trim().split('\n').pop()}`);
        runs[mode].push(JSON.parse(r.stdout));
      }
    for (const mode of ['stored', 'copy']) {
      const m = (k: 'totalMs' | 'finalStallMs' | 'longestBeforeMs') => `${median(runs[mode].map((r) => r[k])).toFixed(0)} ms`;
      rows.push([
        basename(bin),
        mode === 'stored' ? 'stored by the worker' : 'baseline: copied back, encoded here',
        m('totalMs'),
        m('finalStallMs'),
        m('longestBeforeMs'),
      ]);
    }
  }
  const widths = rows[0].map((_, i) => Math.max(...rows.map((r) => r[i].length)));
  for (const r of rows) console.log(r.map((x, i) => x.padEnd(widths[i])).join('  '));
  console.log(`load average at the end: ${load()}`);
}

async function cachedTable(): Promise<void> {
  console.log(`
cached load; load average at the start: ${load()}`);
  const cases = [
    { bin: builtCorpusBinary('postgres', 'postgres'), name: 'exec_simple_query' },
    { bin: builtCorpusBinary('redis', 'redis-server'), name: 'createObject' },
    { bin: cachedVmlinux(), name: 'do_sys_openat2' },
  ];
  const rows: string[][] = [
    [
      'binary',
      'functions',
      'cache entry',
      'load',
      'query by name',
      'its file',
      'load + name',
      'every function built',
      'process start',
      'RSS',
    ],
  ];
  for (const c of cases) {
    if (!c.bin) continue;
    const cacheDir = mkdtempSync(join(tmpdir(), 'probelens-bench-cache-'));
    await loadIndex(c.bin, { cacheDir, inWorker: true });
    const [entry] = readdirSync(cacheDir);
    const entryBytes = statSync(join(cacheDir, entry)).size;
    const runs: Array<{ startMs: number; loadMs: number; nameMs: number; fileMs: number; allMs: number; all: number; rssMb: number }> = [];
    for (let i = 0; i < 5; i++) {
      const r = spawnSync(process.execPath, ['--import', 'tsx', CACHED_CHILD, c.bin, cacheDir, c.name], { encoding: 'utf8' });
      if (r.status !== 0) throw new Error(`${c.bin}: cached load failed: ${r.stderr.trim().split('\n').pop()}`);
      runs.push(JSON.parse(r.stdout));
    }
    rmSync(cacheDir, { recursive: true, force: true });
    const m = (k: keyof (typeof runs)[number]) => median(runs.map((r) => r[k]));
    rows.push([
      basename(c.bin),
      String(runs[0].all),
      `${(entryBytes / 1048576).toFixed(1)} MiB`,
      `${m('loadMs').toFixed(1)} ms`,
      `${m('nameMs').toFixed(1)} ms`,
      `${m('fileMs').toFixed(1)} ms`,
      `${median(runs.map((r) => r.loadMs + r.nameMs)).toFixed(1)} ms`,
      `${m('allMs').toFixed(0)} ms`,
      `${m('startMs').toFixed(0)} ms`,
      `${m('rssMb').toFixed(0)} MiB`,
    ]);
  }
  const widths = rows[0].map((_, i) => Math.max(...rows.map((r) => r[i].length)));
  for (const r of rows) console.log(r.map((x, i) => x.padEnd(widths[i])).join('  '));
  console.log(`load average at the end: ${load()}`);
  console.log(
    "\ncached load: a fresh process (bench/index-cached.ts) runs loadIndex() on a cache entry written before (reading, checking and decoding it), then index.function(NAME) (postgres exec_simple_query, redis-server createObject, vmlinux do_sys_openat2), then functionsInFile() of that function's file; every function built: index.functions() after them, what a first query cost before queries read the columns. process start: Node and tsx starting and loading the modules, apart. Five runs, medians.",
  );
}

/**
 * A source file of a binary and a function defined in it (the DWARF names the build tree's paths; the kernel's,
 * built with -fdebug-prefix-map, relative ones, which the editor asks for by their tail).
 */
const OPEN_FILES: Array<{ binary: string; path: () => string | undefined; file: (bin: string) => string; fn: string }> = [
  {
    binary: 'postgres',
    path: () => builtCorpusBinary('postgres', 'postgres'),
    file: (bin) => join(dirname(bin), 'tcop', 'postgres.c'),
    fn: 'exec_simple_query',
  },
  {
    binary: 'redis-server',
    path: () => builtCorpusBinary('redis', 'redis-server'),
    file: (bin) => join(dirname(bin), 'object.c'),
    fn: 'createObject',
  },
  { binary: 'vmlinux', path: cachedVmlinux, file: () => 'fs/open.c', fn: 'do_sys_openat2' },
];

/** One cold build in a fresh process: its own build time (tsx start-up excluded), wall time with it, counts. */
function coldChild(
  bin: string,
  workers: number,
  onlyFile?: string,
  unitCacheDir?: string,
): { ms: number; wallMs: number; cpuMs: number; maxRssKb: number; described: number; onlyFile?: string } {
  const t = process.hrtime.bigint();
  const r = spawnSync(process.execPath, ['--import', 'tsx', CHILD, bin, String(workers), onlyFile ?? '', unitCacheDir ?? ''], {
    encoding: 'utf8',
  });
  const wallMs = Number(process.hrtime.bigint() - t) / 1e6;
  if (r.status !== 0) throw new Error(`${bin}: cold index failed: ${r.stderr.trim().split('\n').pop()}`);
  const out = JSON.parse(r.stdout) as { ms: number; cpuMs: number; maxRssKb: number; described: number; onlyFile?: string };
  return { ...out, wallMs };
}

/**
 * The open file's index (BuildOptions.onlyFile, as the editor's index worker builds it) beside the whole cold
 * index (the pool sized to the machine) and gdb's `info functions ^NAME$`: alternated, three rounds, medians.
 */
async function openFileTable(only: string[] = []): Promise<void> {
  console.log(`\nopen file first; load average at the start: ${load()} (${availableParallelism()} cores)`);
  const rows: string[][] = [
    [
      'binary',
      'open file',
      'its functions',
      'open-file index',
      '(wall)',
      'whole index',
      '(wall)',
      'functions',
      'whole/open',
      'gdb info functions ^NAME$',
      'open/gdb',
      'open-file cpu',
      'peak RSS',
    ],
  ];
  for (const c of OPEN_FILES) {
    if (only.length && !only.includes(c.binary)) continue;
    const bin = c.path();
    if (!bin) {
      console.log(`${c.binary}: not in the test cache (the corpus or VM tier puts it there), skipped`);
      continue;
    }
    const file = c.file(bin);
    const open: Array<ReturnType<typeof coldChild>> = [];
    const whole: Array<ReturnType<typeof coldChild>> = [];
    const gdb: number[] = [];
    for (let i = 0; i < 3; i++) {
      open.push(coldChild(bin, 0, file));
      console.error(`${c.binary} ${i + 1}/3: open file ${open[i].ms.toFixed(0)} ms (load ${load()})`);
      whole.push(coldChild(bin, 0));
      gdb.push(timeCommand('gdb', ['-nx', '-batch', '-ex', `info functions ^${c.fn}$`, bin]));
    }
    if (open[0].onlyFile !== file) throw new Error(`${bin}: the index for ${file} was not built from its units alone`);
    const m = (xs: number[]) => median(xs);
    const o = m(open.map((x) => x.ms));
    const w = m(whole.map((x) => x.ms));
    const g = m(gdb);
    rows.push([
      c.binary,
      file.replace(/^.*\/corpus\/[^/]+\//, ''),
      String(open[0].described),
      `${o.toFixed(0)} ms`,
      `${m(open.map((x) => x.wallMs)).toFixed(0)} ms`,
      `${w.toFixed(0)} ms`,
      `${m(whole.map((x) => x.wallMs)).toFixed(0)} ms`,
      String(whole[0].described),
      `${(w / o).toFixed(1)}×`,
      `${g.toFixed(0)} ms (${c.fn})`,
      `${(o / g).toFixed(2)}×`,
      `${m(open.map((x) => x.cpuMs)).toFixed(0)} ms`,
      `${(m(open.map((x) => x.maxRssKb)) / 1024).toFixed(0)} MiB`,
    ]);
  }
  const widths = rows[0].map((_, i) => Math.max(...rows.map((r) => r[i].length)));
  for (const r of rows) console.log(r.map((x, i) => x.padEnd(widths[i])).join('  '));
  console.log(`load average at the end: ${load()}`);
  console.log(
    "\nopen-file index: buildIndex(BIN, { onlyFile }) in a fresh process, its own time (wall: with the process's start-up; cpu and peak RSS: the whole process's); whole index: buildIndex(BIN) with the pool sized to the machine, the same way; functions: those with a source file (DWARF-described). gdb: gdb -nx -batch -ex 'info functions ^NAME$' BIN, NAME a function of the open file. Alternated, three rounds, medians.",
  );
}

/** `probelens functions BIN` by the bundled CLI with the caches under `cacheHome` (or none): wall time. */
function cliFunctions(bin: string, cacheHome: string | undefined): number {
  const t = process.hrtime.bigint();
  const r = spawnSync(process.execPath, [CLI, 'functions', bin, ...(cacheHome ? [] : ['--no-cache'])], {
    stdio: ['ignore', 'ignore', 'pipe'],
    encoding: 'utf8',
    env: { ...process.env, ...(cacheHome ? { XDG_CACHE_HOME: cacheHome } : {}) },
  });
  const ms = Number(process.hrtime.bigint() - t) / 1e6;
  if (r.error || r.status !== 0)
    throw new Error(`${bin}: probelens functions failed: ${(r.stderr ?? String(r.error)).trim().split('\n').pop()}`);
  return ms;
}

/**
 * Re-indexing after a rebuild: redis-server in a copy of the corpus tree, src/t_string.c changed three ways and
 * redis rebuilt by its Makefile. Each rebuilt binary is indexed by `probelens functions` (the bundled CLI, a fresh
 * process) at the same path, with the index and unit caches that indexing the build before left; beside it the
 * cold index (--no-cache) and the first index with empty caches (what writing the unit cache costs).
 * Alternated, three rounds, medians.
 */
async function rebuildTable(): Promise<void> {
  console.log(`\nre-index after a rebuild; load average at the start: ${load()} (${availableParallelism()} cores)`);
  const built = builtCorpusBinary('redis', 'redis-server');
  if (!built) {
    console.log('redis redis-server: not built (the corpus tier builds it), skipped');
    return;
  }
  const root = mkdtempSync(join(tmpdir(), 'probelens-bench-rebuild-'));
  try {
    const tree = corpusWorkTree({ name: 'redis', version: '', srcDir: dirname(dirname(built)), binaries: {} }, join(root, 'redis'));
    const file = join(tree.dir, 'src', 't_string.c');
    const original = readFileSync(file, 'utf8');
    const at = 'void getCommand(client *c) {\n';
    const bins = join(root, 'bins');
    mkdirSync(bins);
    // Each build, kept: compiled in the copy first (its objects then name the copy, as a developer's own tree does).
    const keep = async (name: string, edit: () => void): Promise<{ name: string; bin: string; makeMs: number }> => {
      edit();
      const t = process.hrtime.bigint();
      await tree.rebuild();
      const makeMs = Number(process.hrtime.bigint() - t) / 1e6;
      const bin = join(bins, `redis-server.${readdirSync(bins).length}`);
      copyFileSync(tree.binary('redis-server'), bin);
      return { name, bin, makeMs };
    };
    const touch = () => utimesSync(file, new Date(), new Date());
    const base = await keep('base', touch);
    const cases = [
      { ...(await keep('touch src/t_string.c, make', touch)), what: 'touched' },
      {
        ...(await keep('a comment line added to t_string.c, make', () => writeFileSync(file, `/* edited */\n${original}`))),
        what: 'comment',
      },
      {
        ...(await keep('a line of code added to getCommand(), make', () =>
          writeFileSync(file, original.replace(at, `${at}    serverLog(LL_DEBUG, "getCommand");\n`)),
        )),
        what: 'code',
      },
    ];
    // The binary is rebuilt where it was: every case runs at one path, with a copy of the caches the base left.
    const bin = join(root, 'run', 'redis-server');
    mkdirSync(dirname(bin));
    const put = (from: string) => {
      rmSync(bin, { force: true });
      copyFileSync(from, bin);
    };
    const baseCaches = join(root, 'caches-base');
    put(base.bin);
    cliFunctions(bin, baseCaches);
    const withBaseCaches = (): string => {
      const c = mkdtempSync(join(root, 'caches-'));
      cpSync(baseCaches, c, { recursive: true, preserveTimestamps: true });
      return c;
    };
    // What each case reuses, counted in process (untimed) from the same caches.
    const reuse = new Map<string, UnitReuseStats | 'whole index cached'>();
    for (const c of cases) {
      put(c.bin);
      if (readBinaryIdentity(c.bin).buildId === readBinaryIdentity(base.bin).buildId) reuse.set(c.name, 'whole index cached');
      else {
        const caches = withBaseCaches();
        await buildIndex(bin, { unitCacheDir: join(caches, 'probelens', 'index'), onUnitReuse: (s) => reuse.set(c.name, s) });
        rmSync(caches, { recursive: true, force: true });
      }
    }
    const cold: number[] = [];
    const firstEver: number[] = [];
    const times = new Map<string, number[]>(cases.map((c) => [c.name, []]));
    const last = cases[cases.length - 1];
    for (let i = 0; i < 3; i++) {
      put(last.bin);
      cold.push(cliFunctions(bin, undefined));
      const empty = mkdtempSync(join(root, 'caches-'));
      firstEver.push(cliFunctions(bin, empty));
      rmSync(empty, { recursive: true, force: true });
      for (const c of cases) {
        put(c.bin);
        const caches = withBaseCaches();
        times.get(c.name)!.push(cliFunctions(bin, caches));
        rmSync(caches, { recursive: true, force: true });
      }
    }
    // The build alone (a fresh process, its own time): without the unit cache, and writing it from empty.
    const own: number[] = [];
    const ownWriting: number[] = [];
    for (let i = 0; i < 3; i++) {
      own.push(coldChild(last.bin, 0).ms);
      const empty = mkdtempSync(join(root, 'caches-'));
      ownWriting.push(coldChild(last.bin, 0, undefined, empty).ms);
      rmSync(empty, { recursive: true, force: true });
    }
    const coldMs = median(cold);
    const rows: string[][] = [['redis-server: change, then make', 'make', 'what is reused', 'probelens functions', 'of cold']];
    rows.push(['cold (--no-cache)', '', 'nothing', `${coldMs.toFixed(0)} ms`, '1.00×']);
    rows.push([
      'the build alone, in process: no unit cache / an empty one written',
      '',
      'nothing',
      `${median(own).toFixed(0)} / ${median(ownWriting).toFixed(0)} ms`,
      `${(median(ownWriting) / median(own)).toFixed(2)}× (writing)`,
    ]);
    rows.push([
      'first index, empty caches (writes the unit cache and the index entry)',
      '',
      'nothing',
      `${median(firstEver).toFixed(0)} ms`,
      `${(median(firstEver) / coldMs).toFixed(2)}×`,
    ]);
    for (const c of cases) {
      const r = reuse.get(c.name);
      const ms = median(times.get(c.name)!);
      rows.push([
        c.name,
        `${c.makeMs.toFixed(0)} ms`,
        r === undefined ? '?' : typeof r === 'string' ? r : `${r.reused} of ${r.units} units (${r.shifted} moved)`,
        `${ms.toFixed(0)} ms`,
        `${(ms / coldMs).toFixed(2)}×`,
      ]);
    }
    const widths = rows[0].map((_, i) => Math.max(...rows.map((r) => r[i].length)));
    for (const r of rows) console.log(r.map((x, i) => x.padEnd(widths[i])).join('  '));
    console.log(`load average at the end: ${load()}`);
    console.log(
      "\nre-index: `probelens functions BIN` (the bundled CLI: npm run build first) in a fresh process, BIN redis-server rebuilt by redis's Makefile in a copy of the corpus tree after the change, run with a copy of the index and unit caches that indexing the build before left (XDG_CACHE_HOME); cold: --no-cache; the first index with empty caches also writes the whole index's entry, as any first index did before the unit cache. The build alone: bench/index-cold.ts (buildIndex in a fresh process, its own time) without a unit cache and with an empty one it fills. A rebuild that changes nothing (touch) gives the same bytes and build-id, so the whole index is a cache hit. Alternated, three rounds, medians; make: the rebuild, once.",
    );
  } finally {
    rmSync(root, { recursive: true, force: true });
  }
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

// npm run bench:attach -- [BIN] [--runs N] [--sites 100,1000,4000] [--teardown-only]
// Arms 100 functions of a real project (the corpus's postgres, else its redis-server; the many-O2 fixture when
// neither is built) with `probelens trace` through a throwaway sshd on 127.0.0.1, timed from command start to the
// CLI's "tracing N probes at M sites" line (index from its cache, SSH login, agent start, build-id check, the
// definitions written, the group enabled), beside `perf probe -x BIN --add` of the same functions (then
// `perf probe -d`); a function perf cannot place is left out of its run and named, never failing the whole row.
// Then teardown: the project's most-inlined functions chosen to make 100, 1,000 and 4,000 sites, armed and stopped
// (SIGINT → the CLI's exit, target clean), beside `perf probe` adding and deleting the same functions' points.
// Then one probe of 4,000 sites: a generated program's header helper inlined into 4,000 functions (one tracefs event
// of 4,000 probe points), armed and stopped the same way. Goal: stop < 1 s for 4,000 sites.
// The binary is copied to a private path first, so other tracing on this machine never touches these probes.
// Then in-process figures (bench/attachLive.ts): defining the 100 pipelined beside one round trip each, and
// adding 1 probe to a session with 100 armed while they are called (time to armed, hits lost on the 100).
import { spawnSync } from 'node:child_process';
import { copyFileSync, existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { basename, join, resolve } from 'node:path';
import { loadIndex } from '../src/core/index/load';
import type { BinaryIndex } from '../src/core/index/binaryIndex';
import { siteCounts } from '../src/core/probes/sites';
import { builtCorpusBinary } from '../test/helpers/corpus';
import { fixture } from '../test/helpers/fixtures';
import { buildInlinedProgram } from '../test/helpers/inlinedHelper';
import { benchDefine, benchLiveAdd } from './attachLive';
import { benchSshd, bundleCli, median, sleep, spawnWatched, table, TRACEFS, waitExit } from './engineCommon';

function realProject(): { path: string; what: string } | undefined {
  const pg = builtCorpusBinary('postgres', 'postgres');
  if (pg) return { path: pg, what: `postgres (${pg})` };
  const redis = builtCorpusBinary('redis', 'redis-server');
  if (redis) return { path: redis, what: `redis-server (${redis}) — postgres is not built` };
  return undefined;
}

const NAME = /^[A-Za-z_][A-Za-z0-9_]*$/;

/** Names that denote one function (so both tools probe the same code) and, when given, perf lists. */
function candidates(index: BinaryIndex, perfNames?: Set<string>): Array<{ name: string; sites: number }> {
  const fns = index.functions().filter((f) => f.probeable);
  const count = new Map<string, number>();
  for (const f of fns) count.set(f.name, (count.get(f.name) ?? 0) + 1);
  return fns
    .filter((f) => count.get(f.name) === 1 && NAME.test(f.name) && (!perfNames || perfNames.has(f.name)))
    .map((f) => ({ name: f.name, sites: f.sites.length }))
    .sort((a, b) => b.sites - a.sites || a.name.localeCompare(b.name));
}

/** 100 external functions with code, spread evenly over the names (the arming row). */
function pickFunctions(index: BinaryIndex, perfNames: Set<string>, n: number): string[] {
  const ext = new Set(
    index
      .functions()
      .filter((f) => f.external && f.address !== undefined && f.size > 0)
      .map((f) => f.name),
  );
  const ok = candidates(index, perfNames)
    .filter((c) => ext.has(c.name))
    .map((c) => c.name)
    .sort();
  if (ok.length < n) throw new Error(`only ${ok.length} functions are probe-able by both tools`);
  return Array.from({ length: n }, (_, i) => ok[Math.floor((i * ok.length) / n)]);
}

/**
 * The most-inlined functions whose sites (as ProbeLens arms them) add up to at most `target`, as close as they come.
 * Not only those in perf's symbol list: the most inlined have no symbol (perf places them from DWARF by name).
 */
function pickBySites(index: BinaryIndex, target: number): { fns: string[]; sites: number } {
  const fns: string[] = [];
  let sites = 0;
  for (const c of candidates(index)) {
    if (sites >= target) break;
    if (c.sites > target - sites) continue;
    const [armed] = siteCounts([c.name], index);
    if (armed.sites === 0 || sites + armed.sites > target) continue;
    fns.push(c.name);
    sites += armed.sites;
  }
  return { fns, sites };
}

/** Probe points of `group` in uprobe_events (perf writes one line per point). */
function pointsOf(group: string): number {
  return readFileSync(join(TRACEFS, 'uprobe_events'), 'utf8')
    .split('\n')
    .filter((l) => l.startsWith(`p:${group}/`) || l.startsWith(`r:${group}/`)).length;
}

/** The groups whose definitions probe `bin`. */
function groupsOn(bin: string): string[] {
  const out = new Set<string>();
  for (const l of readFileSync(join(TRACEFS, 'uprobe_events'), 'utf8').split('\n')) {
    const m = /^[pr]:([^/]+)\/\S+ (\S+):0x/.exec(l);
    if (m && m[2] === bin) out.add(m[1]);
  }
  return [...out];
}

/** Definitions of any group that probe `bin` (its private copy: only this bench's). */
function definitionsOn(bin: string): number {
  return readFileSync(join(TRACEFS, 'uprobe_events'), 'utf8')
    .split('\n')
    .filter((l) => l.includes(` ${bin}:0x`)).length;
}

const perfName = (group: string, f: string) => `${group}:${f.slice(0, 60)}=${f}`;

/**
 * The functions of `fns` perf can place. perf stops at the first function it cannot place and names it
 * ("Probe point 'f' not found"): that one is left out and the rest tried again; an error naming none of them is
 * narrowed down by halves. Everything added here is deleted again. `why`: perf's first line of its last refusal.
 */
function perfPlaceable(bin: string, group: string, fns: string[]): { ok: string[]; refused: string[]; why?: string } {
  let why: string | undefined;
  const add = (xs: string[]) => {
    const r = spawnSync('perf', ['probe', '-x', bin, ...xs.flatMap((f) => ['-a', perfName(group, f)])], { encoding: 'utf8' });
    spawnSync('perf', ['probe', '-q', '-d', `${group}:*`]);
    const err = `${r.stderr}${r.stdout}`;
    if (r.status !== 0) why = err.trim().split('\n')[0];
    return { ok: r.status === 0, err };
  };
  const split = (xs: string[]): { ok: string[]; refused: string[] } => {
    const refused: string[] = [];
    let rest = xs;
    for (;;) {
      if (rest.length === 0) return { ok: rest, refused };
      const r = add(rest);
      if (r.ok) return { ok: rest, refused };
      const named = rest.find((f) => r.err.includes(`'${f}'`));
      if (!named) break;
      refused.push(named);
      rest = rest.filter((f) => f !== named);
    }
    if (rest.length === 1) return { ok: [], refused: [...refused, ...rest] };
    const a = split(rest.slice(0, rest.length >> 1));
    const b = split(rest.slice(rest.length >> 1));
    return { ok: [...a.ok, ...b.ok], refused: [...refused, ...a.refused, ...b.refused] };
  };
  return { ...split(fns), why };
}

/** `perf probe --add` of `fns` (timed), the points it placed, `perf probe -d` (timed). */
function perfAddDelete(
  bin: string,
  group: string,
  fns: string[],
): { addMs: number; delMs: number; points: number; refused: string[]; error?: string } {
  const { ok, refused, why } = perfPlaceable(bin, group, fns);
  // perf places none of them: say why, in perf's words (a function inlined at more than 128 sites is refused).
  if (ok.length === 0) return { addMs: NaN, delMs: NaN, points: 0, refused: [], error: `perf places none of ${fns.join(', ')}: ${why}` };
  let t0 = performance.now();
  const add = spawnSync('perf', ['probe', '-q', '-x', bin, ...ok.flatMap((f) => ['-a', perfName(group, f)])], { encoding: 'utf8' });
  const addMs = performance.now() - t0;
  const points = pointsOf(group);
  t0 = performance.now();
  const del = spawnSync('perf', ['probe', '-q', '-d', `${group}:*`], { encoding: 'utf8' });
  const delMs = performance.now() - t0;
  const error = add.status !== 0 ? add.stderr.trim().split('\n').pop() : del.status !== 0 ? del.stderr.trim().split('\n').pop() : undefined;
  return { addMs, delMs, points, refused, error };
}

async function main(): Promise<void> {
  const argv = process.argv.slice(2);
  const runsAt = argv.indexOf('--runs');
  const runs = runsAt >= 0 ? Number(argv.splice(runsAt, 2)[1]) : 3;
  const sitesAt = argv.indexOf('--sites');
  const siteTargets = sitesAt >= 0 ? argv.splice(sitesAt, 2)[1].split(',').map(Number) : [100, 1000, 4000];
  const onlyAt = argv.indexOf('--teardown-only');
  const teardownOnly = onlyAt >= 0 && argv.splice(onlyAt, 1).length > 0;
  const real = argv[0] ? { path: resolve(argv[0]), what: resolve(argv[0]) } : realProject();
  const source = real?.path ?? (await fixture('many-O2')).path;
  const what = real?.what ?? `many-O2 fixture (${source}) — no corpus project is built; run bench/build-real-projects.sh`;
  const dir = mkdtempSync(join(tmpdir(), 'plbench-attach-'));
  const bin = join(dir, basename(source));
  copyFileSync(source, bin);
  const perfGroup = `plb${process.pid}`;
  try {
    console.log(`binary: ${what}`);
    const t0 = performance.now();
    const { index, fromCache } = await loadIndex(bin);
    const indexMs = performance.now() - t0;
    const perfList = spawnSync('perf', ['probe', '-x', bin, '-F'], { encoding: 'utf8', maxBuffer: 64 << 20 });
    const perfNames = new Set(
      perfList.status === 0 ? perfList.stdout.split('\n').map((l) => l.trim()) : index.functions().map((f) => f.name),
    );
    const picked = pickFunctions(index, perfNames, 100);
    console.log(
      `index: ${index.functions().length} functions, ${fromCache ? 'from cache' : 'built'} in ${indexMs.toFixed(0)} ms (later runs load it from the cache)`,
    );

    const cli = await bundleCli();
    const { sshd, flags, env } = await benchSshd();
    /** One CLI trace of `fns`: time to armed, the sites it says it armed, time from SIGINT to its exit. */
    const once = async (fns: string[], binary = bin, extra: string[] = []) => {
      const start = performance.now();
      const p = spawnWatched(
        process.execPath,
        [cli, 'trace', binary, ...fns, ...extra, ...flags],
        env,
        new RegExp(`tracing ${fns.length} probes? at \\d+ sites? on `),
      );
      const armedAt = await p.armed;
      const sites = Number(/tracing \d+ probes? at (\d+) sites?/.exec(p.stderr())![1]);
      const groups = groupsOn(binary);
      const signalled = performance.now();
      p.child.kill('SIGINT');
      const code = await waitExit(p.child);
      const stopMs = performance.now() - signalled;
      if (code !== 0) throw new Error(`probelens trace exited ${code}:\n${p.stderr()}`);
      // The agent disarms after the CLI has printed its summary and exited: the kernel is clean once the
      // definitions and the instance are gone.
      for (;;) {
        if (definitionsOn(binary) === 0 && groups.every((g) => !existsSync(join(TRACEFS, 'instances', g)))) break;
        if (performance.now() - signalled > 300_000) throw new Error(`${definitionsOn(binary)} definitions on ${binary} left behind`);
        await sleep(5);
      }
      const cleanMs = performance.now() - signalled;
      return { arm: armedAt - start, stop: stopMs, clean: cleanMs, sites };
    };
    const arm: number[] = [];
    const stop: number[] = [];
    // The same with one function: the fixed part (node start, index cache load, SSH login, agent start).
    const arm1: number[] = [];
    const teardown: string[][] = [];
    try {
      // One warm-up run (page cache, sshd's first fork), not counted.
      await once(picked);
      for (let r = 0; r < (teardownOnly ? 0 : runs); r++) {
        const x = await once(picked);
        arm.push(x.arm);
        stop.push(x.stop);
        arm1.push((await once(picked.slice(0, 1))).arm);
      }
      for (const target of siteTargets) {
        const { fns, sites } = pickBySites(index, target);
        const xs: Array<Awaited<ReturnType<typeof once>>> = [];
        for (let r = 0; r < runs; r++) xs.push(await once(fns));
        const perf = perfAddDelete(bin, perfGroup, fns);
        const stopMed = median(xs.map((x) => x.stop));
        teardown.push([
          `${target} sites: ${fns.length} most-inlined functions`,
          `${xs[0].sites} sites`,
          `${median(xs.map((x) => x.arm)).toFixed(0)} ms`,
          `${stopMed.toFixed(0)} ms (${xs.map((x) => x.stop.toFixed(0)).join(' / ')})${target >= 4000 ? (stopMed < 1000 ? ' goal met' : ' goal < 1 s NOT met') : ''}`,
          `${median(xs.map((x) => x.clean)).toFixed(0)} ms (${xs.map((x) => x.clean.toFixed(0)).join(' / ')})`,
          perf.error
            ? `failed: ${perf.error}`
            : `${perf.points} points: add ${perf.addMs.toFixed(0)} ms, delete ${perf.delMs.toFixed(0)} ms`,
          perf.refused.length ? `perf cannot place: ${perf.refused.join(', ')}` : `(chosen: ${sites} sites)`,
        ]);
      }
      // One probe of 4,000 sites: a header helper inlined into 4,000 functions (generated), one event of 4,000 points.
      const inlined = buildInlinedProgram(dir, 4_000);
      const xs: Array<Awaited<ReturnType<typeof once>>> = [];
      for (let r = 0; r < runs; r++) xs.push(await once(['hot'], inlined, ['--max-sites', '5000']));
      const perf = perfAddDelete(inlined, perfGroup, ['hot']);
      const stopMed = median(xs.map((x) => x.stop));
      teardown.push([
        'one probe: hot.h `hot` inlined into 4,000 generated functions',
        `${xs[0].sites} sites`,
        `${median(xs.map((x) => x.arm)).toFixed(0)} ms`,
        `${stopMed.toFixed(0)} ms (${xs.map((x) => x.stop.toFixed(0)).join(' / ')})${stopMed < 1000 ? ' goal met' : ' goal < 1 s NOT met'}`,
        `${median(xs.map((x) => x.clean)).toFixed(0)} ms (${xs.map((x) => x.clean.toFixed(0)).join(' / ')})`,
        perf.error ? `failed: ${perf.error}` : `${perf.points} points: add ${perf.addMs.toFixed(0)} ms, delete ${perf.delMs.toFixed(0)} ms`,
        'one tracefs event of 4,000 probe points',
      ]);
    } finally {
      await sshd.stop();
    }

    console.log(
      "\nteardown (probelens over ssh 127.0.0.1: arm, then SIGINT → the CLI's exit with its summary, and → the target clean; perf probe: the same functions)\n" +
        table([
          [
            'functions',
            'probelens sites',
            'arm',
            'user free (SIGINT → exit)',
            'kernel clean (SIGINT → nothing left)',
            'perf probe',
            'note',
          ],
          ...teardown,
        ]),
    );
    if (teardownOnly) return;
    const perf = perfAddDelete(bin, perfGroup, picked);
    const ms = (x: number) => `${x.toFixed(0)} ms`;
    const defineRows = await benchDefine(bin, picked, runs);
    const live = await benchLiveAdd(runs);
    console.log(
      table([
        ['tool', 'arm 100 functions', 'runs', 'stop + cleanup', 'note'],
        [
          'probelens trace (ssh 127.0.0.1)',
          ms(median(arm)),
          arm.map((x) => x.toFixed(0)).join(' / '),
          ms(median(stop)),
          'command start → "tracing 100 probes at N sites" (defined and enabled); SIGINT → exit',
        ],
        [
          'probelens trace, 1 function',
          ms(median(arm1)),
          arm1.map((x) => x.toFixed(0)).join(' / '),
          '-',
          'the fixed part: node start, index cache, SSH login, agent start',
        ],
        [
          'perf probe --add (local)',
          perf.error ? `failed: ${perf.error}` : ms(perf.addMs),
          '1',
          perf.error ? '-' : ms(perf.delMs),
          `defines only (not enabled), ${perf.points} points; perf probe -d to remove` +
            (perf.refused.length ? `; perf cannot place ${perf.refused.join(', ')} (left out)` : ''),
        ],
        ...defineRows,
        ...live.rows,
      ]),
    );
    const m = median(arm);
    console.log(
      `\nprobelens: median ${ms(m)} to armed — goal < 500 ms unloaded: ${m < 500 ? 'met' : 'NOT met'}` +
        (perf.error ? '' : `; ${(perf.addMs / m).toFixed(1)}× faster than perf probe`) +
        `\n${live.notes.join('\n')}\nload average now: ${loadavg()
          .map((x) => x.toFixed(1))
          .join(' ')}`,
    );
  } finally {
    spawnSync('perf', ['probe', '-q', '-d', `${perfGroup}:*`]);
    rmSync(dir, { recursive: true, force: true });
  }
}

main().then(
  () => process.exit(0),
  (e: Error) => {
    console.error(e.stack ?? e.message);
    process.exit(1);
  },
);

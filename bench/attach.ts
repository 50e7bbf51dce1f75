// npm run bench:attach -- [BIN] [--runs N]
// Arms 100 functions of a real project (the corpus's postgres, bench/build-real-projects.sh; the many-O2 fixture when
// it is absent) with `probelens trace` through a throwaway sshd on 127.0.0.1, timed from command start to the CLI's
// "tracing 100 probes" line (index from its cache, SSH login, agent start, build-id check, 100 definitions written,
// the group enabled), beside `perf probe -x BIN --add` of the same 100 (then `perf probe -d`). Goal: under 1 s.
// The binary is copied to a private path first, so other tracing on this machine never touches these probes.
// Then in-process figures (bench/attachLive.ts): defining the 100 pipelined beside one round trip each, and
// adding 1 probe to a session with 100 armed while they are called (time to armed, hits lost on the 100).
import { spawnSync } from 'node:child_process';
import { copyFileSync, mkdtempSync, rmSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { basename, join, resolve } from 'node:path';
import { loadIndex } from '../src/core/index/load';
import { builtCorpusBinary } from '../test/helpers/corpus';
import { fixture } from '../test/helpers/fixtures';
import { benchDefine, benchLiveAdd } from './attachLive';
import { benchSshd, bundleCli, median, spawnWatched, table, waitExit } from './engineCommon';

function realProject(): string | undefined {
  return builtCorpusBinary('postgres', 'postgres');
}

/** Functions both tools can probe by name: one definition each (unique, external, with code), spread evenly. */
function pickFunctions(names: string[], perfNames: Set<string>, n: number): string[] {
  const count = new Map<string, number>();
  for (const f of names) count.set(f, (count.get(f) ?? 0) + 1);
  const ok = [...new Set(names)].filter((f) => count.get(f) === 1 && /^[A-Za-z_][A-Za-z0-9_]*$/.test(f) && perfNames.has(f)).sort();
  if (ok.length < n) throw new Error(`only ${ok.length} functions are probe-able by both tools`);
  return Array.from({ length: n }, (_, i) => ok[Math.floor((i * ok.length) / n)]);
}

async function main(): Promise<void> {
  const argv = process.argv.slice(2);
  const runsAt = argv.indexOf('--runs');
  const runs = runsAt >= 0 ? Number(argv.splice(runsAt, 2)[1]) : 3;
  let source = argv[0] ? resolve(argv[0]) : realProject();
  let what = source ? `${source}` : '';
  if (!source) {
    source = (await fixture('many-O2')).path;
    what = `many-O2 fixture (${source}) — postgres is not built; run bench/build-real-projects.sh`;
  }
  const dir = mkdtempSync(join(tmpdir(), 'plbench-attach-'));
  const bin = join(dir, basename(source));
  copyFileSync(source, bin);
  const perfGroup = `plb${process.pid}`;
  let perfAdded = false;
  try {
    console.log(`binary: ${what}`);
    let t0 = performance.now();
    const { index, fromCache } = await loadIndex(bin);
    const indexMs = performance.now() - t0;
    const fns = index.functions();
    const perfList = spawnSync('perf', ['probe', '-x', bin, '-F'], { encoding: 'utf8', maxBuffer: 64 << 20 });
    const perfNames = new Set(perfList.status === 0 ? perfList.stdout.split('\n').map((l) => l.trim()) : fns.map((f) => f.name));
    const picked = pickFunctions(
      fns.filter((f) => f.external && f.probeable && f.address !== undefined && f.size > 0).map((f) => f.name),
      perfNames,
      100,
    );
    console.log(
      `index: ${fns.length} functions, ${fromCache ? 'from cache' : 'built'} in ${indexMs.toFixed(0)} ms (later runs load it from the cache)`,
    );

    const cli = await bundleCli();
    const { sshd, flags, env } = await benchSshd();
    const arm: number[] = [];
    const stop: number[] = [];
    // The same with one function: the fixed part (node start, index cache load, SSH login, agent start).
    const arm1: number[] = [];
    const once = async (fns: string[]) => {
      const start = performance.now();
      const p = spawnWatched(process.execPath, [cli, 'trace', bin, ...fns, ...flags], env, new RegExp(`tracing ${fns.length} probes? on `));
      const armedAt = await p.armed;
      p.child.kill('SIGINT');
      const code = await waitExit(p.child);
      if (code !== 0) throw new Error(`probelens trace exited ${code}:\n${p.stderr()}`);
      return { arm: armedAt - start, stop: performance.now() - armedAt };
    };
    try {
      // One warm-up run (page cache, sshd's first fork), not counted.
      await once(picked);
      for (let r = 0; r < runs; r++) {
        const x = await once(picked);
        arm.push(x.arm);
        stop.push(x.stop);
        arm1.push((await once(picked.slice(0, 1))).arm);
      }
    } finally {
      await sshd.stop();
    }

    t0 = performance.now();
    const add = spawnSync('perf', ['probe', '-q', '-x', bin, ...picked.flatMap((f) => ['-a', `${perfGroup}:${f}=${f}`])], {
      encoding: 'utf8',
    });
    const perfAddMs = performance.now() - t0;
    perfAdded = true;
    const perfOk = add.status === 0;
    t0 = performance.now();
    const del = spawnSync('perf', ['probe', '-q', '-d', `${perfGroup}:*`], { encoding: 'utf8' });
    const perfDelMs = performance.now() - t0;
    perfAdded = del.status !== 0;

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
          'command start → "tracing 100 probes" (defined and enabled)',
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
          perfOk ? ms(perfAddMs) : `failed: ${add.stderr.trim().split('\n').pop()}`,
          '1',
          perfOk ? ms(perfDelMs) : '-',
          'defines only (not enabled); perf probe -d to remove',
        ],
        ...defineRows,
        ...live.rows,
      ]),
    );
    const m = median(arm);
    console.log(
      `\nprobelens: median ${ms(m)} to armed — goal < 500 ms unloaded: ${m < 500 ? 'met' : 'NOT met'}` +
        (perfOk ? `; ${(perfAddMs / m).toFixed(1)}× faster than perf probe` : '') +
        `\n${live.notes.join('\n')}\nload average now: ${loadavg()
          .map((x) => x.toFixed(1))
          .join(' ')}`,
    );
  } finally {
    if (perfAdded) spawnSync('perf', ['probe', '-q', '-d', `${perfGroup}:*`]);
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

// npm run bench:overhead -- [--calls N] [--rounds R]
// The cost of a probe to the program it traces: the pace fixture's loop calls a tiny noipa function, `stamp`, N
// times as fast as it can and times itself: its CPU time per call (the uprobe traps are handled in its own context,
// so they are in it, and a loaded machine's other processes are not) and its wall time per call. Each round runs it
//   - untraced;
//   - traced by `probelens trace BIN stamp` (local target, the bundled CLI, its output to /dev/null);
//   - traced by `perf record -e probe_pace:stamp` on the same uprobe (`perf probe -x BIN stamp`), output to a file;
//   - and, to find where a difference comes from, under bare tracefs uprobes in a private instance read by `cat
//     trace_pipe > /dev/null`: one without fetch arguments (what perf's probe is), then ProbeLens's own
//     definition one piece at a time (`$comm`, the immediate site number, the record's secret frame).
// The modes alternate within a round, so a change of the machine's load touches them all; the figures are medians
// of the rounds, each beside the untraced loop as ns added per hit, with the load average before and after.
// Root and tracefs needed; the binary is a private copy, so no other tracing on this machine touches it.
import { spawn, spawnSync } from 'node:child_process';
import { copyFileSync, mkdirSync, mkdtempSync, openSync, closeSync, rmSync, rmdirSync, writeFileSync, existsSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { basename, join } from 'node:path';
import { fixture } from '../test/helpers/fixtures';
import { bundleCli, median, table, TRACEFS, waitExit } from './engineCommon';

interface Loop {
  /** The loop's wall time per call. */
  perCallNs: number;
  /** Its CPU time per call (the traps included: the kernel handles them in the program's context). */
  cpuPerCallNs: number;
}

function parseLoop(stdout: string): Loop {
  const m = /^loop ns=(\d+) per_call_ns=\d+ cpu_ns=(\d+)$/m.exec(stdout);
  const n = Number(/^count stamp (\d+)$/m.exec(stdout)?.[1]);
  if (!m || !n) throw new Error(`no loop line in the fixture's output:\n${stdout}`);
  return { perCallNs: Number(m[1]) / n, cpuPerCallNs: Number(m[2]) / n };
}

function runPace(bin: string, calls: number): Loop {
  const r = spawnSync(bin, [String(calls)], { encoding: 'utf8' });
  if (r.status !== 0) throw new Error(`${bin} exited ${r.status}: ${r.stderr}`);
  return parseLoop(r.stdout);
}

/** The fixture under `probelens trace BIN stamp` on this machine: armed first, stopped after. */
async function underProbelens(cli: string, bin: string, calls: number): Promise<Loop> {
  const devnull = openSync('/dev/null', 'w');
  const child = spawn(process.execPath, [cli, 'trace', bin, 'stamp', '--buffer-kb', '8192'], { stdio: ['ignore', devnull, 'pipe'] });
  closeSync(devnull);
  let err = '';
  await new Promise<void>((res, rej) => {
    child.stderr!.setEncoding('utf8').on('data', (d: string) => {
      err += d;
      if (/tracing 1 probe at 1 site on /.test(err)) res();
    });
    child.once('close', (code) => rej(new Error(`probelens trace exited (${code}) before it armed:\n${err}`)));
  });
  try {
    return runPace(bin, calls);
  } finally {
    child.kill('SIGINT');
    await waitExit(child);
  }
}

/** The fixture under `perf record` of the perf probe `event`. */
function underPerf(bin: string, event: string, calls: number, dir: string): Loop {
  const out = join(dir, 'perf.data');
  const r = spawnSync('perf', ['record', '-q', '-e', event, '-o', out, '--', bin, String(calls)], { encoding: 'utf8' });
  if (r.status !== 0) throw new Error(`perf record exited ${r.status}: ${r.stderr}`);
  rmSync(out, { force: true });
  return parseLoop(r.stdout);
}

/**
 * The fixture under bare tracefs uprobes: `defs` (definitions of group `group`) enabled in a private instance whose
 * trace_pipe a `cat` empties into /dev/null, as the agent's reader does.
 */
async function underTracefs(bin: string, group: string, defs: string[], calls: number): Promise<Loop> {
  const inst = join(TRACEFS, 'instances', group);
  for (const d of defs) writeFileSync(join(TRACEFS, 'uprobe_events'), `${d}\n`, { flag: 'a' });
  mkdirSync(inst);
  writeFileSync(join(inst, 'buffer_size_kb'), '8192');
  writeFileSync(join(inst, 'trace_clock'), 'mono');
  const devnull = openSync('/dev/null', 'w');
  const cat = spawn('cat', [join(inst, 'trace_pipe')], { stdio: ['ignore', devnull, 'ignore'] });
  closeSync(devnull);
  try {
    writeFileSync(join(inst, 'events', group, 'enable'), '1');
    return runPace(bin, calls);
  } finally {
    writeFileSync(join(inst, 'events', group, 'enable'), '0');
    cat.kill('SIGTERM');
    await waitExit(cat);
    writeFileSync(join(TRACEFS, 'uprobe_events'), `-:${group}/\n`, { flag: 'a' });
    rmdirSync(inst);
  }
}

async function main(): Promise<void> {
  const argv = process.argv.slice(2);
  const opt = (name: string, dflt: number) => {
    const i = argv.indexOf(name);
    return i >= 0 ? Number(argv[i + 1]) : dflt;
  };
  const calls = opt('--calls', 1_000_000);
  const rounds = opt('--rounds', 5);
  const f = await fixture('pace');
  const dir = mkdtempSync(join(tmpdir(), 'plbench-overhead-'));
  const bin = join(dir, basename(f.path));
  copyFileSync(f.path, bin);
  const cli = await bundleCli();
  // The offset ProbeLens arms, as its own `define` prints it.
  const def = spawnSync(process.execPath, [cli, 'define', bin, 'stamp'], { encoding: 'utf8' });
  const m = /^p:\S+ (\S+:0x[0-9a-f]+)/m.exec(def.stdout);
  if (!m) throw new Error(`probelens define printed no definition:\n${def.stdout}${def.stderr}`);
  const where = m[1];
  const group = `plbo${process.pid}`;
  const perfGroup = `plbp${process.pid}`;
  const add = spawnSync('perf', ['probe', '-q', '-x', bin, '--add', `${perfGroup}:stamp=stamp`], { encoding: 'utf8' });
  if (add.status !== 0) throw new Error(`perf probe --add failed: ${add.stderr}`);
  const variants: Array<{ name: string; args: string }> = [
    { name: 'tracefs uprobe, no fetch arguments', args: '' },
    { name: '+ $comm (as ProbeLens fetches it)', args: ' probelens_comm=$comm:string' },
    { name: '+ the immediate site number', args: ' probelens_comm=$comm:string probelens_site=\\0:u32' },
    {
      name: '+ the secret frame (three x64 immediates)',
      args: ' pl_h=\\0x8123456789abcdef:x64 probelens_comm=$comm:string pl_0=\\0x8123456789abcdef:x64 probelens_site=\\0:u32 pl_e=\\0x8123456789abcdef:x64',
    },
  ];
  const results = new Map<string, Loop[]>();
  const push = (k: string, v: Loop) => results.set(k, [...(results.get(k) ?? []), v]);
  const load0 = loadavg()[0];
  try {
    runPace(bin, calls); // warm-up: page cache, CPU frequency
    for (let r = 0; r < rounds; r++) {
      push('untraced', runPace(bin, calls));
      push('probelens trace (local)', await underProbelens(cli, bin, calls));
      push('perf record', underPerf(bin, `${perfGroup}:stamp`, calls, dir));
      for (const v of variants) push(v.name, await underTracefs(bin, group, [`p:${group}/stamp ${where}${v.args}`], calls));
    }
  } finally {
    spawnSync('perf', ['probe', '-q', '-d', `${perfGroup}:*`]);
    if (existsSync(join(TRACEFS, 'instances', group))) rmdirSync(join(TRACEFS, 'instances', group));
    rmSync(dir, { recursive: true, force: true });
  }
  const load1 = loadavg()[0];
  const cpu = (xs: Loop[]) => median(xs.map((x) => x.cpuPerCallNs));
  const wall = (xs: Loop[]) => median(xs.map((x) => x.perCallNs));
  const base = results.get('untraced')!;
  const perf = results.get('perf record')!;
  const ns = (x: number) => `${x.toFixed(0)} ns`;
  const signed = (x: number) => `${x >= 0 ? '+' : ''}${x.toFixed(0)} ns`;
  const rows = [...results].map(([k, xs]) => [
    k,
    ns(cpu(xs)),
    k === 'untraced' ? '-' : ns(cpu(xs) - cpu(base)),
    k === 'untraced' || k === 'perf record' ? '-' : signed(cpu(xs) - cpu(perf)),
    xs.map((x) => x.cpuPerCallNs.toFixed(0)).join(' / '),
    `${ns(wall(xs))} (${k === 'untraced' ? '-' : signed(wall(xs) - wall(base))})`,
  ]);
  console.log(
    `pace: ${calls.toLocaleString('en')} calls of stamp per run, ${rounds} rounds (modes alternated), load average ${load0.toFixed(1)} → ${load1.toFixed(1)} on this machine\n` +
      "CPU time of the traced program per call (the traps are handled in its context; other processes' turns are not in it),\n" +
      "and its wall time per call, which a loaded machine inflates with other processes' turns (the tracer's reader among them)\n" +
      table([['mode', 'CPU per call (median)', 'added per hit', 'beside perf record', 'rounds (CPU)', 'wall per call (added)'], ...rows]),
  );
}

main().catch((e: Error) => {
  console.error(e.stack ?? e.message);
  process.exit(1);
});

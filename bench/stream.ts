// npm run bench:stream -- [--calls N] [--buffer-kb KB] [--rounds R] [--cpu-prof DIR]
// A fixed workload of N calls at full speed (a tiny loop binary built here, probed at `tick seq`), streamed three ways
// with the same buffer_size_kb, in alternating rounds of one run:
//   baseline   the same definition armed by hand in its own instance, read by a plain `ssh … cat trace_pipe`
//              through a throwaway sshd on 127.0.0.1, lines counted;
//   probelens  `probelens trace BIN 'tick seq' --json --buffer-kb KB --host …` (the bundled CLI) through the same sshd,
//              hits counted, the summary's lost and kernelHits read: once on the binary stream (ring-buffer pages,
//              PROBELENS_STREAM=raw) and once on the text stream (PROBELENS_STREAM=text).
// Reported per run: delivered share (received / N), hits/s, client CPU while streaming, received + lost == N.
// Goals: the raw stream's share ≥ 1.0× the baseline's, client CPU ≤ 3 µs per hit; received + lost == N always.
import { execFileSync, spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, readdirSync, rmSync, rmdirSync, writeFileSync, mkdirSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { loadIndex } from '../src/core/index/load';
import { compileProbes } from '../src/core/probes/compiler';
import { frameProbe } from '../src/core/tracefs/framing';
import { formatDefinition } from '../src/core/probes/definition';
import {
  appendUprobe,
  benchSshd,
  bundleCli,
  cpuSeconds,
  median,
  sleep,
  table,
  trackCpu,
  TRACEFS,
  waitExit,
  type BenchSshd,
} from './engineCommon';

const LOOP_C = `#include <stdio.h>
#include <stdlib.h>
__attribute__((noipa, used)) long tick(long seq) { return seq * 2 + 1; }
int main(int argc, char **argv) {
  long n = argc > 1 ? atol(argv[1]) : 1000000, acc = 0;
  for (long i = 0; i < n; i++) acc += tick(i);
  printf("%ld\\n", acc);
  return 0;
}
`;

interface RunResult {
  tool: string;
  received: number;
  lost: number;
  kernelHits: number;
  seconds: number;
  cpu: number;
  workloadMs: number;
}

/** `--cpu-prof DIR`: each probelens run writes a V8 CPU profile there (named by its stream), to see where its time goes. */
function profileArgs(stream: string): string[] {
  const i = process.argv.indexOf('--cpu-prof');
  return i >= 0
    ? ['--cpu-prof', `--cpu-prof-dir=${process.argv[i + 1]}`, `--cpu-prof-name=probelens-${stream}-${Date.now()}.cpuprofile`]
    : [];
}

function arg(name: string, dflt: number): number {
  const i = process.argv.indexOf(`--${name}`);
  return i >= 0 ? Number(process.argv[i + 1]) : dflt;
}

/** Counts '\n'-terminated lines of a stream, LOST markers apart, and when the last one arrived. */
function lineCounter(onLine?: (line: string) => void) {
  const s = { lines: 0, lost: 0, lastAt: 0, carry: '' };
  return {
    s,
    push(chunk: string) {
      const text = s.carry + chunk;
      let start = 0;
      for (let nl = text.indexOf('\n'); nl >= 0; nl = text.indexOf('\n', start)) {
        const line = text.slice(start, nl);
        start = nl + 1;
        const m = /LOST (\d+) EVENTS/.exec(line);
        if (m) s.lost += Number(m[1]);
        else if (line) {
          s.lines++;
          onLine?.(line);
        }
        s.lastAt = performance.now();
      }
      s.carry = text.slice(start);
    },
  };
}

/** The remote `cat` reading the instance (not the ssh client or the session shell, whose argv names it too). */
function readerPids(instance: string): number[] {
  const out: number[] = [];
  for (const p of readdirSync('/proc')) {
    if (!/^\d+$/.test(p)) continue;
    try {
      const argv = readFileSync(`/proc/${p}/cmdline`, 'utf8').split('\0');
      if (argv[0] === 'cat' && argv[1]?.endsWith(`instances/${instance}/trace_pipe`)) out.push(Number(p));
    } catch {
      /* gone */
    }
  }
  return out;
}

function bufferedEntries(instanceDir: string): number {
  let n = 0;
  for (const cpu of readdirSync(join(instanceDir, 'per_cpu'))) {
    const m = /^entries: (\d+)$/m.exec(readFileSync(join(instanceDir, 'per_cpu', cpu, 'stats'), 'utf8'));
    n += m ? Number(m[1]) : 0;
  }
  return n;
}

function profileHits(event: string): number {
  for (const l of readFileSync(join(TRACEFS, 'uprobe_profile'), 'utf8').split('\n')) {
    const f = l.trim().split(/\s+/);
    if (f[1] === event) return Number(f[2]);
  }
  return NaN;
}

async function until(cond: () => boolean, ms: number, what: string): Promise<void> {
  const end = Date.now() + ms;
  while (!cond()) {
    if (Date.now() > end) throw new Error(`timed out after ${ms} ms waiting for ${what}`);
    await sleep(20);
  }
}

let lastWorkloadMs = 0;
async function runWorkload(bin: string, calls: number): Promise<number> {
  // Asynchronously: this process reads the baseline's stream meanwhile, and a blocked event loop would throttle it.
  const t0 = performance.now();
  const code = await waitExit(spawn(bin, [String(calls)], { stdio: 'ignore' }));
  if (code !== 0) throw new Error(`the workload exited ${code}`);
  lastWorkloadMs = performance.now() - t0;
  return t0;
}

async function baseline(
  ssh: BenchSshd,
  bin: string,
  definitionFor: (group: string, event: string) => string,
  calls: number,
  bufferKb: number,
  round: number,
): Promise<RunResult> {
  const group = `plbench_${process.pid}_${round}`;
  const event = `plb_tick_${process.pid}_${round}`;
  const inst = join(TRACEFS, 'instances', group);
  mkdirSync(inst);
  const child = spawn('ssh', [...ssh.sshd.sshArgs(), '--', 'cat', `${inst}/trace_pipe`], { stdio: ['ignore', 'pipe', 'pipe'] });
  try {
    writeFileSync(join(inst, 'buffer_size_kb'), String(bufferKb));
    // The same instance options the agent sets, so both streams carry the same columns.
    writeFileSync(join(inst, 'options', 'record-tgid'), '1');
    writeFileSync(join(inst, 'trace_clock'), 'mono');
    appendUprobe(definitionFor(group, event));
    writeFileSync(join(inst, 'events', group, 'enable'), '1');
    const counter = lineCounter();
    child.stdout.setEncoding('utf8').on('data', (d: string) => counter.push(d));
    await until(() => readerPids(group).length > 0, 60_000, 'the remote cat');
    const cpuAt = cpuSeconds(child.pid!);
    const cpu = trackCpu(child);
    const t0 = await runWorkload(bin, calls);
    // Drained: the kernel holds nothing more and the pipe has been quiet for a moment.
    await until(
      () => bufferedEntries(inst) === 0 && performance.now() - Math.max(counter.s.lastAt, t0) > 500,
      120_000,
      'the baseline stream to drain',
    );
    const kernelHits = profileHits(event);
    cpu.stop();
    return {
      tool: 'ssh cat trace_pipe',
      received: counter.s.lines,
      lost: counter.s.lost,
      kernelHits,
      seconds: (counter.s.lastAt - t0) / 1000,
      cpu: Math.max(cpu.last(), cpuSeconds(child.pid!)) - cpuAt,
      workloadMs: lastWorkloadMs,
    };
  } finally {
    try {
      writeFileSync(join(inst, 'events', group, 'enable'), '0');
    } catch {
      /* never enabled */
    }
    child.kill('SIGKILL');
    // A blocked `cat trace_pipe` outlives its ssh session: end it, or the instance stays busy.
    for (const pid of readerPids(group)) {
      try {
        process.kill(pid, 'SIGKILL');
      } catch {
        /* gone */
      }
    }
    try {
      appendUprobe(`-:${group}/${event}`);
    } catch {
      /* never defined */
    }
    for (let i = 0; i < 50 && existsSync(inst); i++) {
      try {
        rmdirSync(inst);
      } catch {
        await sleep(100);
      }
    }
    if (existsSync(inst)) console.error(`warning: could not remove ${inst}; rmdir it by hand`);
  }
}

async function probelens(
  ssh: BenchSshd,
  cli: string,
  bin: string,
  calls: number,
  bufferKb: number,
  stream: 'raw' | 'text',
): Promise<RunResult> {
  const child = spawn(
    process.execPath,
    [...profileArgs(stream), cli, 'trace', bin, 'tick seq', '--json', '--buffer-kb', String(bufferKb), ...ssh.flags],
    {
      env: { ...ssh.env, PROBELENS_STREAM: stream },
      stdio: ['ignore', 'pipe', 'pipe'],
    },
  );
  let summaryLine = '';
  let hitsLastAt = 0;
  let hits = 0;
  const counter = lineCounter((l) => {
    if (l.startsWith('{"summary"')) summaryLine = l;
    else {
      hits++;
      hitsLastAt = performance.now();
    }
  });
  child.stdout.setEncoding('utf8').on('data', (d: string) => counter.push(d));
  let err = '';
  child.stderr.setEncoding('utf8').on('data', (d: string) => (err += d));
  try {
    // Armed: our binary's probe is defined and its group enabled in its instance.
    let group = '';
    await until(
      () => {
        const m = new RegExp(`^p:(probelens_[0-9]+_[a-z0-9_]+)/\\S+ ${bin.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}:`, 'm').exec(
          readFileSync(join(TRACEFS, 'uprobe_events'), 'utf8'),
        );
        if (m) group = m[1];
        const en = join(TRACEFS, 'instances', group, 'events', group, 'enable');
        return !!group && existsSync(en) && readFileSync(en, 'utf8').trim() === '1';
      },
      120_000,
      `probelens to arm\n${err}`,
    );
    const cpuAt = cpuSeconds(child.pid!);
    const cpu = trackCpu(child);
    const t0 = await runWorkload(bin, calls);
    // Let the stream run dry before asking it to stop; STOP drains what is left either way.
    await until(() => performance.now() - Math.max(hitsLastAt, t0) > 500, 120_000, 'the probelens stream to go quiet');
    const cpuStreaming = Math.max(cpu.last(), cpuSeconds(child.pid!)) - cpuAt;
    cpu.stop();
    child.kill('SIGINT');
    const code = await waitExit(child);
    if (code !== 0) throw new Error(`probelens trace exited ${code}:\n${err}`);
    const summary = JSON.parse(summaryLine).summary as { hits: Record<string, number>; lost: number; kernelHits: Record<string, number> };
    if (!err.includes(stream === 'raw' ? 'streaming ring-buffer pages' : 'streaming trace_pipe text'))
      throw new Error(`probelens did not stream ${stream}:\n${err}`);
    return {
      tool: `probelens ${stream}`,
      received: hits,
      lost: summary.lost,
      kernelHits: summary.kernelHits.tick ?? NaN,
      seconds: (hitsLastAt - t0) / 1000,
      cpu: cpuStreaming,
      workloadMs: lastWorkloadMs,
    };
  } finally {
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
  }
}

async function main(): Promise<void> {
  const calls = arg('calls', 300_000);
  const bufferKb = arg('buffer-kb', 64);
  const rounds = arg('rounds', 3);
  const dir = mkdtempSync(join(tmpdir(), 'plbench-stream-'));
  try {
    writeFileSync(join(dir, 'loop.c'), LOOP_C);
    const bin = join(dir, 'loop');
    execFileSync('gcc', ['-O2', '-g', '-Wl,--build-id', '-o', bin, join(dir, 'loop.c')]);
    const { index } = await loadIndex(bin);
    const [probe] = await compileProbes(['tick seq'], index, { group: 'probelens_1_template' });
    // The very definition probelens writes, under the baseline's own group and event name, framed by a secret
    // as the agent client frames it (so both records have the same size in the ring buffer).
    const framed = existsSync(join(TRACEFS, 'README')) && readFileSync(join(TRACEFS, 'README'), 'utf8').includes('\\imm-value');
    // The baseline's group is not a ProbeLens group (a session's sweep would take a `probelens_*` one for a dead
    // owner's): the text is made under a placeholder ProbeLens group and then given the baseline's.
    const definitionFor = (group: string, event: string) => {
      const d = { ...probe.definition, group: 'probelens_1_baseline', event };
      const text = formatDefinition(framed ? frameProbe(d, { name: '__pl', printed: '0x9234567890abcdef' }) : d);
      return text.replace(/^([pr]):probelens_1_baseline\//, `$1:${group}/`);
    };
    const cli = await bundleCli();
    const ssh = await benchSshd();
    const results: RunResult[] = [];
    try {
      for (let r = 0; r < rounds; r++) {
        results.push(await baseline(ssh, bin, definitionFor, calls, bufferKb, r));
        results.push(await probelens(ssh, cli, bin, calls, bufferKb, 'raw'));
        results.push(await probelens(ssh, cli, bin, calls, bufferKb, 'text'));
      }
    } finally {
      await ssh.sshd.stop();
    }
    console.log(
      `workload: ${calls} calls of tick() at full speed; buffer_size_kb ${bufferKb}; ${rounds} round(s); baseline definition: ${definitionFor('G', 'E')}`,
    );
    const pct = (x: number) => `${(x * 100).toFixed(1)}%`;
    console.log(
      table([
        ['tool', 'received', 'lost', 'kernel hits', 'received+lost==N', 'share', 'hits/s', 'client CPU', 'CPU µs/hit', 'workload'],
        ...results.map((x) => [
          x.tool,
          String(x.received),
          String(x.lost),
          String(x.kernelHits),
          x.received + x.lost === calls ? 'yes' : `NO (${x.received + x.lost})`,
          pct(x.received / calls),
          (x.received / x.seconds).toFixed(0),
          `${x.cpu.toFixed(2)} s`,
          ((x.cpu * 1e6) / Math.max(1, x.received)).toFixed(1),
          `${x.workloadMs.toFixed(0)} ms`,
        ]),
      ]),
    );
    const of = (tool: string) => results.filter((x) => x.tool.startsWith(tool));
    const share = (tool: string) => median(of(tool).map((x) => x.received / calls));
    const cpuPerHit = (tool: string) => median(of(tool).map((x) => (x.cpu * 1e6) / Math.max(1, x.received)));
    const exact = of('probelens').every((x) => x.received + x.lost === calls);
    const base = share('ssh');
    console.log(
      `\nmedian share: probelens raw ${pct(share('probelens raw'))} (${(share('probelens raw') / base).toFixed(2)}× the baseline; goal ≥ 1.0×: ` +
        `${share('probelens raw') >= base ? 'met' : 'NOT met'}), probelens text ${pct(share('probelens text'))} ` +
        `(${(share('probelens text') / base).toFixed(2)}×), baseline ${pct(base)}; client CPU per hit: raw ${cpuPerHit('probelens raw').toFixed(1)} µs ` +
        `(goal ≤ 3: ${cpuPerHit('probelens raw') <= 3 ? 'met' : 'NOT met'}), text ${cpuPerHit('probelens text').toFixed(1)} µs; ` +
        `received + lost == N in every probelens run: ${exact ? 'yes' : 'NO'}`,
    );
  } finally {
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

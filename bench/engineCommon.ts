// Shared by bench/stream.ts, bench/attach.ts and bench/overhead.ts: the CLI as users run it (the bundles
// esbuild.mjs builds, not tsx from source, whose compile step would dominate a sub-second measurement), a throwaway
// sshd on 127.0.0.1, CPU time of a child process, and small table/statistics helpers.
import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { promisify } from 'node:util';
import { atProcessEnd, startSshd, type Sshd } from '../test/helpers/sshd';

export const REPO = resolve(__dirname, '..');
export const TRACEFS = '/sys/kernel/tracing';

/** Builds the bundles as `npm run build` does (esbuild.mjs) into a directory of their own; returns its cli.js path. */
export async function bundleCli(): Promise<string> {
  const outdir = mkdtempSync(join(tmpdir(), 'probelens-bench-cli-'));
  atProcessEnd(() => rmSync(outdir, { recursive: true, force: true }));
  await promisify(execFile)(process.execPath, ['esbuild.mjs', '--outdir', outdir], { cwd: REPO });
  return join(outdir, 'cli.js');
}

export interface BenchSshd {
  sshd: Sshd;
  /** --host/--identity/--known-hosts for the CLI. */
  flags: string[];
  /** Environment with an empty HOME (no ~/.ssh/config, no agent). */
  env: NodeJS.ProcessEnv;
}

export async function benchSshd(): Promise<BenchSshd> {
  const sshd = await startSshd();
  const home = join(sshd.dir, 'home');
  mkdirSync(join(home, '.ssh'), { recursive: true, mode: 0o700 });
  const env: NodeJS.ProcessEnv = { ...process.env, HOME: home };
  delete env.SSH_AUTH_SOCK;
  return {
    sshd,
    flags: ['--host', `root@${sshd.host}:${sshd.port}`, '--identity', sshd.identityFile, '--known-hosts', sshd.knownHostsFile],
    env,
  };
}

/** utime + stime of a live process, in seconds (0 once it is gone). */
export function cpuSeconds(pid: number): number {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    // Fields 14 and 15 of stat(5); after the comm field the list starts at field 3.
    return (Number(fields[11]) + Number(fields[12])) / 100;
  } catch {
    return 0;
  }
}

/** Tracks a child's CPU time until it exits (sampled: /proc is gone once it has been reaped). */
export function trackCpu(child: ChildProcess, everyMs = 50): { last(): number; stop(): void } {
  let last = 0;
  const timer = setInterval(() => {
    const v = child.pid ? cpuSeconds(child.pid) : 0;
    if (v > last) last = v;
  }, everyMs);
  return { last: () => last, stop: () => clearInterval(timer) };
}

export const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

export function median(xs: number[]): number {
  const s = [...xs].filter((x) => Number.isFinite(x)).sort((a, b) => a - b);
  return s.length ? s[Math.floor(s.length / 2)] : NaN;
}

export function table(rows: string[][]): string {
  const w = rows[0].map((_, i) => Math.max(...rows.map((r) => (r[i] ?? '').length)));
  return rows
    .map((r) =>
      r
        .map((c, i) => (c ?? '').padEnd(w[i]))
        .join('  ')
        .trimEnd(),
    )
    .join('\n');
}

/** Appends a line to uprobe_events (never truncates: other tools' probes live there too). */
export function appendUprobe(line: string): void {
  writeFileSync(join(TRACEFS, 'uprobe_events'), `${line}\n`, { flag: 'a' });
}

/** The exit code, or `SIGNAME` when a signal ended the child. */
export function waitExit(child: ChildProcess): Promise<number | string> {
  return new Promise((res) => {
    if (child.exitCode !== null || child.signalCode !== null) return res(child.exitCode ?? String(child.signalCode));
    child.once('close', (code, signal) => res(code ?? String(signal)));
  });
}

/** Spawns and collects stderr; resolves `armed` when stderr matches `pattern`. */
export function spawnWatched(cmd: string, args: string[], env: NodeJS.ProcessEnv, pattern: RegExp) {
  const child = spawn(cmd, args, { env, stdio: ['ignore', 'pipe', 'pipe'] });
  let err = '';
  const armed = new Promise<number>((res, rej) => {
    child.stderr!.setEncoding('utf8').on('data', (d: string) => {
      err += d;
      if (pattern.test(err)) res(performance.now());
    });
    child.once('close', (code) => rej(new Error(`exited (${code}) before ${pattern}:\n${err}`)));
  });
  armed.catch(() => undefined);
  return { child, armed, stderr: () => err };
}

// The instrumented redis of the corpus as an oracle: a running redis-server whose counting runtime
// (test/corpus/runtime/count-calls.c) writes per-function call counts on SIGUSR2, and the workload that drives it.
import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { join } from 'node:path';
import { promisify } from 'node:util';
import type { ElfFacts } from '../helpers/parity';

const execFileP = promisify(execFile);
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

export interface Snapshot {
  n: number;
  /** CLOCK_MONOTONIC at the snapshot's start and end, in microseconds (the trace clock's resolution). */
  startUs: number;
  endUs: number;
  /** Calls counted per function name (same-name functions summed, as a spec `NAME` arms them all). */
  counts: Map<string, number>;
  /** Every function address (ELF addresses) the runtime has seen called. */
  addresses: Set<bigint>;
  overflow: number;
  /** The main thread was interrupted in the program's own code (a call may straddle the snapshot). */
  busy: boolean;
}

export async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = createServer();
    s.on('error', reject);
    s.listen(0, '127.0.0.1', () => {
      const a = s.address();
      s.close(() => resolve(typeof a === 'object' && a ? a.port : 0));
    });
  });
}

export class CountingRedis {
  private snapshots = 0;
  private constructor(
    readonly proc: ChildProcess,
    readonly port: number,
    private readonly countsPath: string,
    private readonly names: Map<bigint, string>,
    private readonly cli: string,
    private readonly benchmark: string,
  ) {}

  /** Starts `server` (a private copy of the instrumented redis-server) and waits until it answers PING. */
  static async start(opts: { server: string; cli: string; benchmark: string; dir: string; facts: ElfFacts }): Promise<CountingRedis> {
    const port = await freePort();
    const countsPath = join(opts.dir, 'counts');
    const proc = spawn(
      opts.server,
      [
        '--port',
        String(port),
        '--bind',
        '127.0.0.1',
        '--save',
        '',
        '--appendonly',
        'no',
        '--dir',
        opts.dir,
        '--logfile',
        join(opts.dir, 'redis.log'),
      ],
      { env: { ...process.env, PROBELENS_COUNTS: countsPath }, stdio: 'ignore' },
    );
    const r = new CountingRedis(proc, port, countsPath, namesByAddress(opts.facts), opts.cli, opts.benchmark);
    // Bounded wait for the listener (a hang guard, not a measurement).
    for (let i = 0; ; i++) {
      if (proc.exitCode !== null) throw new Error(`redis-server exited with ${proc.exitCode} (log: ${join(opts.dir, 'redis.log')})`);
      try {
        if ((await r.cliCommand('PING')).trim() === 'PONG') return r;
      } catch {
        /* not listening yet */
      }
      if (i > 300) throw new Error('redis-server did not answer PING within 30 s');
      await sleep(100);
    }
  }

  async cliCommand(...args: string[]): Promise<string> {
    return (await execFileP(this.cli, ['-h', '127.0.0.1', '-p', String(this.port), ...args])).stdout;
  }

  /** Runs redis-benchmark against the server (a fixed, deterministic request mix) and waits for its connections to close. */
  async workload(requests: number): Promise<void> {
    await execFileP(
      this.benchmark,
      [
        '-h',
        '127.0.0.1',
        '-p',
        String(this.port),
        '-n',
        String(requests),
        '-c',
        '2',
        '-q',
        '-t',
        'ping,set,get,incr,lpush,rpush,lpop,rpop,sadd,hset,spop,zadd,lrange_100,mset',
      ],
      { maxBuffer: 16 << 20 },
    );
    await this.connectionsClosed();
  }

  /**
   * Waits until the server has closed every client connection (none on its port but the listener in /proc/net/tcp):
   * a client that has exited leaves the server its connection to close, which calls the workload's functions too.
   */
  async connectionsClosed(): Promise<void> {
    const port = this.port.toString(16).toUpperCase().padStart(4, '0');
    const open = () =>
      ['/proc/net/tcp', '/proc/net/tcp6'].some((f) =>
        (existsSync(f) ? readFileSync(f, 'utf8') : '')
          .split('\n')
          .slice(1)
          .map((l) => l.trim().split(/\s+/))
          // local address, state: the server's own end of a connection (not the listener, 0A; not a client's
          // TIME_WAIT, 06, which is on the client's port).
          .some((c) => c.length > 3 && c[1].endsWith(`:${port}`) && c[3] !== '0A' && c[3] !== '06'),
      );
    for (let i = 0; open(); i++) {
      if (i > 1000) throw new Error(`redis-server still has client connections open after 20 s`);
      await sleep(20);
    }
  }

  /** Asks the program for its counts and waits until it has written them. */
  async snapshot(): Promise<Snapshot> {
    return quietSnapshot(() => takeSnapshot(this.proc, this.countsPath, ++this.snapshots, this.names));
  }

  stop(): void {
    if (this.proc.exitCode === null) this.proc.kill('SIGKILL');
  }
}

/**
 * Signals a process running the counting runtime (PROBELENS_COUNTS=countsPath) for snapshot `n` and reads it;
 * `names` maps a function's ELF address to its name (the first symbol there).
 */
export async function takeSnapshot(proc: ChildProcess, countsPath: string, n: number, names: Map<bigint, string>): Promise<Snapshot> {
  const file = `${countsPath}.${n}`;
  proc.kill('SIGUSR2');
  for (let i = 0; !existsSync(file); i++) {
    if (proc.exitCode !== null) throw new Error(`the counting program exited (${proc.exitCode}) before writing its counts`);
    if (i > 1000) throw new Error(`no counts snapshot ${file} after 20 s`);
    await sleep(20);
  }
  const counts = new Map<string, number>();
  const addresses = new Set<bigint>();
  let head: string[] = [];
  for (const line of readFileSync(file, 'utf8').split('\n')) {
    if (line.startsWith('snapshot ')) head = line.split(' ');
    else if (line) {
      const [off, c] = line.split(' ');
      addresses.add(BigInt(`0x${off}`));
      const name = names.get(BigInt(`0x${off}`)) ?? `?0x${off}`;
      counts.set(name, (counts.get(name) ?? 0) + Number(c));
    }
  }
  if (head.length !== 6) throw new Error(`counts snapshot ${file} has no trailer line`);
  return {
    n,
    startUs: Math.floor(Number(head[2]) / 1000),
    endUs: Math.ceil(Number(head[3]) / 1000),
    counts,
    addresses,
    overflow: Number(head[4]),
    busy: head[5] === '1',
  };
}

/**
 * A snapshot that splits no call: one taken while the main thread was in its own code may have caught a call
 * between its uprobe (whose trap is where the kernel delivers the signal) and the body's counting hook, which would
 * put that call's hit before the snapshot and its count after it. So a busy snapshot is followed by another, until
 * one finds the main thread outside the program (waiting in a system call), as an idle program is nearly always;
 * counts only grow, so a later snapshot is as good a boundary. Bounded: after 100 tries the last one is returned.
 */
export async function quietSnapshot(take: () => Promise<Snapshot>): Promise<Snapshot> {
  let s = await take();
  for (let i = 0; s.busy && i < 100; i++) {
    await sleep(10);
    s = await take();
  }
  return s;
}

/** The first symbol's name at each function address. */
export function namesByAddress(facts: ElfFacts): Map<bigint, string> {
  const names = new Map<bigint, string>();
  for (const s of facts.funcs) if (!names.has(s.address)) names.set(s.address, s.name);
  return names;
}

/** Calls made between two snapshots, per function name. */
export function delta(a: Snapshot, b: Snapshot): Map<string, number> {
  const out = new Map<string, number>();
  for (const [k, v] of b.counts) {
    const d = v - (a.counts.get(k) ?? 0);
    if (d !== 0) out.set(k, d);
  }
  return out;
}

/**
 * How `perf probe`'s placement counted `chosen` against the program's own counts: the functions it counted exactly,
 * those it counted otherwise, and a report of both and of those it could not place.
 */
export function perfExactness(
  chosen: readonly string[],
  perf: { events: Map<string, string>; failed: Map<string, string> },
  perfCounts: Map<string, number>,
  expected: Map<string, number>,
): { exact: string[]; off: string[]; report: string } {
  const exact: string[] = [];
  const off: string[] = [];
  let over = 0;
  for (const n of chosen) {
    const ev = perf.events.get(n);
    if (!ev) continue;
    const g = perfCounts.get(ev) ?? 0;
    const e = expected.get(n) ?? 0;
    if (g === e) exact.push(n);
    else off.push(`${n}: perf counted ${g}, the program ${e}`);
    if (g > e) over++;
  }
  const failed = [...perf.failed].map(([n, why]) => `${n}: ${why}`);
  const report =
    `perf probe: ${exact.length} of ${chosen.length} functions counted exactly; ${off.length} counted otherwise ` +
    `(${over} over):\n  ${off.slice(0, 40).join('\n  ')}\n` +
    `${failed.length} not armed by perf probe:\n  ${failed.slice(0, 20).join('\n  ')}`;
  return { exact, off, report };
}

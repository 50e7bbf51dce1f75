// The instrumented SQLite of the corpus as an oracle: a running sqlite3 shell whose counting runtime
// (test/corpus/runtime/count-calls.c) writes per-function call counts on SIGUSR2. The shell reads SQL from a pipe;
// a `.print` marker after each batch says when it has run it, and between batches it waits in read(), calling
// nothing, so snapshots taken there bracket exactly one batch.
import { spawn, type ChildProcess } from 'node:child_process';
import { join } from 'node:path';
import type { ElfFacts } from '../helpers/parity';
import { namesByAddress, quietSnapshot, takeSnapshot, type Snapshot } from './redisCounts';

export class CountingSqlite {
  private snapshots = 0;
  private batches = 0;
  private out = '';
  private err = '';
  private waiters: Array<() => void> = [];

  private constructor(
    readonly proc: ChildProcess,
    private readonly countsPath: string,
    private readonly names: Map<bigint, string>,
  ) {
    proc.stdout!.setEncoding('utf8').on('data', (d: string) => {
      this.out += d;
      for (const w of this.waiters.splice(0)) w();
    });
    proc.stderr!.setEncoding('utf8').on('data', (d: string) => (this.err += d));
    proc.on('exit', () => {
      for (const w of this.waiters.splice(0)) w();
    });
  }

  /** Starts `shell` (a private copy of the instrumented sqlite3) on a database file in `dir`, and waits until it reads. */
  static async start(opts: { shell: string; dir: string; facts: ElfFacts }): Promise<CountingSqlite> {
    const countsPath = join(opts.dir, 'counts');
    // -bail: an error ends the shell, so a broken workload fails the test instead of counting less.
    const proc = spawn(opts.shell, ['-bail', join(opts.dir, 'workload.db')], {
      env: { ...process.env, PROBELENS_COUNTS: countsPath },
      stdio: ['pipe', 'pipe', 'pipe'],
    });
    const s = new CountingSqlite(proc, countsPath, namesByAddress(opts.facts));
    await s.run('');
    return s;
  }

  /** Sends `sql` and waits until the shell has run it (its marker line is printed); returns what it printed. */
  async run(sql: string): Promise<string> {
    const marker = `probelens-batch-${++this.batches}-done`;
    const from = this.out.length;
    this.proc.stdin!.write(`${sql}\n.print ${marker}\n`);
    // Bounded by the shell's exit (a hang guard: the test runner's timeout ends a stuck shell).
    while (!this.out.includes(`${marker}\n`, from)) {
      if (this.proc.exitCode !== null || this.proc.signalCode !== null)
        throw new Error(`sqlite3 exited (${this.proc.exitCode ?? this.proc.signalCode}) running the workload: ${this.err.trim()}`);
      await new Promise<void>((r) => this.waiters.push(r));
    }
    return this.out.slice(from, this.out.indexOf(`${marker}\n`, from));
  }

  /** Asks the program for its counts and waits until it has written them. */
  snapshot(): Promise<Snapshot> {
    return quietSnapshot(() => takeSnapshot(this.proc, this.countsPath, ++this.snapshots, this.names));
  }

  stop(): void {
    if (this.proc.exitCode === null && this.proc.signalCode === null) this.proc.kill('SIGKILL');
  }
}

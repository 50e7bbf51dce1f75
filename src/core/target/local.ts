// This machine as a target: the fixed program runs as a child process (never through a shell), as root
// directly or through `sudo -n` when configured.
// Tests: test/integration/agentProcess.test.ts, test/integration/agentWatchdog.test.ts, test/integration/capture.test.ts
import { spawn, type ChildProcess } from 'node:child_process';
import type { ExecChannel, ExecExit, ExecOptions, Target } from './target';

export class LocalTarget implements Target {
  readonly host: string;
  private readonly children = new Set<ChildProcess>();

  constructor(private readonly options: { sudo?: boolean; host?: string } = {}) {
    this.host = options.host ?? 'local';
  }

  describe(): string {
    const uid = process.getuid?.();
    return `local (${uid === 0 ? 'root' : this.options.sudo ? 'sudo -n' : `uid ${uid}`})`;
  }

  exec(argv: readonly string[], opts: ExecOptions = {}): Promise<ExecChannel> {
    const sudo = opts.sudo ?? this.options.sudo ?? false;
    const full = sudo ? ['sudo', '-n', '--', ...argv] : [...argv];
    return new Promise((resolve, reject) => {
      // In a session of its own: a terminal's Ctrl-C (or Ctrl-Z) signals its whole foreground process group, and the
      // agent must hear of a stop from its client (which reads the kernel's counts and drains the stream first), not
      // die of the same SIGINT halfway. It still ends with its client: its stdin closes when the client dies.
      const child = spawn(full[0], full.slice(1), { stdio: ['pipe', 'pipe', 'pipe'], detached: true });
      this.children.add(child);
      const exit = new Promise<ExecExit>((res) => {
        child.once('close', (code, signal) => {
          this.children.delete(child);
          res({ code, signal: signal ? signal.replace(/^SIG/, '') : null });
        });
      });
      child.once('error', (err) => {
        this.children.delete(child);
        reject(new LocalExecError(full[0], err));
      });
      child.once('spawn', () => {
        // A client that vanishes must not crash on EPIPE: the agent notices stdin EOF and cleans up itself.
        child.stdin.on('error', () => undefined);
        resolve({
          stdin: child.stdin,
          stdout: child.stdout,
          stderr: child.stderr,
          exit,
          kill: (signal = 'TERM') => {
            child.kill(`SIG${signal}` as NodeJS.Signals);
          },
          detach: () => {
            child.stdin.end();
            child.stdout.destroy();
            child.stderr.destroy();
            child.unref();
          },
        });
      });
    });
  }

  async close(): Promise<void> {
    for (const child of this.children) child.stdin?.end();
  }
}

export class LocalExecError extends Error {
  constructor(program: string, cause: Error) {
    super(`cannot start ${program} on this machine (${cause.message}): check that it is installed and on PATH`);
    this.name = 'LocalExecError';
  }
}

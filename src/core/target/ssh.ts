// The SSH implementation of Target: one verified connection (see src/core/ssh), one exec channel per fixed
// program. The remote login shell receives plain words or a fixed bootstrap (see ssh/remoteCommand.ts), never
// quoted text; the argv elements are also checked to be plain text so nothing NUL-bearing can travel.
// Tests: test/integration/ssh.test.ts, test/integration/sshPassword.test.ts, test/vm/uprobes.test.ts
import type { ClientChannel } from 'ssh2';
import { connectSsh, type SshConnectOptions, type SshConnection } from '../ssh/connect';
import { SshError } from '../ssh/errors';
import { formatDestination, parseDestination } from '../ssh/destination';
import { remoteCommand } from '../ssh/remoteCommand';
import { type ExecChannel, type ExecExit, type ExecOptions, type Target } from './target';

export class SshExecError extends SshError {}

// Text with newlines and tabs but no other control characters: the fixed agent script is text, never binary.
function isText(s: string): boolean {
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    if ((c < 0x20 && c !== 0x0a && c !== 0x09) || c === 0x7f) return false;
  }
  return true;
}

export class SshTarget implements Target {
  private constructor(
    readonly host: string,
    private readonly conn: SshConnection,
  ) {}

  /**
   * Connect (resolving ssh config, ProxyJump, verifying every host key) and return a ready target.
   * `host` labels hits; it defaults to the destination as the user wrote it.
   */
  static async connect(opts: SshConnectOptions & { label?: string }): Promise<SshTarget> {
    const dest = typeof opts.destination === 'string' ? parseDestination(opts.destination) : opts.destination;
    const conn = await connectSsh({ ...opts, destination: dest });
    return new SshTarget(opts.label ?? (typeof opts.destination === 'string' ? opts.destination : formatDestination(dest)), conn);
  }

  describe(): string {
    return this.conn.describe();
  }

  /** Settles when the connection is gone; carries the reason when it died (e.g. keepalive timeout). */
  get disconnected(): Promise<Error | undefined> {
    return this.conn.closed;
  }

  exec(argv: readonly string[], opts: ExecOptions = {}): Promise<ExecChannel> {
    if (argv.length === 0) return Promise.reject(new SshExecError('ssh exec: empty argv (internal error; please report)'));
    for (const a of argv) {
      if (!isText(a))
        return Promise.reject(new SshExecError('ssh exec: a program argument contains control characters (internal error; please report)'));
    }
    const { command, stdinPrefix } = remoteCommand(argv, opts.sudo ?? false);
    return new Promise((resolve, reject) => {
      const failed = (err: Error) =>
        reject(
          new SshExecError(
            `ssh ${this.describe()}: could not start the remote program (${err.message}); reconnect, or check MaxSessions in the server's sshd_config`,
          ),
        );
      try {
        this.conn.client.exec(command, (err, ch) => {
          if (err) return failed(err);
          if (stdinPrefix.length) ch.write(stdinPrefix);
          resolve(wrapChannel(ch));
        });
      } catch (e) {
        // ssh2 throws synchronously once the connection is gone.
        failed(e as Error);
      }
    });
  }

  async close(): Promise<void> {
    await this.conn.close();
  }
}

function wrapChannel(ch: ClientChannel): ExecChannel {
  // Writing to a channel whose connection died emits 'error'; unhandled, that would end the whole process.
  // The agent notices the lost client by itself and `exit` settles on close, so the error carries nothing new.
  ch.on('error', () => undefined);
  ch.stderr.on('error', () => undefined);
  let code: number | null = null;
  let signal: string | null = null;
  ch.on('exit', (c: number | null, sig?: string) => {
    code = typeof c === 'number' ? c : null;
    signal = sig ? sig.replace(/^SIG/, '') : null;
  });
  const exit = new Promise<ExecExit>((resolve) => ch.once('close', () => resolve({ code, signal })));
  return {
    stdin: ch,
    stdout: ch,
    stderr: ch.stderr,
    exit,
    kill(sig = 'TERM') {
      // OpenSSH's sshd honours "signal" requests since 7.9; older servers ignore it (the agent also exits on EOF).
      try {
        ch.signal(sig);
      } catch {
        // channel already closed
      }
    },
  };
}

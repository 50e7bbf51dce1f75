// A Target runs ONE fixed program on a machine (this one, or one reached over SSH) and gives back its three
// streams. Only fixed text (the agent script) ever becomes a command: everything variable (definitions, paths,
// filters) travels as data on the program's stdin, so no implementation needs to quote user text.
// Tests: test/unit/core/session/targetCaps.test.ts, test/integration/agentProcess.test.ts
import type { Readable, Writable } from 'node:stream';

export interface ExecOptions {
  /** Run through `sudo -n` (never prompts; fails clearly when a password would be needed). */
  sudo?: boolean;
}

export interface ExecExit {
  /** Exit status, or null when the program died of a signal or the channel closed without one. */
  code: number | null;
  /** Signal name without `SIG` (`"TERM"`), or null. */
  signal: string | null;
}

export interface ExecChannel {
  stdin: Writable;
  stdout: Readable;
  stderr: Readable;
  /** Settles when the program has exited and its streams are closed; never rejects. */
  exit: Promise<ExecExit>;
  /**
   * Ask the program to end (default `TERM`). Best effort: over SSH the server may ignore signal requests,
   * which is why the agent also ends on stdin EOF and on heartbeat silence.
   */
  kill(signal?: 'TERM' | 'INT' | 'HUP' | 'KILL'): void;
  /**
   * Stop waiting for the program: this process may exit while it still runs (it finishes by itself, e.g. an
   * agent's cleanup after stdin EOF). Optional: a channel whose connection is closed needs none.
   */
  detach?(): void;
}

export interface Target {
  /** Host label used to tag hits and summary entries (`"local"` for this machine). */
  readonly host: string;
  /** Human description for messages, e.g. `"local (root)"` or `"alice@db1:22 via bastion"`. */
  describe(): string;
  /**
   * Start `argv` (a fixed program such as `['sh', '-c', AGENT_SCRIPT, 'probelens-agent']`). Implementations
   * that must go through a remote shell quote each element with `quoteArgv` (ssh/remoteCommand).
   */
  exec(argv: readonly string[], opts?: ExecOptions): Promise<ExecChannel>;
  /** Release the connection (SSH) or nothing (local). Running channels are ended. */
  close(): Promise<void>;
}

// Shared by the engine-*.test.ts files: the probelens CLI run as a user runs it (a child process, from source),
// private copies of fixture binaries (so only this test's sessions probe that path, however many other test runs
// share the machine), and what a session left behind on the target, scoped to its own group.
import type { TestContext } from 'node:test';
import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { chmodSync, closeSync, copyFileSync, openSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { basename, join, resolve } from 'node:path';
import type { Sshd } from '../helpers/sshd';
import { leftovers } from './agentHarness';

export const REPO = resolve(__dirname, '..', '..');
const CLI = join(REPO, 'src', 'cli', 'main.ts');
const TRACEFS = '/sys/kernel/tracing';
const UPROBE_EVENTS = join(TRACEFS, 'uprobe_events');

/** A temp dir removed after the test. */
export function scratch(t: TestContext, prefix = 'pl-engine-'): string {
  const d = mkdtempSync(join(tmpdir(), prefix));
  t.after(() => rmSync(d, { recursive: true, force: true }));
  return d;
}

/** Copies a binary to a path of its own: uprobes sit on the inode, and other runs probe the shared fixture. */
export function privateCopy(t: TestContext, path: string, subdir?: string): string {
  let dir = scratch(t, 'pl-engine-bin-');
  if (subdir) mkdirSync((dir = join(dir, subdir)));
  const out = join(dir, basename(path));
  copyFileSync(path, out);
  chmodSync(out, 0o755);
  return out;
}

/**
 * A HOME with an empty ~/.ssh (or the given config), so the CLI reads none of the real user's ssh files and
 * no ssh-agent: every key and host key the test relies on comes from its own flags.
 */
export function isolatedEnv(t: TestContext, sshConfig?: string): NodeJS.ProcessEnv {
  const home = scratch(t, 'pl-engine-home-');
  mkdirSync(join(home, '.ssh'), { mode: 0o700 });
  if (sshConfig !== undefined) {
    const f = join(home, '.ssh', 'config');
    writeFileSync(f, sshConfig, { mode: 0o600 });
  }
  const env: NodeJS.ProcessEnv = { ...process.env, HOME: home };
  delete env.SSH_AUTH_SOCK;
  delete env.PROBELENS_DEBUG;
  return env;
}

/** --host/--identity/--known-hosts for one throwaway sshd. */
export function sshFlags(sshd: Sshd, host = sshd.host): string[] {
  return ['--host', `root@${host}:${sshd.port}`, '--identity', sshd.identityFile, '--known-hosts', sshd.knownHostsFile];
}

export interface CliRun {
  child: ChildProcess;
  stdout(): string;
  stderr(): string;
  /** Resolves once stderr (or stdout with `stream: 'stdout'`) matches; rejects when the CLI exits first or after `ms`. */
  waitFor(pattern: RegExp, ms: number, stream?: 'stdout' | 'stderr'): Promise<void>;
  /** Exit code (null when killed by a signal). */
  exit: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
}

export interface CliOptions {
  /** Lead a process group of its own (see startCli). */
  ownGroup?: boolean;
  /** Node's arguments before the CLI's: default `--import tsx src/cli/main.ts` (from source); a bundle's path runs that. */
  node?: string[];
  /** A command that runs node and its arguments (appended), such as `unshare … --` to change what the CLI sees. */
  wrap?: string[];
}

/**
 * Starts `probelens ARGS…` from source (or as `opts.node` says); the process is killed (SIGKILL) after the test if still running. With
 * `ownGroup` it leads a process group of its own, as a terminal's foreground job does (a signal to `-pid` then
 * reaches it and everything it started in that group, as a typed Ctrl-C does).
 */
export function startCli(t: TestContext, args: string[], env: NodeJS.ProcessEnv, opts: CliOptions = {}): CliRun {
  const argv = [process.execPath, ...(opts.node ?? ['--import', 'tsx', CLI]), ...args];
  const command = opts.wrap ? [...opts.wrap, ...argv] : argv;
  const child = spawn(command[0], command.slice(1), {
    cwd: REPO,
    env,
    stdio: ['ignore', 'pipe', 'pipe'],
    detached: !!opts.ownGroup,
  });
  let out = '';
  let err = '';
  const waiters: Array<() => void> = [];
  child.stdout!.setEncoding('utf8').on('data', (d: string) => ((out += d), waiters.forEach((w) => w())));
  child.stderr!.setEncoding('utf8').on('data', (d: string) => ((err += d), waiters.forEach((w) => w())));
  let done = false;
  // `done` before the waiters run: a waiter whose pattern never came must see that the CLI is gone.
  const exit = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((res) =>
    child.once('close', (code, signal) => ((done = true), res({ code, signal }), waiters.forEach((w) => w()))),
  );
  t.after(() => {
    if (!done) child.kill('SIGKILL');
  });
  return {
    child,
    stdout: () => out,
    stderr: () => err,
    exit,
    waitFor(pattern, ms, stream = 'stderr') {
      return new Promise((res, rej) => {
        const check = () => {
          if (pattern.test(stream === 'stderr' ? err : out)) return finish(null);
          if (done) return finish(new Error(`the CLI exited before ${stream} matched ${pattern}\nstdout:\n${out}\nstderr:\n${err}`));
        };
        const timer = setTimeout(
          () => finish(new Error(`${stream} did not match ${pattern} within ${ms} ms\nstdout:\n${out}\nstderr:\n${err}`)),
          ms,
        );
        const finish = (e: Error | null) => {
          clearTimeout(timer);
          const i = waiters.indexOf(check);
          if (i >= 0) waiters.splice(i, 1);
          if (e) rej(e);
          else res();
        };
        waiters.push(check);
        check();
      });
    },
  };
}

/** Runs the CLI to completion (bounded by `ms`). */
export async function runCli(
  t: TestContext,
  args: string[],
  env: NodeJS.ProcessEnv,
  ms = 120_000,
  opts: CliOptions = {},
): Promise<{ code: number | null; stdout: string; stderr: string }> {
  const r = startCli(t, args, env, opts);
  const timer = setTimeout(() => r.child.kill('SIGKILL'), ms);
  const { code } = await r.exit;
  clearTimeout(timer);
  return { code, stdout: r.stdout(), stderr: r.stderr() };
}

/**
 * `trace BIN 'add_ints a b' --count 1 --json` with the given SSH flags: waits until its probe is armed, runs the
 * fixture until the hit arrives (bounded), and returns the CLI's result. Refused connections end on their own.
 */
export async function traceOneHit(t: TestContext, bin: string, flags: string[], env: NodeJS.ProcessEnv, opts: CliOptions = {}) {
  const cli = startCli(t, ['trace', bin, 'add_ints a b', '--count', '1', '--json', ...flags], env, opts);
  let ended = false;
  void cli.exit.then(() => (ended = true));
  const until = Date.now() + 120_000;
  while (!ended && Date.now() < until) {
    if (groupsProbing(bin).length) execFileSync(bin, ['1'], { stdio: 'ignore' });
    await sleep(250);
  }
  if (!ended) cli.child.kill('SIGKILL');
  const { code } = await cli.exit;
  return { code, stdout: cli.stdout(), stderr: cli.stderr(), timedOut: !ended };
}

/** Groups whose definitions probe `binPath` right now (`p:GROUP/EVENT PATH:OFFSET …`). */
export function groupsProbing(binPath: string): string[] {
  const groups = new Set<string>();
  for (const l of readFileSync(UPROBE_EVENTS, 'utf8').split('\n')) {
    const m = /^[pr]:([^/\s]+)\/\S+ (\S+):0x/.exec(l);
    if (m && m[2] === binPath) groups.add(m[1]);
  }
  return [...groups];
}

export function definitionsOf(group: string): string[] {
  return readFileSync(UPROBE_EVENTS, 'utf8')
    .split('\n')
    .filter((l) => l.startsWith(`p:${group}/`) || l.startsWith(`r:${group}/`));
}

/** Polls until `groupsProbing(binPath)` names a group; returns the groups (empty after `ms`). */
export async function waitForGroups(binPath: string, ms: number): Promise<string[]> {
  const until = Date.now() + ms;
  for (;;) {
    const g = groupsProbing(binPath);
    if (g.length || Date.now() > until) return g;
    await sleep(100);
  }
}

/**
 * The groups still probing `binPath` after up to `ms`: a stopped session's agent removes its probes after the client
 * has its summary (and may have exited), so "nothing left" is a state reached shortly after, not at the exit.
 */
export async function waitNoGroups(binPath: string, ms: number): Promise<string[]> {
  const until = Date.now() + ms;
  for (;;) {
    const g = groupsProbing(binPath);
    if (g.length === 0 || Date.now() > until) return g;
    await sleep(100);
  }
}

/** Everything of these groups still on the machine (definitions, instances, readers) after up to `ms`. */
export async function waitAllClean(groups: string[], ms: number): Promise<string[]> {
  const until = Date.now() + ms;
  for (;;) {
    const left = groups.flatMap((g) => leftovers(g));
    if (left.length === 0 || Date.now() > until) return left;
    await sleep(100);
  }
}

export const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

/** JSON lines of `trace --json` output: hits and the final summary. */
export function parseJsonOutput(stdout: string): {
  hits: Array<Record<string, unknown>>;
  summary?: Record<string, unknown> & { hosts: Record<string, { ok: boolean; error?: string }> };
} {
  const hits: Array<Record<string, unknown>> = [];
  let summary;
  for (const line of stdout.split('\n')) {
    if (!line.trim()) continue;
    const v = JSON.parse(line) as Record<string, unknown>;
    if (v.summary) summary = v.summary as never;
    else hits.push(v);
  }
  return { hits, summary };
}

/**
 * Holds a file of `group`'s tracefs instance open, so the kernel refuses to remove the instance (EBUSY) until
 * the returned function closes it (idempotent): the agent's teardown cannot finish meanwhile.
 */
export function holdInstance(group: string): () => void {
  let fd: number | undefined = openSync(join(TRACEFS, 'instances', group, 'trace_clock'), 'r');
  return () => {
    if (fd !== undefined) closeSync(fd);
    fd = undefined;
  };
}

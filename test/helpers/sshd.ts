// A throwaway OpenSSH server per test: its own config, fresh host and client keys in a temp dir, root login by key
// only. Tests talk to a real sshd rather than a mock so host-key checking, forwarding (ProxyJump) and exec channels
// behave exactly as on a user's target.
import type { TestContext } from 'node:test';
import { spawn, spawnSync, execFileSync, type ChildProcess } from 'node:child_process';
import { appendFileSync, chmodSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createConnection, createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { missing } from './require';

export const SSHD = '/usr/sbin/sshd';
export type KeyType = 'ed25519' | 'ecdsa' | 'rsa';

export interface SshdOptions {
  /** Registers `stop()` with `t.after` so the server dies with the test even when it throws. */
  t?: TestContext;
  /** Address sshd binds and clients connect to. Default 127.0.0.1. */
  listenAddress?: string;
  /** Default: a port the kernel reports free on 127.0.0.1. */
  port?: number;
  /** Host key algorithm. Default ed25519. */
  hostKeyType?: KeyType;
  /** Users besides root whose logins accept the client key (they must exist). */
  users?: string[];
  /** Extra public key lines (`ssh-ed25519 AAAA… comment`) accepted for root and every user in `users`. */
  authorizedKeys?: string[];
  /** Run sshd inside this network namespace (`/run/netns/NAME`, see netns.ts). */
  netns?: string;
  /** Extra sshd_config lines, appended last (first value wins in sshd_config, so these cannot override ours). */
  extraConfig?: string[];
  /** sshd LogLevel. Default VERBOSE (shows accepted keys and disconnects, without DEBUG's noise). */
  logLevel?: string;
  /**
   * Login passwords by user. sshd (without PAM) checks /etc/shadow, so it runs in a private mount namespace over a
   * copy holding these: the machine's accounts are untouched. Enable password logins with `extraConfig`.
   */
  passwords?: Record<string, string>;
}

export interface KeyPair {
  privateKeyFile: string;
  publicKeyFile: string;
  /** The public key line, e.g. `ssh-ed25519 AAAA… comment`. */
  publicKey: string;
}

export interface Sshd {
  host: string;
  port: number;
  /** Always `root`. */
  user: string;
  /** Client private key (unencrypted) accepted for root and `opts.users`. */
  identityFile: string;
  /** The client public key line. */
  publicKey: string;
  /** The server's public host key, `TYPE BASE64` (no comment). */
  hostKey: string;
  /** The server's private host key file. */
  hostKeyFile: string;
  /** `[host]:port TYPE BASE64` (plain `host TYPE BASE64` when port is 22). */
  knownHostsLine: string;
  /** A known_hosts file holding exactly `knownHostsLine`. */
  knownHostsFile: string;
  /** The temp dir holding config, keys and logs; removed by stop(). */
  dir: string;
  /** pid of the listening sshd. */
  pid: number;
  /** Accepts the client key (or `publicKey`) for `user` from now on. */
  authorize(user: string, publicKey?: string): void;
  /** Arguments for the `ssh` client binary (`ssh ...sshArgs(user) -- CMD`): this key, only this known_hosts, batch mode. */
  sshArgs(user?: string): string[];
  /** Everything sshd has logged so far (stderr, `-e`). Arrives asynchronously: after spawnSync, await waitForLog. */
  log(): string;
  /** Resolves with the log once it matches `pattern`; rejects with the log after `timeoutMs` (default 5000). */
  waitForLog(pattern: RegExp, timeoutMs?: number): Promise<string>;
  /** Kills the server and its connection handlers (SIGTERM, then SIGKILL after `graceMs`, 10 s by default) and waits. Idempotent. */
  stop(graceMs?: number): Promise<void>;
}

/** Thrown when sshd cannot be started at all (not installed, not root); `requireSshd` turns it into a skip. */
export class SshdUnavailable extends Error {
  constructor(reason: string) {
    super(`cannot start a throwaway sshd: ${reason}`);
    this.name = 'SshdUnavailable';
  }
}

export function generateKeyPair(dir: string, type: KeyType = 'ed25519', name = `id_${type}`, passphrase = ''): KeyPair {
  mkdirSync(dir, { recursive: true });
  const privateKeyFile = join(dir, name);
  const bits = type === 'rsa' ? ['-b', '3072'] : type === 'ecdsa' ? ['-b', '256'] : [];
  execFileSync('ssh-keygen', ['-q', '-t', type, ...bits, '-N', passphrase, '-C', `probelens-test-${name}`, '-f', privateKeyFile], {
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  const publicKeyFile = `${privateKeyFile}.pub`;
  return { privateKeyFile, publicKeyFile, publicKey: readFileSync(publicKeyFile, 'utf8').trim() };
}

function bindable(port: number, address: string): Promise<boolean> {
  return new Promise((resolve) => {
    const srv = createServer();
    srv.unref();
    srv.once('error', () => resolve(false));
    srv.listen(port, address, () => srv.close(() => resolve(true)));
  });
}

/**
 * A port that was free on `address` a moment ago. Chosen below the kernel's ephemeral range, so the source port
 * of some outgoing connection (tests make many) cannot take it between this check and sshd's bind.
 */
export async function freePort(address = '127.0.0.1'): Promise<number> {
  let low = 32768;
  try {
    low = Number(readFileSync('/proc/sys/net/ipv4/ip_local_port_range', 'utf8').trim().split(/\s+/)[0]) || low;
  } catch {
    /* not Linux: keep the usual default */
  }
  const from = Math.max(1024, low - 12_000);
  for (let i = 0; i < 50 && low - from > 100; i++) {
    const port = from + Math.floor(Math.random() * (low - from));
    if (await bindable(port, address)) return port;
  }
  return new Promise((resolve, reject) => {
    const srv = createServer();
    srv.unref();
    srv.once('error', reject);
    srv.listen(0, address, () => {
      const addr = srv.address();
      srv.close(() => (addr && typeof addr === 'object' ? resolve(addr.port) : reject(new Error('no port'))));
    });
  });
}

function sshdVersion(): [number, number] {
  // `sshd -V` prints the version on stderr (older ones as part of a usage error); either way the text has it.
  const r = spawnSync(SSHD, ['-V'], { encoding: 'utf8' });
  const m = /OpenSSH_(\d+)\.(\d+)/.exec(`${r.stdout}${r.stderr}`);
  return m ? [Number(m[1]), Number(m[2])] : [0, 0];
}

// --- process bookkeeping: no sshd may outlive the test process, however it ends ---

/** pid of each running listener → its temp dir. */
const live = new Map<number, string>();
let hooksInstalled = false;

function childrenOf(pid: number): number[] {
  const out: number[] = [];
  let tasks: string[];
  try {
    tasks = readdirSync(`/proc/${pid}/task`);
  } catch {
    return out;
  }
  for (const task of tasks) {
    try {
      for (const c of readFileSync(`/proc/${pid}/task/${task}/children`, 'utf8').split(/\s+/)) if (c) out.push(Number(c));
    } catch {
      /* the task ended meanwhile */
    }
  }
  return out;
}

/**
 * The listener and everything below it: connection handlers (which setsid(), so a process-group kill misses them)
 * and the sessions' processes, which without a PTY get no SIGHUP when their handler dies and would live on.
 */
function sshdTree(pid: number): number[] {
  const seen: number[] = [];
  const queue = [pid];
  while (queue.length > 0) {
    const p = queue.shift()!;
    if (seen.includes(p)) continue;
    seen.push(p);
    queue.push(...childrenOf(p));
  }
  return seen;
}

function signalAll(pids: number[], signal: NodeJS.Signals): void {
  for (const p of pids) {
    try {
      process.kill(p, signal);
    } catch {
      /* already gone */
    }
  }
}

function killTree(pid: number, signal: NodeJS.Signals): void {
  signalAll(sshdTree(pid), signal);
}

const endHooks: Array<() => void> = [];

/**
 * Runs `fn` (synchronous) when this process ends: normally, by an uncaught exception, or by SIGINT/SIGTERM/SIGHUP,
 * after which the process still dies by that signal.
 */
export function atProcessEnd(fn: () => void): void {
  if (endHooks.length === 0) {
    const runAll = (): void => {
      for (const hook of endHooks.splice(0)) {
        try {
          hook();
        } catch {
          /* best effort: the others must still run */
        }
      }
    };
    process.on('exit', runAll);
    for (const sig of ['SIGINT', 'SIGTERM', 'SIGHUP'] as const) {
      const onSignal = (): void => {
        runAll();
        process.removeListener(sig, onSignal);
        // Let the default action (death by this signal) happen as if we had never listened.
        if (process.listenerCount(sig) === 0) process.kill(process.pid, sig);
      };
      process.on(sig, onSignal);
    }
  }
  endHooks.push(fn);
}

function installHooks(): void {
  if (hooksInstalled) return;
  hooksInstalled = true;
  atProcessEnd(() => {
    for (const [pid, dir] of live) {
      killTree(pid, 'SIGTERM');
      rmSync(dir, { recursive: true, force: true });
    }
    live.clear();
  });
}

/** `PID COMM STATE WCHAN: CMDLINE` of a live process, for a diagnostic. */
function describe(pid: number): string {
  const read = (f: string): string => {
    try {
      return readFileSync(`/proc/${pid}/${f}`, 'utf8');
    } catch {
      return '';
    }
  };
  const stat = read('stat');
  const close = stat.lastIndexOf(')');
  const comm = stat.slice(stat.indexOf('(') + 1, close);
  const state = stat.slice(close + 2, close + 3);
  return `${pid} ${comm} ${state} ${read('wchan') || '-'}: ${read('cmdline').replace(/\0/g, ' ').trim().slice(0, 120)}`;
}

/** True while a process with this pid exists (signal 0 probes without sending anything). */
export function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

/** Resolves once something on host:port answers with an SSH banner. */
async function sshBanner(host: string, port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const sock = createConnection({ host, port });
    let buf = '';
    const done = (ok: boolean): void => {
      sock.destroy();
      resolve(ok);
    };
    sock.setTimeout(1000, () => done(false));
    sock.on('data', (d) => {
      buf += d.toString('latin1');
      if (buf.includes('\n')) done(buf.startsWith('SSH-'));
    });
    sock.on('error', () => done(false));
    sock.on('close', () => done(false));
  });
}

function bracketed(host: string, port: number): string {
  return port === 22 ? host : `[${host}]:${port}`;
}

class PortTaken extends Error {}

export async function startSshd(opts: SshdOptions = {}): Promise<Sshd> {
  // Another process may bind the port we picked before sshd does: pick again (only if the caller did not fix it).
  for (let attempt = 1; ; attempt++) {
    try {
      return await startOnce(opts);
    } catch (e) {
      if (!(e instanceof PortTaken) || opts.port !== undefined || attempt >= 5) throw e;
    }
  }
}

async function startOnce(opts: SshdOptions): Promise<Sshd> {
  if (!existsSync(SSHD)) throw new SshdUnavailable(`${SSHD} is not installed (apt-get install openssh-server)`);
  if (process.getuid?.() !== 0) throw new SshdUnavailable('root is needed to accept logins as root and other users');
  // sshd refuses to start without its privilege-separation directory, which only the distro's unit creates.
  mkdirSync('/run/sshd', { recursive: true, mode: 0o755 });

  const host = opts.listenAddress ?? '127.0.0.1';
  // In a namespace the address is not ours to probe; any port is free in a fresh namespace.
  const port = opts.port ?? (await freePort(opts.netns ? '127.0.0.1' : host));
  const dir = mkdtempSync(join(tmpdir(), 'probelens-sshd-'));
  // Other users' logins read their authorized_keys file as that user: the dir must be traversable.
  chmodSync(dir, 0o755);
  const hostKeyType = opts.hostKeyType ?? 'ed25519';
  const hostKeyPair = generateKeyPair(join(dir, 'host'), hostKeyType, `ssh_host_${hostKeyType}_key`);
  const client = generateKeyPair(join(dir, 'client'), 'ed25519', 'id_ed25519');
  chmodSync(join(dir, 'client'), 0o700);
  const authDir = join(dir, 'authorized_keys');
  mkdirSync(authDir, { mode: 0o755 });
  const hostKey = hostKeyPair.publicKey.split(' ').slice(0, 2).join(' ');
  const knownHostsLine = `${bracketed(host, port)} ${hostKey}`;
  const knownHostsFile = join(dir, 'known_hosts');
  writeFileSync(knownHostsFile, knownHostsLine + '\n');

  const authorize = (user: string, publicKey = client.publicKey): void => {
    if (!/^[a-z_][a-z0-9_.-]*$/i.test(user)) throw new Error(`not a user name: ${JSON.stringify(user)}`);
    const file = join(authDir, user);
    appendFileSync(file, publicKey.trim() + '\n', { mode: 0o644 });
    chmodSync(file, 0o644);
  };
  for (const user of ['root', ...(opts.users ?? [])]) {
    authorize(user);
    for (const k of opts.authorizedKeys ?? []) authorize(user, k);
  }

  const [major, minor] = sshdVersion();
  const pidFile = join(dir, 'sshd.pid');
  const config = [
    `ListenAddress ${host.includes(':') ? `[${host}]` : host}:${port}`,
    `HostKey ${hostKeyPair.privateKeyFile}`,
    `PidFile ${pidFile}`,
    'PermitRootLogin prohibit-password',
    'PubkeyAuthentication yes',
    'PasswordAuthentication no',
    'KbdInteractiveAuthentication no',
    'UsePAM no',
    // One file per user under our temp dir; StrictModes would reject it since /tmp is not owned by each user.
    `AuthorizedKeysFile ${authDir}/%u`,
    'StrictModes no',
    'AllowTcpForwarding yes',
    'AllowAgentForwarding no',
    'X11Forwarding no',
    'PermitTTY yes',
    'PrintMotd no',
    'PrintLastLog no',
    'UseDNS no',
    `LogLevel ${opts.logLevel ?? 'VERBOSE'}`,
    // Fan-out tests open many connections at once; the default 10:30:100 would drop some.
    'MaxStartups 200:30:400',
    'MaxSessions 100',
    'MaxAuthTries 20',
    'LoginGraceTime 30',
    'Subsystem sftp internal-sftp',
    // 9.8+ penalises sources that fail auth; tests fail auth on purpose from 127.0.0.1.
    ...(major > 9 || (major === 9 && minor >= 8) ? ['PerSourcePenalties no'] : []),
    ...(opts.extraConfig ?? []),
  ];
  const configFile = join(dir, 'sshd_config');
  writeFileSync(configFile, config.join('\n') + '\n');

  let argv = [SSHD, '-D', '-e', '-f', configFile];
  if (opts.passwords) {
    const shadow = join(dir, 'shadow');
    const hashes = new Map(
      Object.entries(opts.passwords).map(([user, pw]) => [
        user,
        execFileSync('openssl', ['passwd', '-6', '-stdin'], { input: pw, encoding: 'utf8' }).trim(),
      ]),
    );
    const lines = readFileSync('/etc/shadow', 'utf8')
      .split('\n')
      .map((l) => {
        const f = l.split(':');
        const h = hashes.get(f[0]);
        return h && f.length > 2 ? [f[0], h, ...f.slice(2)].join(':') : l;
      });
    writeFileSync(shadow, lines.join('\n'), { mode: 0o600 });
    // unshare without --fork execs: sshd keeps the pid we track.
    argv = ['unshare', '--mount', '--propagation', 'private', 'sh', '-c', 'mount --bind "$0" /etc/shadow && exec "$@"', shadow, ...argv];
  }
  const cmd = opts.netns ? ['nsenter', `--net=/run/netns/${opts.netns}`, '--', ...argv] : argv;
  const child: ChildProcess = spawn(cmd[0], cmd.slice(1), { stdio: ['ignore', 'ignore', 'pipe'] });
  let logText = '';
  child.stderr?.setEncoding('utf8');
  child.stderr?.on('data', (d: string) => {
    // Bounded: a long fan-out test must not grow this without limit.
    logText = (logText + d).slice(-256 * 1024);
  });
  // Neither the child nor its log pipe may keep a test process alive; the exit hook kills sshd.
  child.unref();
  (child.stderr as unknown as { unref?: () => void } | null)?.unref?.();
  let exited = false;
  const exitedP = new Promise<void>((resolve) => child.once('exit', () => ((exited = true), resolve())));
  const pid = child.pid;
  if (pid === undefined) throw new SshdUnavailable(`spawning ${cmd.join(' ')} failed`);
  live.set(pid, dir);
  installHooks();

  let stopped: Promise<void> | undefined;
  const stop = (graceMs = 10_000): Promise<void> => {
    stopped ??= (async () => {
      if (!exited) {
        // SIGTERM first so session processes (an agent) may clean up; SIGKILL whatever is left after the grace.
        const tree = sshdTree(pid);
        signalAll(tree, 'SIGTERM');
        const gone = (): boolean => exited && tree.every((p) => p === pid || !alive(p));
        for (const end = Date.now() + graceMs; Date.now() < end && !gone();) await sleep(50);
        if (!gone()) {
          // Say who outlived the grace: a session process still busy then (an agent's cleanup) loses its work.
          const left = tree.filter((p) => p !== pid && alive(p)).map(describe);
          if (left.length > 0) opts.t?.diagnostic(`sshd ${host}:${port}: SIGKILL after ${graceMs / 1000} s for ${left.join('; ')}`);
          signalAll(tree, 'SIGKILL');
        }
        await exitedP;
      }
      live.delete(pid);
      rmSync(dir, { recursive: true, force: true });
    })();
    return stopped;
  };
  opts.t?.after(() => stop());

  // Our own sshd saying it listens is what counts: a banner alone could come from whoever else holds the port.
  const level = (opts.logLevel ?? 'VERBOSE').toUpperCase();
  const announces = !['QUIET', 'FATAL', 'ERROR'].includes(level);
  const listening = (): boolean => !announces || logText.includes(`Server listening on ${host} port ${port}.`);
  const deadline = Date.now() + 15_000;
  while (!(listening() && !exited && (await sshBanner(host, port)))) {
    if (exited || Date.now() > deadline) {
      await stop();
      const why = `sshd on ${host}:${port} did not come up${exited ? ' (it exited)' : ' within 15 s'}:\n${logText}`;
      throw exited && /Address already in use/.test(logText) ? new PortTaken(why) : new Error(why);
    }
    await sleep(50);
  }

  return {
    host,
    port,
    user: 'root',
    identityFile: client.privateKeyFile,
    publicKey: client.publicKey,
    hostKey,
    hostKeyFile: hostKeyPair.privateKeyFile,
    knownHostsLine,
    knownHostsFile,
    dir,
    pid,
    authorize,
    sshArgs: (user = 'root') => [
      '-F',
      '/dev/null',
      '-i',
      client.privateKeyFile,
      '-o',
      'IdentitiesOnly=yes',
      '-o',
      `UserKnownHostsFile=${knownHostsFile}`,
      '-o',
      'GlobalKnownHostsFile=/dev/null',
      '-o',
      'StrictHostKeyChecking=yes',
      '-o',
      'BatchMode=yes',
      '-o',
      'ConnectTimeout=10',
      '-p',
      String(port),
      `${user}@${host}`,
    ],
    log: () => logText,
    waitForLog: async (pattern, timeoutMs = 5000) => {
      const until = Date.now() + timeoutMs;
      while (!pattern.test(logText)) {
        if (Date.now() > until) throw new Error(`sshd log never matched ${pattern}:\n${logText}`);
        await sleep(20);
      }
      return logText;
    },
    stop,
  };
}

/**
 * startSshd() for a test: the server stops with the test; when sshd cannot run here the test is skipped (under
 * CI=true: failed) and `undefined` comes back, so use it as `const sshd = await requireSshd(t); if (!sshd) return;`.
 */
export async function requireSshd(t: TestContext, opts: Omit<SshdOptions, 't'> = {}): Promise<Sshd | undefined> {
  try {
    return await startSshd({ ...opts, t });
  } catch (e) {
    if (e instanceof SshdUnavailable) {
      missing(t, e.message);
      return undefined;
    }
    throw e;
  }
}

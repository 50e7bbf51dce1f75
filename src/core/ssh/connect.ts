// One SSH connection on ssh2, possibly through a ProxyJump chain: each hop is a full SSH session whose host
// key is verified against known_hosts, and the next hop travels inside a `direct-tcpip` channel of the
// previous one (what `ssh -J` does).
// Tests: test/unit/core/ssh/config.test.ts, test/integration/ssh.test.ts, test/integration/sshPassword.test.ts
import type { Client, ClientChannel, ConnectConfig } from 'ssh2';
import { connect as tcpConnect, type Socket } from 'node:net';
import type { Duplex } from 'node:stream';
import { resolveHost, type ResolvedHost } from './config';
import { formatDestination, parseDestination, type Destination } from './destination';
import { connectErrorFor, SshAuthError, SshConnectError, SshError, type AuthAttempt } from './errors';
import { preferredHostKeyAlgorithms, recordAccepted, verifyHostKey, type UnknownHostCallback } from './hostKeyPolicy';
import { authHandlerFor, type AuthCallbacks } from './auth';
import { loadSsh2 } from './ssh2';

export interface SshConnectOptions extends AuthCallbacks {
  /** `[USER@]HOST[:PORT]` (strictly parsed) or an already parsed destination. */
  destination: string | Destination;
  /** `--identity`: tried before the config's IdentityFile entries. */
  identityFiles?: string[];
  /** `--known-hosts`: used instead of UserKnownHostsFile for every hop (recorded keys go here too). */
  knownHostsFile?: string;
  /** ssh config file; default ~/.ssh/config; null reads none. */
  configFile?: string | null;
  /** Decides about hosts not in known_hosts (StrictHostKeyChecking ask); absent → refuse. */
  onUnknownHost?: UnknownHostCallback;
  /** Agent socket; default IdentityAgent or $SSH_AUTH_SOCK; null disables the agent. */
  agentSocket?: string | null;
  /** TCP connect + key exchange limit when ConnectTimeout is not configured (ms); default 15000. */
  connectTimeoutMs?: number;
  /** Override ServerAliveInterval/CountMax (ms / count). */
  keepaliveIntervalMs?: number;
  keepaliveCountMax?: number;
  /** Notes worth showing a user (ignored Match exec, skipped known_hosts lines…). */
  log?: (msg: string) => void;
  /** For tests: the home directory used for ~ and default files. */
  home?: string;
}

export interface SshConnection {
  /** The authenticated session to the final host. */
  readonly client: Client;
  /** Resolved hops: jump hosts first, the target last. */
  readonly hops: readonly ResolvedHost[];
  describe(): string;
  /** Settles when the target's connection is gone (closed by us, the server, or keepalive). */
  readonly closed: Promise<Error | undefined>;
  close(): Promise<void>;
}

const MAX_HOPS = 8;

/** Resolve the target and its jump chain (a jump host's own ProxyJump is honoured, as `ssh -J` would). */
export function resolveChain(dest: Destination, opts: SshConnectOptions): ResolvedHost[] {
  const common = { configFile: opts.configFile, home: opts.home };
  const target = resolveHost(dest.host, { ...common, user: dest.user, port: dest.port, identityFiles: opts.identityFiles });
  const chain: ResolvedHost[] = [target];
  let jumps = target.proxyJump;
  while (jumps.length) {
    const resolved = jumps.map((j) => resolveHost(j.host, { ...common, user: j.user, port: j.port, identityFiles: opts.identityFiles }));
    chain.unshift(...resolved);
    if (chain.length > MAX_HOPS)
      throw new SshError(
        `ssh: ProxyJump chain to ${dest.host} has more than ${MAX_HOPS} hops (a loop in ssh config?); check ProxyJump lines`,
      );
    jumps = resolved[0].proxyJump;
  }
  for (const hop of chain) for (const n of hop.notes) opts.log?.(n);
  return chain;
}

function label(h: ResolvedHost): string {
  return `${h.user}@${formatDestination({ host: h.hostName, port: h.port })}`;
}

export async function connectSsh(opts: SshConnectOptions): Promise<SshConnection> {
  const dest = typeof opts.destination === 'string' ? parseDestination(opts.destination) : opts.destination;
  const chain = resolveChain(dest, opts);
  const clients: Client[] = [];
  try {
    let sock: Duplex | undefined;
    for (let i = 0; i < chain.length; i++) {
      const hop = chain[i];
      const via = i > 0 ? ` via ${label(chain[i - 1])}` : '';
      const client = await connectHop(hop, sock, opts, via);
      clients.push(client);
      if (i + 1 < chain.length) sock = await forward(client, hop, chain[i + 1]);
    }
  } catch (e) {
    for (const c of clients.reverse()) c.end();
    throw e;
  }
  const target = clients[clients.length - 1];
  const closed = new Promise<Error | undefined>((resolve) => {
    let lastError: Error | undefined;
    target.on('error', (err: Error & { level?: string }) => {
      lastError =
        err.message === 'Keepalive timeout'
          ? new SshConnectError('keepalive', label(chain[chain.length - 1]), 'no answer to keepalives; the connection is considered dead')
          : err;
    });
    target.once('close', () => resolve(lastError));
  });
  return {
    client: target,
    hops: chain,
    describe: () => label(chain[chain.length - 1]) + (chain.length > 1 ? ` via ${chain.slice(0, -1).map(label).join(', ')}` : ''),
    closed,
    close: async () => {
      for (const c of [...clients].reverse()) c.end();
      await closed;
    },
  };
}

function forward(client: Client, from: ResolvedHost, to: ResolvedHost): Promise<ClientChannel> {
  return new Promise((resolve, reject) => {
    client.forwardOut('127.0.0.1', 0, to.hostName, to.port, (err, channel) => {
      if (err) {
        reject(
          new SshConnectError(
            'refused',
            label(to),
            `jump host ${label(from)} could not open a connection to ${to.hostName} port ${to.port} (${err.message}); check the address from the jump host's side and its AllowTcpForwarding`,
          ),
        );
      } else resolve(channel);
    });
  });
}

function openTcp(hop: ResolvedHost, timeoutMs: number): Promise<Socket> {
  return new Promise((resolve, reject) => {
    const s = tcpConnect({ host: hop.hostName, port: hop.port });
    const timer = setTimeout(() => {
      s.destroy();
      reject(connectErrorFor(label(hop), hop.hostName, hop.port, Object.assign(new Error('timeout'), { code: 'ETIMEDOUT' }), timeoutMs));
    }, timeoutMs);
    s.once('connect', () => {
      clearTimeout(timer);
      s.setNoDelay(true);
      resolve(s);
    });
    s.once('error', (err) => {
      clearTimeout(timer);
      reject(connectErrorFor(label(hop), hop.hostName, hop.port, err, timeoutMs));
    });
  });
}

async function connectHop(hop: ResolvedHost, tunnel: Duplex | undefined, opts: SshConnectOptions, via: string): Promise<Client> {
  const timeoutMs = hop.connectTimeout !== undefined ? hop.connectTimeout * 1000 : (opts.connectTimeoutMs ?? 15000);
  const sock: Duplex = tunnel ?? (await openTcp(hop, timeoutMs));
  const knownHostsFiles = opts.knownHostsFile ? [opts.knownHostsFile] : hop.userKnownHostsFiles;
  const keyPolicy = {
    host: hop.hostName,
    port: hop.port,
    hostKeyAlias: hop.hostKeyAlias,
    knownHostsFiles,
    globalKnownHostsFiles: hop.globalKnownHostsFiles,
  };
  const where = label(hop) + via;
  const client = new (loadSsh2().Client)();
  let failure: Error | undefined;
  let pendingRecord: { file: string; line: string } | undefined;
  const tried: AuthAttempt[] = [];
  const serverMethods: string[] = [];
  const agent =
    opts.agentSocket === null
      ? undefined
      : (opts.agentSocket ?? (hop.identityAgent === null ? undefined : (hop.identityAgent ?? process.env.SSH_AUTH_SOCK)));

  return new Promise<Client>((resolve, reject) => {
    let settled = false;
    // Every network phase has the connect timeout: a port that accepts but never speaks SSH, or a server that
    // stalls during login, must not hang a fan-out. Local work and the user's callbacks (unknown host key,
    // reading and decrypting keys, passphrase, password) do not count.
    let timer: NodeJS.Timeout | undefined;
    const pause = () => {
      if (timer) clearTimeout(timer);
      timer = undefined;
    };
    const arm = (what: string) => {
      pause();
      timer = setTimeout(() => {
        fail(
          new SshConnectError('timeout', where, `${what} within ${timeoutMs / 1000} s; check the host and port, or raise ConnectTimeout`),
        );
        sock.destroy();
      }, timeoutMs);
    };
    arm('no SSH key exchange (is that port an SSH server?)');
    const fail = (err: Error) => {
      pause();
      if (settled) return;
      settled = true;
      client.end();
      reject(err);
    };
    client.on('handshake', () => {
      if (pendingRecord) {
        try {
          recordAccepted(pendingRecord);
          opts.log?.(`Permanently added '${pendingRecord.line.split(' ')[0]}' to ${pendingRecord.file}`);
        } catch (e) {
          opts.log?.(`could not record the host key in ${pendingRecord.file}: ${(e as Error).message}`);
        }
        pendingRecord = undefined;
      }
    });
    client.once('ready', () => {
      pause();
      settled = true;
      resolve(client);
    });
    client.on('error', (err: Error & { level?: string; code?: string }) => {
      if (settled) return;
      if (failure) return fail(failure);
      // ssh2 reports a dead agent or a key that cannot sign as errors too, then goes on with the next
      // method; only its final "all methods failed" ends the attempt.
      if (
        err.level === 'agent' ||
        (err.level === 'client-authentication' && !/All configured authentication methods failed/.test(err.message))
      ) {
        opts.log?.(`ssh ${where}: ${err.message}; trying the next authentication method`);
        return;
      }
      if (err.level === 'client-authentication') return fail(authFailure());
      if (err.level === 'client-socket') return fail(connectErrorFor(where, hop.hostName, hop.port, err, timeoutMs));
      if (err.level === 'client-timeout')
        return fail(new SshConnectError('timeout', where, `${err.message}; check the network or raise ConnectTimeout`));
      fail(new SshConnectError('protocol', where, `${err.message}; run \`ssh -v\` against the same host to see where it stops`));
    });
    client.once('close', () =>
      fail(failure ?? new SshConnectError('closed', where, 'the server closed the connection before login finished; check its sshd log')),
    );

    const authFailure = () => new SshAuthError(where, tried, serverMethods, hop.identityFiles);

    const config: ConnectConfig = {
      sock,
      username: hop.user,
      readyTimeout: 0,
      keepaliveInterval: opts.keepaliveIntervalMs ?? hop.serverAliveInterval * 1000,
      keepaliveCountMax: opts.keepaliveCountMax ?? hop.serverAliveCountMax,
      algorithms: { serverHostKey: preferredHostKeyAlgorithms(keyPolicy) as never },
      hostVerifier: (key: Buffer, verify: (ok: boolean) => void) => {
        pause();
        verifyHostKey(key, {
          ...keyPolicy,
          strict: hop.strictHostKeyChecking,
          hashKnownHosts: hop.hashKnownHosts,
          onUnknownHost: opts.onUnknownHost,
          log: opts.log,
        }).then(
          (v) => {
            if (!v.ok) failure = v.error;
            pendingRecord = v.record;
            if (v.ok) arm('login did not finish');
            verify(v.ok);
          },
          (e: Error) => {
            failure = e;
            verify(false);
          },
        );
      },
      authHandler: authHandlerFor(hop, {
        log: opts.log,
        passphrase: opts.passphrase,
        password: opts.password,
        localWork: { begin: pause, end: () => settled || arm('login did not finish') },
        agent,
        tried,
        serverMethods,
        where,
      }),
    };
    client.connect(config);
  });
}

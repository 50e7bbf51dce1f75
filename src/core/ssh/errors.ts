// Typed SSH failures. Each message ends with what the user can do next; host key failures reproduce the
// wording OpenSSH users already recognise.
// Tests: test/unit/core/ssh/hostKeyPolicy.test.ts, test/integration/ssh.test.ts, test/integration/sshPassword.test.ts
import { fingerprintSha256, keyTypeLabel, blobKeyType, type KnownHostEntry } from './knownHosts';

export class SshError extends Error {
  constructor(message: string) {
    super(message);
    this.name = new.target.name;
  }
}

export type SshConnectFailure = 'dns' | 'refused' | 'timeout' | 'unreachable' | 'closed' | 'protocol' | 'keepalive';

export class SshConnectError extends SshError {
  constructor(
    readonly failure: SshConnectFailure,
    readonly destination: string,
    detail: string,
  ) {
    super(`ssh: ${destination}: ${detail}`);
  }
}

export function connectErrorFor(
  destination: string,
  hostName: string,
  port: number,
  err: NodeJS.ErrnoException,
  timeoutMs: number,
): SshConnectError {
  const code = err.code ?? '';
  if (code === 'ENOTFOUND' || code === 'EAI_AGAIN' || code === 'EAI_NONAME')
    return new SshConnectError(
      'dns',
      destination,
      `cannot resolve host name "${hostName}" (${code}); check the spelling, HostName in ~/.ssh/config, or your DNS`,
    );
  if (code === 'ECONNREFUSED')
    return new SshConnectError(
      'refused',
      destination,
      `connection refused by ${hostName} port ${port}; is sshd running there and listening on that port?`,
    );
  if (code === 'ETIMEDOUT')
    return new SshConnectError(
      'timeout',
      destination,
      `no answer from ${hostName} port ${port} within ${timeoutMs / 1000} s; check the address, firewalls, or raise ConnectTimeout`,
    );
  if (code === 'EHOSTUNREACH' || code === 'ENETUNREACH')
    return new SshConnectError(
      'unreachable',
      destination,
      `${hostName} is unreachable (${code}); check the network route or use a ProxyJump host`,
    );
  if (code === 'ECONNRESET' || code === 'EPIPE')
    return new SshConnectError(
      'closed',
      destination,
      `connection to ${hostName} port ${port} was closed by the remote side (${code}) before login finished; check sshd's log there (MaxStartups, AllowUsers, tcp wrappers)`,
    );
  return new SshConnectError('protocol', destination, `${err.message}; run \`ssh -v\` against the same host to see where it stops`);
}

export interface AuthAttempt {
  method: string;
  /** Key file, agent key comment, or nothing. */
  detail?: string;
}

export class SshAuthError extends SshError {
  constructor(
    readonly destination: string,
    readonly tried: AuthAttempt[],
    readonly serverMethods: string[],
    lookedFor: readonly string[] = [],
  ) {
    const triedText = tried.length
      ? tried.map((a) => (a.detail ? `${a.method} (${a.detail})` : a.method)).join(', ')
      : `nothing: no agent, no password prompt, and no readable identity file${lookedFor.length ? ` among ${lookedFor.join(', ')}` : ''}`;
    super(
      `ssh: permission denied for ${destination}; tried ${triedText}` +
        (serverMethods.length ? `; the server accepts ${serverMethods.join(', ')}` : '') +
        `. Add your public key to the remote ~/.ssh/authorized_keys, pass --identity FILE, or load the key into ssh-agent (ssh-add).`,
    );
  }
}

export class SshConfigError extends SshError {}

/** Base of the three host key failures, so callers can treat them as one security refusal. */
export class HostKeyError extends SshError {
  constructor(
    message: string,
    readonly hostName: string,
    readonly fingerprint: string,
  ) {
    super(message);
  }
}

export class HostKeyUnknownError extends HostKeyError {
  constructor(hostName: string, key: Buffer, knownHostsFile: string, extra = '') {
    const fp = fingerprintSha256(key);
    super(
      `The authenticity of host '${hostName}' can't be established.\n` +
        `${keyTypeLabel(blobKeyType(key))} key fingerprint is ${fp}.\n` +
        extra +
        `Host key verification failed.\n` +
        `If this fingerprint is the host's (compare with \`ssh-keygen -lf /etc/ssh/ssh_host_*_key.pub\` on it), ` +
        `run again with --accept-new to record it in ${knownHostsFile}.`,
      hostName,
      fp,
    );
  }
}

const BANNER = '@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@';

export class HostKeyChangedError extends HostKeyError {
  constructor(
    hostName: string,
    key: Buffer,
    readonly offending: KnownHostEntry,
  ) {
    const fp = fingerprintSha256(key);
    super(
      `${BANNER}\n@    WARNING: REMOTE HOST IDENTIFICATION HAS CHANGED!     @\n${BANNER}\n` +
        `IT IS POSSIBLE THAT SOMEONE IS DOING SOMETHING NASTY!\n` +
        `Someone could be eavesdropping on you right now (man-in-the-middle attack)!\n` +
        `It is also possible that a host key has just been changed.\n` +
        `The fingerprint for the ${keyTypeLabel(blobKeyType(key))} key sent by the remote host is\n${fp}.\n` +
        `Please contact your system administrator.\n` +
        `Offending ${keyTypeLabel(offending.keyType)} key in ${offending.file}:${offending.line}\n` +
        `  remove with:\n  ssh-keygen -f "${offending.file}" -R "${hostName}"\n` +
        `Host key for ${hostName} has changed and you have requested strict checking.\n` +
        `Host key verification failed.`,
      hostName,
      fp,
    );
  }
}

export class HostKeyRevokedError extends HostKeyError {
  constructor(
    hostName: string,
    key: Buffer,
    readonly entry: KnownHostEntry,
  ) {
    const label = keyTypeLabel(blobKeyType(key));
    super(
      `${BANNER}\n@       WARNING: REVOKED HOST KEY DETECTED!               @\n${BANNER}\n` +
        `The ${label} host key for ${hostName} is marked as revoked (${entry.file}:${entry.line}).\n` +
        `This could mean that a stolen key is being used to\nimpersonate this host.\n` +
        `${label} host key for ${hostName} was revoked and you have requested strict checking.\n` +
        `Host key verification failed.`,
      hostName,
      fingerprintSha256(key),
    );
  }
}

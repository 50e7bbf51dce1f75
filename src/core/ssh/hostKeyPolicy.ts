// The host key decision for one hop: known and equal → go on; changed or revoked → refuse, always (no option
// turns this off); unknown → StrictHostKeyChecking, then the caller's callback. A key accepted for recording
// is written only after the key exchange has proved the server holds it (see `recordAccepted`).
import { appendFileSync, mkdirSync, readFileSync, existsSync } from 'node:fs';
import { dirname } from 'node:path';
import {
  blobKeyType,
  checkHostKey,
  fingerprintSha256,
  formatKnownHostsLine,
  knownHostsName,
  knownKeyTypes,
  readKnownHostsFiles,
  type KnownHostEntry,
} from './knownHosts';
import { HostKeyChangedError, HostKeyError, HostKeyRevokedError, HostKeyUnknownError, SshConfigError } from './errors';
import type { StrictHostKeyChecking } from './config';
import { unreachable } from '../../shared/unreachable';

export type UnknownHostDecision = 'accept-once' | 'accept-and-record' | 'reject';

export interface UnknownHostInfo {
  /** The known_hosts name (`host` or `[host]:port`). */
  hostName: string;
  keyType: string;
  fingerprint: string;
  /** Where an accepted key would be recorded. */
  knownHostsFile: string;
}

export type UnknownHostCallback = (info: UnknownHostInfo) => UnknownHostDecision | Promise<UnknownHostDecision>;

export interface HostKeyPolicyOptions {
  host: string;
  port: number;
  /** HostKeyAlias: looked up as written, without the `[…]:port` form. */
  hostKeyAlias?: string;
  /** Files to read, in order; the first one receives recorded keys. */
  knownHostsFiles: string[];
  /** Read-only files consulted after `knownHostsFiles` (GlobalKnownHostsFile). */
  globalKnownHostsFiles?: string[];
  strict: StrictHostKeyChecking;
  hashKnownHosts: boolean;
  onUnknownHost?: UnknownHostCallback;
  log?: (msg: string) => void;
}

export interface HostKeyVerdict {
  ok: boolean;
  error?: HostKeyError;
  /** A line to append once the handshake has completed. */
  record?: { file: string; line: string };
}

/** ssh2's host key algorithms with the types already known for this host first, as OpenSSH orders them. */
/** The name looked up in known_hosts for this hop. */
export function lookupName(opts: Pick<HostKeyPolicyOptions, 'host' | 'port' | 'hostKeyAlias'>): string {
  return opts.hostKeyAlias ? opts.hostKeyAlias.toLowerCase() : knownHostsName(opts.host, opts.port);
}

function allFiles(opts: Pick<HostKeyPolicyOptions, 'knownHostsFiles' | 'globalKnownHostsFiles'>): string[] {
  return [...opts.knownHostsFiles, ...(opts.globalKnownHostsFiles ?? [])];
}

export function preferredHostKeyAlgorithms(
  opts: Pick<HostKeyPolicyOptions, 'host' | 'port' | 'hostKeyAlias' | 'knownHostsFiles' | 'globalKnownHostsFiles'>,
): string[] {
  const all = [
    'ssh-ed25519',
    'ecdsa-sha2-nistp256',
    'ecdsa-sha2-nistp384',
    'ecdsa-sha2-nistp521',
    'rsa-sha2-512',
    'rsa-sha2-256',
    'ssh-rsa',
  ];
  let known: string[] = [];
  try {
    known = knownKeyTypes(readKnownHostsFiles(allFiles(opts)).entries, lookupName(opts));
  } catch {
    // Unreadable files surface in verifyHostKey with a proper message.
  }
  const algos = known.flatMap((t) => (t === 'ssh-rsa' ? ['rsa-sha2-512', 'rsa-sha2-256', 'ssh-rsa'] : [t]));
  return [...algos.filter((a) => all.includes(a)), ...all.filter((a) => !algos.includes(a))];
}

export async function verifyHostKey(key: Buffer, opts: HostKeyPolicyOptions): Promise<HostKeyVerdict> {
  const name = lookupName(opts);
  let read: ReturnType<typeof readKnownHostsFiles>;
  try {
    read = readKnownHostsFiles(allFiles(opts));
  } catch (e) {
    throw new SshConfigError(`cannot read known_hosts (${(e as Error).message}); fix the file's permissions or pass --known-hosts FILE`);
  }
  const { entries, invalid } = read;
  for (const bad of invalid) opts.log?.(`known_hosts ${bad.file}:${bad.line} skipped: ${bad.reason}`);
  const status = checkHostKey(entries, name, key);
  const recordFile = opts.knownHostsFiles[0] ?? '';
  switch (status.kind) {
    case 'ok':
      return { ok: true };
    case 'revoked':
      return { ok: false, error: new HostKeyRevokedError(name, key, status.entry) };
    case 'changed':
      return { ok: false, error: new HostKeyChangedError(name, key, status.offending) };
    case 'new':
      break;
    default:
      unreachable(status, 'host key status');
  }
  const caNote = status.certAuthorityIgnored.length
    ? `(${describeEntries(status.certAuthorityIgnored)} is a @cert-authority line; host certificates are not supported, so it cannot vouch for this key)\n`
    : '';
  let decision: UnknownHostDecision;
  if (opts.strict === 'yes') decision = 'reject';
  else if (opts.strict === 'accept-new' || opts.strict === 'no') decision = 'accept-and-record';
  else if (opts.onUnknownHost) {
    decision = await opts.onUnknownHost({
      hostName: name,
      keyType: blobKeyType(key),
      fingerprint: fingerprintSha256(key),
      knownHostsFile: recordFile,
    });
  } else decision = 'reject';
  if (decision === 'reject') {
    const why = opts.strict === 'yes' ? `(StrictHostKeyChecking is yes in your ssh config)\n` : '';
    return { ok: false, error: new HostKeyUnknownError(name, key, recordFile, caNote + why) };
  }
  if (decision === 'accept-once' || !recordFile) return { ok: true };
  return { ok: true, record: { file: recordFile, line: formatKnownHostsLine(name, key, { hash: opts.hashKnownHosts }) } };
}

function describeEntries(es: KnownHostEntry[]): string {
  return es.map((e) => `${e.file}:${e.line}`).join(', ');
}

/** Append the accepted key like `ssh` does: create ~/.ssh-like parents, never rewrite existing lines. */
export function recordAccepted(record: { file: string; line: string }): void {
  mkdirSync(dirname(record.file), { recursive: true, mode: 0o700 });
  let prefix = '';
  if (existsSync(record.file)) {
    const cur = readFileSync(record.file);
    if (cur.length > 0 && cur[cur.length - 1] !== 0x0a) prefix = '\n';
  }
  appendFileSync(record.file, `${prefix}${record.line}\n`, { mode: 0o600 });
}

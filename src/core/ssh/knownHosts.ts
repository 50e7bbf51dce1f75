// known_hosts reading and matching with OpenSSH's rules (sshd(8) "SSH_KNOWN_HOSTS FILE FORMAT", hostfile.c):
// comma-separated patterns with `*`/`?` and `!` negation, hashed `|1|salt|hmac` names, `[host]:port` for
// non-default ports, `@revoked` and `@cert-authority` markers, several keys per host.
import { createHash, createHmac, randomBytes, timingSafeEqual } from 'node:crypto';
import { readFileSync } from 'node:fs';

export type KnownHostMarker = 'none' | 'revoked' | 'cert-authority';

export interface KnownHostEntry {
  file: string;
  /** 1-based line number, as OpenSSH reports it ("Offending key in FILE:LINE"). */
  line: number;
  marker: KnownHostMarker;
  /** The host field as written (pattern list or one hashed name). */
  hosts: string;
  hashed: boolean;
  /** Key type as written, e.g. `ssh-ed25519`. */
  keyType: string;
  /** The raw public key blob (base64-decoded second field). */
  key: Buffer;
}

export interface KnownHostsFile {
  entries: KnownHostEntry[];
  /** Lines that could not be read as entries; OpenSSH skips them too, we keep them for diagnostics. */
  invalid: { file: string; line: number; reason: string }[];
}

const HASH_MAGIC = '|1|';

/** Parse known_hosts text. Comments, blank lines and malformed lines never throw. */
export function parseKnownHosts(text: string, file: string): KnownHostsFile {
  const out: KnownHostsFile = { entries: [], invalid: [] };
  const lines = text.split('\n');
  for (let i = 0; i < lines.length; i++) {
    const lineNo = i + 1;
    const raw = lines[i].replace(/\r$/, '');
    const trimmed = raw.replace(/^[ \t]+/, '');
    if (trimmed === '' || trimmed.startsWith('#')) continue;
    const fields = trimmed.split(/[ \t]+/);
    let marker: KnownHostMarker = 'none';
    if (fields[0].startsWith('@')) {
      const m = fields.shift()!;
      if (m === '@revoked') marker = 'revoked';
      else if (m === '@cert-authority') marker = 'cert-authority';
      else {
        out.invalid.push({ file, line: lineNo, reason: `unknown marker ${m}` });
        continue;
      }
    }
    if (fields.length < 3) {
      out.invalid.push({ file, line: lineNo, reason: 'expected "HOSTS KEYTYPE BASE64KEY"' });
      continue;
    }
    const [hosts, keyType, b64] = fields;
    const key = Buffer.from(b64, 'base64');
    // The blob names its own type; a line whose type field disagrees is corrupt (and OpenSSH rejects it).
    if (key.length < 8 || blobKeyType(key) !== keyType) {
      out.invalid.push({ file, line: lineNo, reason: `key data is not a ${keyType} key` });
      continue;
    }
    out.entries.push({ file, line: lineNo, marker, hosts, hashed: hosts.startsWith(HASH_MAGIC), keyType, key });
  }
  return out;
}

/** Read and parse files; a missing file is empty (as for OpenSSH), other read errors propagate. */
export function readKnownHostsFiles(paths: readonly string[]): KnownHostsFile {
  const all: KnownHostsFile = { entries: [], invalid: [] };
  for (const p of paths) {
    let text: string;
    try {
      text = readFileSync(p, 'utf8');
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code === 'ENOENT') continue;
      throw e;
    }
    const f = parseKnownHosts(text, p);
    all.entries.push(...f.entries);
    all.invalid.push(...f.invalid);
  }
  return all;
}

/** The name OpenSSH looks up: `host` on port 22, `[host]:port` otherwise; always lower case. */
export function knownHostsName(host: string, port: number): string {
  const h = host.toLowerCase();
  return port === 22 ? h : `[${h}]:${port}`;
}

/** The SSH wire type name at the start of a public key blob (`string type, …`). */
export function blobKeyType(blob: Buffer): string {
  if (blob.length < 4) return '';
  const n = blob.readUInt32BE(0);
  if (n > 64 || 4 + n > blob.length) return '';
  return blob.subarray(4, 4 + n).toString('latin1');
}

/** `SHA256:` + unpadded base64 of the blob's SHA-256, exactly as `ssh-keygen -l` prints it. */
export function fingerprintSha256(blob: Buffer): string {
  return 'SHA256:' + createHash('sha256').update(blob).digest('base64').replace(/=+$/, '');
}

/** OpenSSH's short type label used in messages ("ED25519", "RSA", "ECDSA"). */
export function keyTypeLabel(keyType: string): string {
  if (keyType === 'ssh-ed25519') return 'ED25519';
  if (keyType === 'ssh-rsa') return 'RSA';
  if (keyType === 'ssh-dss') return 'DSA';
  if (keyType.startsWith('ecdsa-sha2-')) return 'ECDSA';
  if (keyType.startsWith('sk-ssh-ed25519')) return 'ED25519-SK';
  if (keyType.startsWith('sk-ecdsa')) return 'ECDSA-SK';
  return keyType.toUpperCase();
}

/** OpenSSH's match_pattern: `*` any run, `?` exactly one character, nothing else special. */
export function globMatch(pattern: string, text: string): boolean {
  let p = 0;
  let t = 0;
  let starP = -1;
  let starT = 0;
  while (t < text.length) {
    if (p < pattern.length && (pattern[p] === '?' || pattern[p] === text[t])) {
      p++;
      t++;
    } else if (p < pattern.length && pattern[p] === '*') {
      starP = p++;
      starT = t;
    } else if (starP >= 0) {
      p = starP + 1;
      t = ++starT;
    } else return false;
  }
  while (p < pattern.length && pattern[p] === '*') p++;
  return p === pattern.length;
}

/**
 * OpenSSH's match_pattern_list for host names: case-insensitive; any matching negated pattern vetoes the
 * whole list, otherwise one positive match suffices.
 */
export function matchPatternList(name: string, list: string): boolean {
  const n = name.toLowerCase();
  let matched = false;
  for (const raw of list.split(',')) {
    const negated = raw.startsWith('!');
    const pat = (negated ? raw.slice(1) : raw).toLowerCase();
    if (pat === '') continue;
    if (globMatch(pat, n)) {
      if (negated) return false;
      matched = true;
    }
  }
  return matched;
}

/** `|1|base64(salt)|base64(HMAC-SHA1(salt, name))`, the format `ssh-keygen -H` and HashKnownHosts write. */
export function hashHostName(name: string, salt: Buffer = randomBytes(20)): string {
  const mac = createHmac('sha1', salt).update(name).digest();
  return `${HASH_MAGIC}${salt.toString('base64')}|${mac.toString('base64')}`;
}

function hashedMatches(name: string, field: string): boolean {
  const parts = field.slice(HASH_MAGIC.length).split('|');
  if (parts.length !== 2) return false;
  const salt = Buffer.from(parts[0], 'base64');
  const want = Buffer.from(parts[1], 'base64');
  if (salt.length === 0 || want.length !== 20) return false;
  const got = createHmac('sha1', salt).update(name).digest();
  return timingSafeEqual(got, want);
}

/** Does this entry's host field name `name` (already in `knownHostsName` form)? */
export function entryMatchesHost(entry: Pick<KnownHostEntry, 'hosts' | 'hashed'>, name: string): boolean {
  const n = name.toLowerCase();
  return entry.hashed ? hashedMatches(n, entry.hosts) : matchPatternList(n, entry.hosts);
}

export type HostKeyStatus =
  | { kind: 'ok'; entry: KnownHostEntry }
  /** No plain entry for this host; `@cert-authority` lines that matched are listed so messages can say why. */
  | { kind: 'new'; certAuthorityIgnored: KnownHostEntry[] }
  | { kind: 'changed'; offending: KnownHostEntry }
  | { kind: 'revoked'; entry: KnownHostEntry };

/**
 * Decide like OpenSSH's check_key_in_hostkeys (hostfile.c): among plain (unmarked) entries for the host, an
 * equal key is OK; otherwise any known key for that host — whatever its type — makes it CHANGED (checked
 * against `ssh` 9.2: an ED25519 entry and a server offering only RSA gives "REMOTE HOST IDENTIFICATION HAS
 * CHANGED"). Then a matching `@revoked` key overrides everything. `@cert-authority` lines only vouch for host
 * certificates, which we do not negotiate, so they never make a plain key OK.
 */
export function checkHostKey(entries: readonly KnownHostEntry[], name: string, key: Buffer): HostKeyStatus {
  const mine = entries.filter((e) => entryMatchesHost(e, name));
  for (const e of mine) {
    // Only lines whose host field matches count, as in OpenSSH (load_hostkeys filters by host first).
    if (e.marker === 'revoked' && e.key.equals(key)) return { kind: 'revoked', entry: e };
  }
  let changed: KnownHostEntry | undefined;
  for (const e of mine) {
    if (e.marker !== 'none') continue;
    if (e.key.equals(key)) return { kind: 'ok', entry: e };
    changed ??= e;
  }
  if (changed) return { kind: 'changed', offending: changed };
  return { kind: 'new', certAuthorityIgnored: mine.filter((e) => e.marker === 'cert-authority') };
}

/** Key types already known for a host: offered first in key exchange, as OpenSSH orders HostKeyAlgorithms. */
export function knownKeyTypes(entries: readonly KnownHostEntry[], name: string): string[] {
  const types: string[] = [];
  for (const e of entries) {
    if (e.marker === 'none' && !types.includes(e.keyType) && entryMatchesHost(e, name)) types.push(e.keyType);
  }
  return types;
}

/** One known_hosts line as `ssh` writes it after accepting a key (hashed when HashKnownHosts is on). */
export function formatKnownHostsLine(name: string, key: Buffer, opts: { hash?: boolean } = {}): string {
  const n = name.toLowerCase();
  return `${opts.hash ? hashHostName(n) : n} ${blobKeyType(key)} ${key.toString('base64')}`;
}

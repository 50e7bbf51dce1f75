import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync, spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, writeFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  checkHostKey,
  fingerprintSha256,
  formatKnownHostsLine,
  hashHostName,
  knownHostsName,
  knownKeyTypes,
  matchPatternList,
  parseKnownHosts,
} from '../../../../src/core/ssh/knownHosts';
import { missing } from '../../../helpers/require';

function haveKeygen(): boolean {
  return spawnSync('ssh-keygen', ['-?'], { stdio: 'ignore' }).error === undefined;
}

/** A fresh real key pair from ssh-keygen: [public line "type base64", raw blob]. */
function realKey(dir: string, type: 'ed25519' | 'rsa' | 'ecdsa', name: string): { line: string; blob: Buffer; pubFile: string } {
  const f = join(dir, name);
  execFileSync('ssh-keygen', ['-q', '-t', type, ...(type === 'rsa' ? ['-b', '2048'] : []), '-N', '', '-C', 'c', '-f', f]);
  const [t, b64] = readFileSync(`${f}.pub`, 'utf8').trim().split(' ');
  return { line: `${t} ${b64}`, blob: Buffer.from(b64, 'base64'), pubFile: `${f}.pub` };
}

test('known_hosts: plain patterns, [host]:port, wildcards and negation follow OpenSSH', (t) => {
  if (!haveKeygen()) return missing(t, 'ssh-keygen not installed');
  const dir = mkdtempSync(join(tmpdir(), 'pl-kh-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  const a = realKey(dir, 'ed25519', 'a');
  const b = realKey(dir, 'ed25519', 'b');
  const text = [
    '# comment',
    '',
    `db1.example.com,10.0.0.5 ${a.line}`,
    `[db2.example.com]:2222 ${b.line}`,
    `*.prod.example.com,!evil.prod.example.com ${a.line}`,
    `garbage-line-without-key`,
    `web? ${b.line}`,
  ].join('\n');
  const kh = parseKnownHosts(text, 'KH');
  assert.equal(kh.entries.length, 4);
  assert.deepEqual(
    kh.invalid.map((i) => i.line),
    [6],
  );

  assert.equal(checkHostKey(kh.entries, knownHostsName('db1.example.com', 22), a.blob).kind, 'ok');
  assert.equal(checkHostKey(kh.entries, knownHostsName('DB1.Example.COM', 22), a.blob).kind, 'ok', 'names compare case-insensitively');
  assert.equal(checkHostKey(kh.entries, knownHostsName('10.0.0.5', 22), a.blob).kind, 'ok');
  // The same host on a non-default port is a different known_hosts name.
  assert.equal(checkHostKey(kh.entries, knownHostsName('db1.example.com', 2222), a.blob).kind, 'new');
  assert.equal(checkHostKey(kh.entries, knownHostsName('db2.example.com', 2222), b.blob).kind, 'ok');
  assert.equal(checkHostKey(kh.entries, knownHostsName('db2.example.com', 22), b.blob).kind, 'new');
  assert.equal(checkHostKey(kh.entries, 'x.prod.example.com', a.blob).kind, 'ok');
  assert.equal(checkHostKey(kh.entries, 'evil.prod.example.com', a.blob).kind, 'new', 'a negated pattern vetoes the line');
  assert.equal(checkHostKey(kh.entries, 'web1', b.blob).kind, 'ok');
  assert.equal(checkHostKey(kh.entries, 'web12', b.blob).kind, 'new', '? is exactly one character');
});

test('known_hosts: a different key for a known host is a change (any type), pointing at FILE:LINE', (t) => {
  if (!haveKeygen()) return missing(t, 'ssh-keygen not installed');
  const dir = mkdtempSync(join(tmpdir(), 'pl-kh-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  const known = realKey(dir, 'ed25519', 'k');
  const other = realKey(dir, 'ed25519', 'o');
  const rsa = realKey(dir, 'rsa', 'r');
  const kh = parseKnownHosts(`# x\nhost1 ${known.line}\n`, '/f/known_hosts');
  const same = checkHostKey(kh.entries, 'host1', other.blob);
  assert.equal(same.kind, 'changed');
  assert.equal(same.kind === 'changed' && `${same.offending.file}:${same.offending.line}`, '/f/known_hosts:2');
  assert.equal(checkHostKey(kh.entries, 'host1', rsa.blob).kind, 'changed');
  // With several keys per host, an equal one anywhere is enough.
  const two = parseKnownHosts(`host1 ${rsa.line}\nhost1 ${known.line}\n`, 'F');
  assert.equal(checkHostKey(two.entries, 'host1', known.blob).kind, 'ok');
  assert.deepEqual(knownKeyTypes(two.entries, 'host1'), ['ssh-rsa', 'ssh-ed25519']);
});

test('known_hosts: @revoked wins over a matching plain line; @cert-authority never vouches for a plain key', (t) => {
  if (!haveKeygen()) return missing(t, 'ssh-keygen not installed');
  const dir = mkdtempSync(join(tmpdir(), 'pl-kh-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  const k = realKey(dir, 'ed25519', 'k');
  const kh = parseKnownHosts(`host1 ${k.line}\n@revoked host1 ${k.line}\n@cert-authority *.corp ${k.line}\n`, 'F');
  const r = checkHostKey(kh.entries, 'host1', k.blob);
  assert.equal(r.kind, 'revoked');
  assert.equal(r.kind === 'revoked' && r.entry.line, 2);
  const ca = checkHostKey(kh.entries, 'a.corp', k.blob);
  assert.equal(ca.kind, 'new');
  assert.equal(ca.kind === 'new' && ca.certAuthorityIgnored.length, 1);
  assert.equal(parseKnownHosts(`@bogus host1 ${k.line}\n`, 'F').invalid.length, 1);
});

test('known_hosts: entries hashed by real `ssh-keygen -H` match, including [host]:port', (t) => {
  if (!haveKeygen()) return missing(t, 'ssh-keygen not installed');
  const dir = mkdtempSync(join(tmpdir(), 'pl-kh-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  const a = realKey(dir, 'ed25519', 'a');
  const b = realKey(dir, 'ecdsa', 'b');
  const file = join(dir, 'known_hosts');
  writeFileSync(file, `db1.example.com ${a.line}\n[127.0.0.1]:2222 ${b.line}\n`);
  execFileSync('ssh-keygen', ['-H', '-f', file], { stdio: 'ignore' });
  const kh = parseKnownHosts(readFileSync(file, 'utf8'), file);
  assert.equal(kh.entries.length, 2);
  assert.ok(
    kh.entries.every((e) => e.hashed && e.hosts.startsWith('|1|')),
    'ssh-keygen -H hashed every name',
  );
  assert.equal(checkHostKey(kh.entries, 'db1.example.com', a.blob).kind, 'ok');
  assert.equal(checkHostKey(kh.entries, knownHostsName('127.0.0.1', 2222), b.blob).kind, 'ok');
  assert.equal(checkHostKey(kh.entries, knownHostsName('127.0.0.1', 22), b.blob).kind, 'new');
  assert.equal(checkHostKey(kh.entries, 'db1.example.com', b.blob).kind, 'changed');
});

test('known_hosts: lines we write (hashed and plain) are found by `ssh-keygen -F`', (t) => {
  if (!haveKeygen()) return missing(t, 'ssh-keygen not installed');
  const dir = mkdtempSync(join(tmpdir(), 'pl-kh-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  const a = realKey(dir, 'ed25519', 'a');
  const file = join(dir, 'known_hosts');
  const name = knownHostsName('Host.Example', 2200);
  writeFileSync(file, formatKnownHostsLine(name, a.blob, { hash: true }) + '\n' + formatKnownHostsLine('plain.example', a.blob) + '\n');
  assert.match(readFileSync(file, 'utf8'), /^\|1\|[A-Za-z0-9+/=]{28}\|[A-Za-z0-9+/=]{28} ssh-ed25519 /);
  for (const n of ['[host.example]:2200', 'plain.example']) {
    const r = spawnSync('ssh-keygen', ['-F', n, '-f', file], { encoding: 'utf8' });
    assert.equal(r.status, 0, `ssh-keygen -F ${n} finds our line:\n${r.stdout}${r.stderr}`);
  }
  assert.equal(spawnSync('ssh-keygen', ['-F', 'other.example', '-f', file]).status, 1);
  // Same salt, same name → same hash (it is the HMAC, not random text).
  const salt = Buffer.alloc(20, 7);
  assert.equal(hashHostName('x', salt), hashHostName('x', salt));
  assert.notEqual(hashHostName('x', salt), hashHostName('y', salt));
});

test('fingerprint equals `ssh-keygen -lf` for ed25519, ecdsa and rsa keys', (t) => {
  if (!haveKeygen()) return missing(t, 'ssh-keygen not installed');
  const dir = mkdtempSync(join(tmpdir(), 'pl-kh-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  for (const type of ['ed25519', 'ecdsa', 'rsa'] as const) {
    const k = realKey(dir, type, `fp_${type}`);
    const out = execFileSync('ssh-keygen', ['-lf', k.pubFile], { encoding: 'utf8' });
    assert.equal(fingerprintSha256(k.blob), out.split(' ')[1], type);
  }
});

test('pattern lists: negation anywhere vetoes; empty and odd patterns do not match everything', () => {
  assert.equal(matchPatternList('a.b', '*.b'), true);
  assert.equal(matchPatternList('a.b', '!a.b,*'), false);
  assert.equal(matchPatternList('a.b', '*,!a.b'), false);
  assert.equal(matchPatternList('a.b', '!c'), false, 'only negated patterns never match positively');
  assert.equal(matchPatternList('a.b', ''), false);
  assert.equal(matchPatternList('a(b', 'a(b'), true, 'regex metacharacters are literal');
  assert.equal(matchPatternList('ab', 'a.'), false);
});

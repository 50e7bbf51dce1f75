import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  preferredHostKeyAlgorithms,
  recordAccepted,
  verifyHostKey,
  type HostKeyPolicyOptions,
} from '../../../../src/core/ssh/hostKeyPolicy';
import { HostKeyChangedError, HostKeyUnknownError, SshConfigError } from '../../../../src/core/ssh/errors';

function key(dir: string, name: string, type = 'ed25519'): { line: string; blob: Buffer } {
  const f = join(dir, name);
  execFileSync('ssh-keygen', ['-q', '-t', type, ...(type === 'rsa' ? ['-b', '2048'] : []), '-N', '', '-f', f]);
  const [t, b] = readFileSync(`${f}.pub`, 'utf8').split(' ');
  return { line: `${t} ${b}`, blob: Buffer.from(b, 'base64') };
}

test('unknown host: StrictHostKeyChecking yes refuses without asking; accept-new/no record without asking; ask defers', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'pl-hkp-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  const k = key(dir, 'k');
  const kh = join(dir, 'sub', 'known_hosts');
  const base: HostKeyPolicyOptions = { host: 'Box.Example', port: 2222, knownHostsFiles: [kh], strict: 'ask', hashKnownHosts: false };
  let asked = 0;
  const yes = await verifyHostKey(k.blob, { ...base, strict: 'yes', onUnknownHost: () => (asked++, 'accept-and-record') });
  assert.equal(yes.ok, false);
  assert.ok(yes.error instanceof HostKeyUnknownError);
  assert.match(yes.error.message, /StrictHostKeyChecking is yes/);
  assert.equal(asked, 0);
  for (const strict of ['accept-new', 'no'] as const) {
    const v = await verifyHostKey(k.blob, { ...base, strict, onUnknownHost: () => (asked++, 'reject') });
    assert.deepEqual(v.record, { file: kh, line: `[box.example]:2222 ${k.line}` });
  }
  assert.equal(asked, 0);
  const ask = await verifyHostKey(k.blob, {
    ...base,
    onUnknownHost: (i) => (asked++, assert.equal(i.hostName, '[box.example]:2222'), 'accept-once'),
  });
  assert.deepEqual(ask, { ok: true });
  assert.equal(asked, 1);
  assert.equal((await verifyHostKey(k.blob, base)).ok, false, 'no callback: refused');

  // Recording creates the directory and appends after a last line lacking its newline.
  recordAccepted({ file: kh, line: 'a ssh-ed25519 AAAA' });
  writeFileSync(kh, readFileSync(kh, 'utf8').trimEnd());
  recordAccepted({ file: kh, line: `[box.example]:2222 ${k.line}` });
  assert.equal(readFileSync(kh, 'utf8'), `a ssh-ed25519 AAAA\n[box.example]:2222 ${k.line}\n`);
  assert.deepEqual(await verifyHostKey(k.blob, base), { ok: true });
});

test('global known_hosts are consulted (a change there is a change) but never written', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'pl-hkp-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  const k = key(dir, 'k');
  const old = key(dir, 'old', 'rsa');
  const global = join(dir, 'global_known_hosts');
  writeFileSync(global, `h1 ${old.line}\n`);
  const user = join(dir, 'known_hosts');
  const v = await verifyHostKey(k.blob, {
    host: 'h1',
    port: 22,
    knownHostsFiles: [user],
    globalKnownHostsFiles: [global],
    strict: 'accept-new',
    hashKnownHosts: false,
  });
  assert.ok(v.error instanceof HostKeyChangedError);
  assert.equal(v.error.offending.file, global);
  assert.equal(existsSync(user), false);
  // Known types go first in the host key algorithms, so a server with several keys shows the one we know.
  assert.deepEqual(
    preferredHostKeyAlgorithms({ host: 'h1', port: 22, knownHostsFiles: [user], globalKnownHostsFiles: [global] }).slice(0, 3),
    ['rsa-sha2-512', 'rsa-sha2-256', 'ssh-rsa'],
  );
  assert.equal(preferredHostKeyAlgorithms({ host: 'other', port: 22, knownHostsFiles: [user] })[0], 'ssh-ed25519');
});

test('an unreadable known_hosts is a typed error naming the fix, not a crash or a silent "unknown"', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'pl-hkp-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  const k = key(dir, 'k');
  // A directory where the file should be: reading fails with EISDIR even as root.
  await assert.rejects(
    verifyHostKey(k.blob, { host: 'h', port: 22, knownHostsFiles: [dir], strict: 'accept-new', hashKnownHosts: false }),
    (e: Error) => e instanceof SshConfigError && /cannot read known_hosts.*--known-hosts FILE/.test(e.message),
  );
});

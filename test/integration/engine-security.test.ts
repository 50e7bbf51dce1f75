// Security at the CLI: `probelens trace --host …` refuses unknown host keys unless told
// --accept-new, refuses changed and @revoked keys always, matches hashed known_hosts entries and [host]:port, verifies
// both keys of a ProxyJump chain; hostile probe names, paths and filters never run anything on the target.
import { test, type TestContext } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { copyFileSync, existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { requireTracefs } from '../helpers/tracefs';
import { generateKeyPair, requireSshd, type Sshd } from '../helpers/sshd';
import { fixtureOrSkip } from '../helpers/fixtures';
import { groupsProbing, isolatedEnv, parseJsonOutput, privateCopy, runCli, scratch, traceOneHit, waitAllClean } from './engine-harness';
import { plainData } from '../helpers/plain';

const TIMEOUT = { timeout: 300_000 };

function fingerprint(sshd: Sshd): string {
  return execFileSync('ssh-keygen', ['-lf', `${sshd.hostKeyFile}.pub`], { encoding: 'utf8' }).split(' ')[1];
}

async function setup(t: TestContext) {
  if (!requireTracefs(t)) return undefined;
  const sshd = await requireSshd(t);
  if (!sshd) return undefined;
  const f = await fixtureOrSkip(t, 'calls-O2');
  if (!f) return undefined;
  return { sshd, bin: privateCopy(t, f.path), env: isolatedEnv(t), dir: scratch(t) };
}

const host = (s: Sshd) => `root@${s.host}:${s.port}`;

test(
  'CLI: an unknown host key is refused by default (fingerprint shown, nothing recorded, nothing armed); --accept-new records it',
  TIMEOUT,
  async (t) => {
    const s = await setup(t);
    if (!s) return;
    const kh = join(s.dir, 'known_hosts');
    writeFileSync(kh, '');
    const flags = ['--host', host(s.sshd), '--identity', s.sshd.identityFile, '--known-hosts', kh];
    const refused = await runCli(t, ['trace', s.bin, 'add_ints a b', '--duration', '30', ...flags], s.env);
    assert.equal(refused.code, 1, refused.stderr);
    assert.match(refused.stderr, /can't be established/);
    assert.ok(refused.stderr.includes(fingerprint(s.sshd)), `the fingerprint is shown: ${refused.stderr}`);
    assert.match(refused.stderr, /--accept-new/);
    assert.equal(readFileSync(kh, 'utf8'), '');
    assert.deepEqual(plainData(groupsProbing(s.bin)), []);

    const accepted = await traceOneHit(t, s.bin, [...flags, '--accept-new'], s.env);
    assert.equal(accepted.code, 0, accepted.stderr);
    const { hits } = parseJsonOutput(accepted.stdout);
    assert.deepEqual(plainData(hits.map((h) => [h.host, h.args])), [[host(s.sshd), { a: 3, b: -7 }]]);
    assert.notEqual(readFileSync(kh, 'utf8').trim(), '', 'the key was recorded');
    // Recorded, it is now known: the next run needs no --accept-new.
    const again = await traceOneHit(t, s.bin, flags, s.env);
    assert.equal(again.code, 0, again.stderr);
  },
);

test('CLI: a changed host key is refused even with --accept-new (OpenSSH-style warning, file:line)', TIMEOUT, async (t) => {
  const s = await setup(t);
  if (!s) return;
  const other = generateKeyPair(join(s.dir, 'other'), 'ed25519', 'other_host_key');
  const kh = join(s.dir, 'known_hosts');
  writeFileSync(kh, `[${s.sshd.host}]:${s.sshd.port} ${other.publicKey.split(' ').slice(0, 2).join(' ')}\n`);
  const r = await runCli(
    t,
    [
      'trace',
      s.bin,
      'add_ints a b',
      '--duration',
      '30',
      '--host',
      host(s.sshd),
      '--identity',
      s.sshd.identityFile,
      '--known-hosts',
      kh,
      '--accept-new',
    ],
    s.env,
  );
  assert.equal(r.code, 1, r.stderr);
  assert.match(r.stderr, /REMOTE HOST IDENTIFICATION HAS CHANGED/);
  assert.ok(r.stderr.includes(`${kh}:1`), r.stderr);
  assert.ok(r.stderr.includes(fingerprint(s.sshd)), r.stderr);
  assert.equal(readFileSync(kh, 'utf8').split('\n').filter(Boolean).length, 1, 'known_hosts is left as it was');
  assert.deepEqual(plainData(groupsProbing(s.bin)), []);
});

test('CLI: a @revoked host key is refused even beside a matching line and with --accept-new', TIMEOUT, async (t) => {
  const s = await setup(t);
  if (!s) return;
  const kh = join(s.dir, 'known_hosts');
  writeFileSync(kh, `${s.sshd.knownHostsLine}\n@revoked * ${s.sshd.hostKey}\n`);
  const r = await runCli(
    t,
    [
      'trace',
      s.bin,
      'add_ints a b',
      '--duration',
      '30',
      '--host',
      host(s.sshd),
      '--identity',
      s.sshd.identityFile,
      '--known-hosts',
      kh,
      '--accept-new',
    ],
    s.env,
  );
  assert.equal(r.code, 1, r.stderr);
  assert.match(r.stderr, /REVOKED HOST KEY/);
  assert.deepEqual(plainData(groupsProbing(s.bin)), []);
});

test('CLI: known_hosts hashed by ssh-keygen -H matches [host]:port; an entry without the port does not', TIMEOUT, async (t) => {
  const s = await setup(t);
  if (!s) return;
  const kh = join(s.dir, 'known_hosts');
  copyFileSync(s.sshd.knownHostsFile, kh);
  execFileSync('ssh-keygen', ['-q', '-H', '-f', kh], { stdio: 'ignore' });
  const text = readFileSync(kh, 'utf8');
  assert.match(text, /^\|1\|/m, 'the entry is hashed');
  assert.ok(!text.includes('127.0.0.1'), 'no plain host name is left');
  const flags = ['--host', host(s.sshd), '--identity', s.sshd.identityFile, '--known-hosts', kh];
  const r = await traceOneHit(t, s.bin, flags, s.env);
  assert.equal(r.code, 0, r.stderr);
  assert.equal(parseJsonOutput(r.stdout).hits.length, 1);

  writeFileSync(kh, `${s.sshd.host} ${s.sshd.hostKey}\n`);
  const portless = await runCli(t, ['trace', s.bin, 'add_ints a b', '--duration', '30', ...flags], s.env);
  assert.equal(portless.code, 1, portless.stderr);
  assert.match(portless.stderr, /can't be established/);
});

test('CLI: ProxyJump (from ~/.ssh/config) through a second sshd works with both host keys verified', TIMEOUT, async (t) => {
  const s = await setup(t);
  if (!s) return;
  // DEBUG: sshd logs direct-tcpip requests (with their destination) only at that level.
  const jump = await requireSshd(t, { logLevel: 'DEBUG' });
  if (!jump) return;
  // The target reached through the jump host: the destination the jump host connects to is 127.0.0.1:PORT.
  const config = [
    'Host pl-target',
    `  HostName ${s.sshd.host}`,
    `  Port ${s.sshd.port}`,
    '  User root',
    '  ProxyJump pl-jump',
    'Host pl-jump',
    `  HostName ${jump.host}`,
    `  Port ${jump.port}`,
    '  User root',
    '',
  ].join('\n');
  const env = isolatedEnv(t, config);
  const kh = join(s.dir, 'known_hosts');
  const idFlags = ['--identity', s.sshd.identityFile, '--identity', jump.identityFile, '--known-hosts', kh];

  writeFileSync(kh, `${s.sshd.knownHostsLine}\n${jump.knownHostsLine}\n`);
  const ok = await traceOneHit(t, s.bin, ['--host', 'pl-target', ...idFlags], env);
  assert.equal(ok.code, 0, ok.stderr);
  assert.deepEqual(plainData(parseJsonOutput(ok.stdout).hits.map((h) => [h.host, h.args])), [['pl-target', { a: 3, b: -7 }]]);
  // The jump host really carried the connection: it logged a forwarding to the target's port.
  await jump.waitForLog(new RegExp(`direct.tcpip.*target ${s.sshd.host.replace(/\./g, '\\.')} port ${s.sshd.port}\\b`), 10_000);

  // Each hop's key is checked: the jump host unknown → refused; the target unknown → refused.
  writeFileSync(kh, `${s.sshd.knownHostsLine}\n`);
  const noJump = await runCli(t, ['trace', s.bin, 'add_ints a b', '--duration', '30', '--host', 'pl-target', ...idFlags], env);
  assert.equal(noJump.code, 1, noJump.stderr);
  assert.ok(noJump.stderr.includes(`[${jump.host}]:${jump.port}`) && /can't be established/.test(noJump.stderr), noJump.stderr);
  writeFileSync(kh, `${jump.knownHostsLine}\n`);
  const noTarget = await runCli(t, ['trace', s.bin, 'add_ints a b', '--duration', '30', '--host', 'pl-target', ...idFlags], env);
  assert.equal(noTarget.code, 1, noTarget.stderr);
  assert.ok(noTarget.stderr.includes(`[${s.sshd.host}]:${s.sshd.port}`) && /can't be established/.test(noTarget.stderr), noTarget.stderr);
  // A wrong key for the jump host is a changed key, refused even with --accept-new.
  const other = generateKeyPair(join(s.dir, 'other'), 'ed25519', 'other_host_key');
  writeFileSync(kh, `${s.sshd.knownHostsLine}\n[${jump.host}]:${jump.port} ${other.publicKey.split(' ').slice(0, 2).join(' ')}\n`);
  const wrong = await runCli(
    t,
    ['trace', s.bin, 'add_ints a b', '--duration', '30', '--host', 'pl-target', ...idFlags, '--accept-new'],
    env,
  );
  assert.equal(wrong.code, 1, wrong.stderr);
  assert.match(wrong.stderr, /REMOTE HOST IDENTIFICATION HAS CHANGED/);
  assert.deepEqual(plainData(groupsProbing(s.bin)), []);
});

test('CLI: hostile probe names, paths and filters never run anything on the target (the canary stays absent)', TIMEOUT, async (t) => {
  const s = await setup(t);
  if (!s) return;
  const canary = join(s.dir, 'canary');
  const touch = `touch ${canary}`;
  const flags = ['--host', host(s.sshd), '--identity', s.sshd.identityFile, '--known-hosts', s.sshd.knownHostsFile, '--duration', '2'];
  // A real binary whose own path is hostile: what the agent would get as the probe path and BUILDID path.
  const evilDir = join(s.dir, `x;${touch};$(${touch})\`${touch}\`'"`);
  mkdirSync(evilDir, { recursive: true });
  const evilBin = join(evilDir, 'calls');
  copyFileSync(s.bin, evilBin);
  const cases: Array<{ what: string; args: string[] }> = [
    { what: 'probe name with $(…)', args: [s.bin, `add_ints$(${touch}) a`] },
    { what: 'probe name with ;', args: [s.bin, `add_ints;${touch}`] },
    { what: 'probe name with backquotes', args: [s.bin, `\`${touch}\``] },
    { what: 'argument with a newline', args: [s.bin, `add_ints a\n${touch}`] },
    { what: 'argument name with quotes', args: [s.bin, `add_ints x='$(${touch})'=a`] },
    { what: 'argument expression with $(…)', args: [s.bin, `add_ints $(${touch})`] },
    { what: 'remote path with ; and $(…)', args: [s.bin, 'add_ints a', '--remote-path', `/tmp/x;${touch};$(${touch})`] },
    { what: 'remote path with a newline', args: [s.bin, 'add_ints a', '--remote-path', `/tmp/x\n${touch}`] },
    { what: 'binary whose path holds metacharacters', args: [evilBin, 'add_ints a'] },
    // Without the build-id check the hostile path reaches the definition itself (DEF's pattern).
    {
      what: 'hostile remote path, no build-id check',
      args: [s.bin, 'add_ints a', '--no-build-id-check', '--remote-path', `/tmp/x;${touch};$(${touch})`],
    },
    { what: 'hostile binary path, no build-id check', args: [evilBin, 'add_ints a', '--no-build-id-check'] },
    { what: 'filter with ;', args: [s.bin, 'add_ints a', '--filter', `a == 1; ${touch}`] },
    { what: 'filter with $(…)', args: [s.bin, 'add_ints a', '--filter', `a == "$(${touch})"`] },
    { what: 'filter with backquotes', args: [s.bin, 'add_ints a', '--filter', `a == \`${touch}\``] },
    { what: 'filter with a newline', args: [s.bin, 'add_ints a', '--filter', `a == 1\n${touch}`] },
    { what: 'filter closing a quote', args: [s.bin, 'add_ints a', '--filter', `a == 1' ; ${touch} ; '`] },
    {
      what: 'filter with || and a path (passes the pattern, reaches the kernel as data)',
      args: [s.bin, 'add_ints a', '--filter', `a == 1 || a == "${touch}"`],
    },
  ];
  for (const c of cases) {
    const r = await runCli(t, ['trace', ...c.args, ...flags], s.env);
    t.diagnostic(`${c.what}: exit ${r.code}: ${r.stderr.trim().split('\n').pop()}`);
    assert.ok(!existsSync(canary), `${c.what}: the canary exists (exit ${r.code})\n${r.stderr}`);
    assert.ok(r.code === 0 || r.code === 1 || r.code === 2, `${c.what}: exit ${r.code} (crashed?)\n${r.stderr}`);
    assert.doesNotMatch(r.stderr, /\n\s+at .*\(/, `${c.what}: a stack trace instead of a message\n${r.stderr}`);
  }
  // Whatever was armed on the way was cleaned up.
  const left = await waitAllClean([...groupsProbing(s.bin), ...groupsProbing(evilBin)], 10_000);
  assert.deepEqual(left, []);
  assert.ok(!existsSync(canary));
});

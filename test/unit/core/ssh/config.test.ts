import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir, userInfo } from 'node:os';
import { join } from 'node:path';
import { resolveHost as resolveHostReal, type ResolveOptions } from '../../../../src/core/ssh/config';

// The machine's /etc/ssh/ssh_config must not leak into these expectations unless a test names a system file.
const resolveHost = (alias: string, o: ResolveOptions = {}) =>
  resolveHostReal(alias, { systemConfigFile: '/nonexistent/ssh_config', ...o });
import { resolveChain } from '../../../../src/core/ssh/connect';

function home(t: { after(fn: () => void): void }, files: Record<string, string>): string {
  const h = mkdtempSync(join(tmpdir(), 'pl-sshcfg-'));
  t.after(() => rmSync(h, { recursive: true, force: true }));
  for (const [rel, text] of Object.entries(files)) {
    mkdirSync(join(h, rel, '..'), { recursive: true });
    writeFileSync(join(h, rel), text);
  }
  return h;
}

test('ssh config: first obtained value wins, Host patterns with negation, defaults', (t) => {
  const h = home(t, {
    '.ssh/config': [
      'Host db? !db9',
      '  HostName %h.internal.example',
      '  Port 2201',
      '  User dbadmin',
      'Host db*',
      '  Port 9999',
      '  User nobody',
      '  ServerAliveInterval 7',
      'Host *',
      '  ServerAliveCountMax 5',
      '  ConnectTimeout 4',
      '',
    ].join('\n'),
  });
  const r = resolveHost('db1', { home: h, localUser: 'me' });
  assert.equal(r.hostName, 'db1.internal.example');
  assert.equal(r.port, 2201, 'the first Port obtained wins');
  assert.equal(r.user, 'dbadmin');
  assert.equal(r.serverAliveInterval, 7);
  assert.equal(r.serverAliveCountMax, 5);
  assert.equal(r.connectTimeout, 4);
  assert.deepEqual(r.userKnownHostsFiles, [join(h, '.ssh/known_hosts'), join(h, '.ssh/known_hosts2')]);
  assert.equal(r.strictHostKeyChecking, 'ask');

  const neg = resolveHost('db9', { home: h, localUser: 'me' });
  assert.equal(neg.hostName, 'db9', 'the negated pattern kept the first block out');
  assert.equal(neg.port, 9999);

  const cli = resolveHost('db1', { home: h, localUser: 'me', user: 'alice', port: 22 });
  assert.equal(cli.user, 'alice', 'command-line user beats the config');
  assert.equal(cli.port, 22);

  const other = resolveHost('web', { home: h, localUser: 'me' });
  assert.equal(other.user, 'me');
  assert.equal(other.port, 22);
  assert.equal(other.serverAliveInterval, 0);
  assert.equal(other.identityFilesExplicit, false);
  assert.ok(other.identityFiles.includes(join(h, '.ssh/id_ed25519')));
});

test('ssh config: Include relative to ~/.ssh with globs, conditional inside a Host block', (t) => {
  const h = home(t, {
    '.ssh/config': ['Include conf.d/*.conf', 'Host special', '  Include special.inc', 'Host *', '  User fallback', ''].join('\n'),
    '.ssh/conf.d/10-a.conf': 'Host alpha\n  HostName 10.1.1.1\n  Port 2022\n',
    '.ssh/conf.d/20-b.conf': 'Host alpha\n  Port 3033\n  User fromb\n',
    '.ssh/conf.d/ignored.txt': 'Host alpha\n  User wrong\n',
    '.ssh/special.inc': 'User specialuser\nHost *\n  Port 4044\n',
  });
  const a = resolveHost('alpha', { home: h, localUser: 'me' });
  assert.equal(a.hostName, '10.1.1.1');
  assert.equal(a.port, 2022, 'included files are read in sorted order; first value wins');
  assert.equal(a.user, 'fromb');
  const s = resolveHost('special', { home: h, localUser: 'me' });
  assert.equal(s.user, 'specialuser');
  assert.equal(s.port, 4044);
  const o = resolveHost('other', { home: h, localUser: 'me' });
  assert.equal(o.user, 'fallback', 'an Include inside a non-matching Host block contributes nothing');
  assert.equal(o.port, 22);
});

test('ssh config: IdentityFile accumulates with ~ and %h/%u/%p/%r tokens; known_hosts and IdentitiesOnly', (t) => {
  const h = home(t, {
    '.ssh/config': [
      'Host box',
      '  HostName box.example.org',
      '  User deploy',
      '  Port 2222',
      '  IdentityFile ~/.ssh/id_%h_%r',
      '  IdentityFile /keys/%u-%p-%n-%%',
      '  IdentitiesOnly yes',
      '  UserKnownHostsFile ~/.ssh/kh_%h /etc/kh',
      '  StrictHostKeyChecking accept-new',
      '  HashKnownHosts yes',
      '',
    ].join('\n'),
  });
  const r = resolveHost('box', { home: h, localUser: 'me', identityFiles: ['~/cli_key'] });
  assert.deepEqual(r.identityFiles, [join(h, 'cli_key'), join(h, '.ssh/id_box.example.org_deploy'), '/keys/me-2222-box-%']);
  assert.equal(r.identitiesOnly, true);
  assert.deepEqual(r.userKnownHostsFiles, [join(h, '.ssh/kh_box.example.org'), '/etc/kh']);
  assert.equal(r.strictHostKeyChecking, 'accept-new');
  assert.equal(r.hashKnownHosts, true);
});

test('ssh config: Match host/user/all apply; Match exec is never run (canary stays absent) and is reported', (t) => {
  const h = home(t, {});
  const canary = join(h, 'CANARY');
  writeFileSync(
    join(h, 'config'),
    [
      `Match exec "touch ${canary}"`,
      '  User fromexec',
      `Match !exec "touch ${canary}.neg"`,
      '  Port 1111',
      `Match host *.example.com exec "touch ${canary}.2"`,
      '  Port 2222',
      'Host short',
      '  HostName short.example.com',
      'Match host *.example.com user alice',
      '  Port 3333',
      'Match originalhost short',
      '  ConnectTimeout 9',
      'Match all',
      '  ServerAliveInterval 11',
      '',
    ].join('\n'),
  );
  const r = resolveHost('short', { home: h, localUser: 'me', user: 'alice', configFile: join(h, 'config') });
  for (const f of [canary, `${canary}.neg`, `${canary}.2`]) assert.equal(existsSync(f), false, `${f} must not exist: Match exec ran`);
  assert.equal(r.user, 'alice');
  assert.equal(r.port, 3333, 'Match host sees HostName; Match user sees the remote user');
  assert.equal(r.connectTimeout, 9);
  assert.equal(r.serverAliveInterval, 11);
  assert.equal(r.notes.filter((n) => /Match exec/.test(n) && /not run/.test(n)).length, 3);
  const bob = resolveHost('short', { home: h, localUser: 'me', user: 'bob', configFile: join(h, 'config') });
  assert.equal(bob.port, 22);
});

test("ssh config: ProxyJump chains (user@host:port, a jump host's own ProxyJump, none)", (t) => {
  const h = home(t, {
    '.ssh/config': [
      'Host target',
      '  ProxyJump jumper@bastion2:2200,inner',
      'Host inner',
      '  HostName 10.9.9.9',
      '  User innie',
      'Host bastion2',
      '  ProxyJump outer.example.net',
      'Host direct',
      '  ProxyJump none',
      'Host direct inner',
      '  ProxyJump shouldnotapply',
      'Host loopa',
      '  ProxyJump loopb',
      'Host loopb',
      '  ProxyJump loopa',
      '',
    ].join('\n'),
  });
  const chain = resolveChain({ host: 'target' }, { destination: 'target', home: h, configFile: join(h, '.ssh/config') });
  const me = userInfo().username;
  // Only the first hop's own ProxyJump counts (later hops are reached through the chain, as with `ssh -J`).
  assert.deepEqual(
    chain.map((c) => `${c.user}@${c.hostName}:${c.port}`),
    [`${me}@outer.example.net:22`, 'jumper@bastion2:2200', 'innie@10.9.9.9:22', `${me}@target:22`],
  );
  assert.deepEqual(resolveHost('direct', { home: h }).proxyJump, [], '"none" is a value too: the first one wins');
  assert.throws(() => resolveChain({ host: 'loopa' }, { destination: 'loopa', home: h }), /more than 8 hops/);
});

test("ssh config: the system file is read after the user's (Debian's HashKnownHosts yes); -F style files alone", (t) => {
  const h = home(t, {
    '.ssh/config': 'Host box\n  Port 2022\n',
    'etc/ssh_config': 'Include sys.d/*.conf\nHost *\n  HashKnownHosts yes\n  Port 9\n',
    'etc/sys.d/a.conf': 'Host box\n  HostKeyAlias box-key\n  GlobalKnownHostsFile /etc/kh_%h\n',
  });
  // Relative Includes in the system file are relative to /etc/ssh; point the test's Include at its own dir.
  const sys = join(h, 'etc/ssh_config');
  writeFileSync(sys, `Include ${join(h, 'etc/sys.d')}/*.conf\nHost *\n  HashKnownHosts yes\n  Port 9\n`);
  const r = resolveHost('box', { home: h, systemConfigFile: sys });
  assert.equal(r.port, 2022, 'the user file comes first');
  assert.equal(r.hashKnownHosts, true);
  assert.equal(r.hostKeyAlias, 'box-key');
  assert.deepEqual(r.globalKnownHostsFiles, ['/etc/kh_box']);
  const only = resolveHost('box', { home: h, configFile: join(h, '.ssh/config'), systemConfigFile: sys });
  assert.equal(only.hashKnownHosts, false, 'an explicit config file is read alone, like ssh -F');
  assert.deepEqual(only.globalKnownHostsFiles, ['/etc/ssh/ssh_known_hosts', '/etc/ssh/ssh_known_hosts2']);
  assert.throws(() => resolveHost('box', { home: h, configFile: join(h, 'missing') }), /cannot be read/);
});

test('ssh config: globs in directory components of Include, ${VAR} in IdentityFile', (t) => {
  const h = home(t, {
    '.ssh/config': 'Include teams/*/hosts.conf\n',
    '.ssh/teams/a/hosts.conf': 'Host one\n  Port 1001\n  IdentityFile ${PL_TEST_KEYDIR}/k_%h\n',
    '.ssh/teams/b/hosts.conf': 'Host one two\n  Port 2002\n',
    '.ssh/teams/.hidden/hosts.conf': 'Host two\n  Port 6666\n',
  });
  process.env.PL_TEST_KEYDIR = '/keys';
  t.after(() => delete process.env.PL_TEST_KEYDIR);
  const one = resolveHost('one', { home: h, systemConfigFile: join(h, 'none') });
  assert.equal(one.port, 1001);
  assert.deepEqual(one.identityFiles, ['/keys/k_one']);
  assert.equal(resolveHost('two', { home: h, systemConfigFile: join(h, 'none') }).port, 2002, 'dot-directories are not matched by *');
  delete process.env.PL_TEST_KEYDIR;
  assert.throws(() => resolveHost('one', { home: h, systemConfigFile: join(h, 'none') }), /PL_TEST_KEYDIR .*not set/);
});

test('ssh config: Match final applies only to what the first pass left unset; ProxyCommand is refused, not bypassed', (t) => {
  const h = home(t, {
    '.ssh/config': [
      'Match final',
      '  User fromfinal',
      '  Port 2200',
      '  IdentityFile ~/.ssh/k1',
      'Host x',
      '  User fromhost',
      '  IdentityFile ~/.ssh/k1',
      'Host piped',
      '  ProxyCommand nc %h %p',
      'Host piped-none',
      '  ProxyCommand none',
      '',
    ].join('\n'),
  });
  const x = resolveHost('x', { home: h });
  assert.equal(x.user, 'fromhost', 'the first pass set User; the final pass cannot override it');
  assert.equal(x.port, 2200);
  assert.deepEqual(x.identityFiles, [join(h, '.ssh/k1')]);
  assert.throws(() => resolveHost('piped', { home: h }), /ProxyCommand, which ProbeLens does not run.*ProxyJump/);
  assert.equal(resolveHost('piped-none', { home: h }).proxyJump.length, 0);
});

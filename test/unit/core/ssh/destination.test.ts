import { test } from 'node:test';
import assert from 'node:assert/strict';
import { DestinationError, formatDestination, parseDestination, parseProxyJump } from '../../../../src/core/ssh/destination';
import { sshOptionsFromCli } from '../../../../src/core/ssh/cliOptions';

test('--host [USER@]HOST[:PORT] parses names, IPv4 and bracketed IPv6', () => {
  assert.deepEqual(parseDestination('db1'), { host: 'db1' });
  assert.deepEqual(parseDestination('alice@db1.example.com:2222'), { user: 'alice', host: 'db1.example.com', port: 2222 });
  assert.deepEqual(parseDestination('root@127.0.0.1'), { user: 'root', host: '127.0.0.1' });
  assert.deepEqual(parseDestination('[::1]:2200'), { host: '::1', port: 2200 });
  assert.deepEqual(parseDestination('bob@[fe80::1]'), { user: 'bob', host: 'fe80::1' });
  assert.deepEqual(parseDestination('::1'), { host: '::1' });
  assert.deepEqual(parseDestination('my_alias'), { host: 'my_alias' });
  assert.equal(formatDestination(parseDestination('[::1]:2200')), '[::1]:2200');
  assert.equal(formatDestination(parseDestination('a@h:1')), 'a@h:1');
});

test('--host refuses shell metacharacters, quotes, spaces, newlines and bad ports', () => {
  const bad = [
    '',
    'host;touch /tmp/x',
    'a@host$(id)',
    "o'brien@host",
    'host name',
    'host\nother',
    '-oProxyCommand=touch',
    'user@@host',
    'host:0',
    'host:65536',
    'host:22x',
    'host:',
    '[::1',
    '[notipv6]:22',
    '[::1]x',
    'u;x@host',
    '`id`',
    'host|cat',
  ];
  for (const b of bad) assert.throws(() => parseDestination(b), DestinationError, JSON.stringify(b));
  assert.throws(() => parseDestination('h:99999'), /outside 1-65535|not a number/);
  assert.throws(() => parseDestination('bad host'), /expected \[USER@\]HOST\[:PORT\]/);
});

test('ProxyJump lists: commas, ssh:// URIs and none', () => {
  assert.deepEqual(parseProxyJump('a@j1:2222,j2'), [{ user: 'a', host: 'j1', port: 2222 }, { host: 'j2' }]);
  assert.deepEqual(parseProxyJump('ssh://u@[::1]:22'), [{ user: 'u', host: '::1', port: 22 }]);
  assert.deepEqual(parseProxyJump('none'), []);
  assert.throws(() => parseProxyJump('j1,$(touch x)'), DestinationError);
});

test('CLI flags: --host is checked up front; unknown hosts are refused unless --accept-new', async () => {
  assert.throws(() => sshOptionsFromCli({ host: 'h;reboot' }), DestinationError);
  const info = { hostName: 'h', keyType: 'ssh-ed25519', fingerprint: 'SHA256:x', knownHostsFile: 'f' };
  const strict = sshOptionsFromCli({ host: 'alice@h:2222', identity: ['/k'], knownHosts: '/kh' });
  assert.equal(strict.destination, 'alice@h:2222');
  assert.deepEqual(strict.identityFiles, ['/k']);
  assert.equal(strict.knownHostsFile, '/kh');
  assert.equal(await strict.onUnknownHost?.(info), 'reject');
  assert.equal(await sshOptionsFromCli({ host: 'h', acceptNew: true }).onUnknownHost?.(info), 'accept-and-record');
});

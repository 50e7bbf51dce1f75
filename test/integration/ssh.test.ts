// The SSH target against real OpenSSH servers: host key policy on every hop, ProxyJump, the auth methods,
// keepalive and the typed connection errors.
import { test, type TestContext } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync, spawn, spawnSync } from 'node:child_process';
import { copyFileSync, existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Server } from 'ssh2';
import { SshTarget } from '../../src/core/target/ssh';
import type { SshConnectOptions } from '../../src/core/ssh/connect';
import { HostKeyChangedError, HostKeyRevokedError, HostKeyUnknownError, SshAuthError, SshConnectError } from '../../src/core/ssh/errors';
import { fingerprintSha256 } from '../../src/core/ssh/knownHosts';
import type { UnknownHostInfo } from '../../src/core/ssh/hostKeyPolicy';
import { freePort, generateKeyPair, requireSshd, type Sshd } from '../helpers/sshd';
import { missing } from '../helpers/require';
import { requireTracefs } from '../helpers/tracefs';
import { sudoUser } from '../helpers/sudo';
import { TracefsAgent } from '../../src/core/tracefs/agentClient';
import { plainData } from '../helpers/plain';

function scratch(t: TestContext): string {
  const d = mkdtempSync(join(tmpdir(), 'pl-ssh-it-'));
  t.after(() => rmSync(d, { recursive: true, force: true }));
  return d;
}

/** Options that use only this sshd's files: no ~/.ssh, no agent, no default keys. */
function opts(sshd: Sshd, home: string, extra: Partial<SshConnectOptions> = {}): SshConnectOptions {
  return {
    destination: `root@${sshd.host}:${sshd.port}`,
    identityFiles: [sshd.identityFile],
    knownHostsFile: sshd.knownHostsFile,
    configFile: null,
    agentSocket: null,
    home,
    connectTimeoutMs: 10_000,
    ...extra,
  };
}

const neverAsked = (info: UnknownHostInfo): never => {
  throw new Error(`the unknown-host callback must not be consulted (asked about ${info.hostName})`);
};

async function run(target: SshTarget, argv: string[], sudo = false): Promise<{ out: string; err: string; code: number | null }> {
  const ch = await target.exec(argv, { sudo });
  ch.stdin.end();
  let out = '';
  let err = '';
  ch.stdout.on('data', (d: Buffer) => (out += d.toString()));
  ch.stderr.on('data', (d: Buffer) => (err += d.toString()));
  const { code } = await ch.exit;
  return { out, err, code };
}

function hostPubFingerprint(sshd: Sshd): string {
  return fingerprintSha256(Buffer.from(sshd.hostKey.split(' ')[1], 'base64'));
}

test('connects with a known host key and runs a fixed program (uname), also through sudo -n', async (t) => {
  const sshd = await requireSshd(t);
  if (!sshd) return;
  const target = await SshTarget.connect(opts(sshd, scratch(t), { onUnknownHost: neverAsked }));
  t.after(() => target.close());
  assert.equal(target.host, `root@127.0.0.1:${sshd.port}`);
  assert.match(target.describe(), new RegExp(`root@127\\.0\\.0\\.1:${sshd.port}`));
  const r = await run(target, ['uname', '-s']);
  assert.deepEqual(r, { out: 'Linux\n', err: '', code: 0 });
  // Arguments arrive verbatim however odd they look: the remote shell sees them quoted.
  const echo = await run(target, ['printf', '%s|', "it's", '$(touch /tmp/never)', 'a b']);
  assert.equal(echo.out, "it's|$(touch /tmp/never)|a b|");
  if (spawnSync('sh', ['-c', 'command -v sudo'], { stdio: 'ignore' }).status === 0) {
    const s = await run(target, ['id', '-u'], true);
    assert.deepEqual(plainData(s), { out: '0\n', err: '', code: 0 });
  }
  const fail = await run(target, ['sh', '-c', 'exit 3']);
  assert.equal(fail.code, 3);
});

test('a non-root login runs the fixed program through sudo -n when asked (also via the stdin bootstrap)', async (t) => {
  const sshd = await requireSshd(t);
  if (!sshd) return;
  const user = sudoUser(t, sshd);
  if (!user) return;
  const target = await SshTarget.connect(opts(sshd, scratch(t), { destination: `${user}@127.0.0.1:${sshd.port}` }));
  t.after(() => target.close());
  assert.notEqual((await run(target, ['id', '-u'])).out, '0\n');
  assert.equal((await run(target, ['id', '-u'], true)).out, '0\n');
  assert.equal((await run(target, ['sh', '-c', 'id -u; echo "$1"', 'x', "it's root"], true)).out, "0\nit's root\n");
});

test('IPv6: --host root@[::1]:PORT connects and is looked up as [::1]:PORT in known_hosts', async (t) => {
  const sshd = await requireSshd(t, { listenAddress: '::1' });
  if (!sshd) return;
  assert.equal(sshd.knownHostsLine.split(' ')[0], `[::1]:${sshd.port}`);
  const target = await SshTarget.connect(opts(sshd, scratch(t), { destination: `root@[::1]:${sshd.port}`, onUnknownHost: neverAsked }));
  assert.equal((await run(target, ['sh', '-c', 'echo "$SSH_CONNECTION"'])).out.split(' ')[2], '::1');
  await target.close();
});

test('unknown host key: refused by default with its fingerprint; nothing recorded', async (t) => {
  const sshd = await requireSshd(t);
  if (!sshd) return;
  const dir = scratch(t);
  const kh = join(dir, 'known_hosts');
  writeFileSync(kh, '');
  const err = await SshTarget.connect(opts(sshd, dir, { knownHostsFile: kh })).then(
    () => assert.fail('connected to an unknown host'),
    (e: unknown) => e,
  );
  assert.ok(err instanceof HostKeyUnknownError, String(err));
  assert.equal(err.fingerprint, hostPubFingerprint(sshd));
  assert.equal(execFileSync('ssh-keygen', ['-lf', `${sshd.hostKeyFile}.pub`], { encoding: 'utf8' }).split(' ')[1], err.fingerprint);
  assert.match(err.message, /can't be established[\s\S]*--accept-new/);
  assert.equal(readFileSync(kh, 'utf8'), '');

  // A callback that says no is the same refusal.
  let asked: UnknownHostInfo | undefined;
  await assert.rejects(
    SshTarget.connect(opts(sshd, dir, { knownHostsFile: kh, onUnknownHost: (i) => ((asked = i), 'reject') })),
    HostKeyUnknownError,
  );
  assert.equal(asked?.hostName, `[127.0.0.1]:${sshd.port}`);
  assert.equal(asked?.fingerprint, hostPubFingerprint(sshd));

  // A plain entry without the port does not vouch for [host]:port.
  writeFileSync(kh, `127.0.0.1 ${sshd.hostKey}\n`);
  await assert.rejects(SshTarget.connect(opts(sshd, dir, { knownHostsFile: kh })), HostKeyUnknownError);
});

test('accept-new records the key (hashed with HashKnownHosts) and the next connection needs no callback', async (t) => {
  const sshd = await requireSshd(t);
  if (!sshd) return;
  const dir = scratch(t);
  for (const hash of [false, true]) {
    const kh = join(dir, `known_hosts_${hash}`);
    const cfg = join(dir, `config_${hash}`);
    writeFileSync(cfg, `Host *\n  HashKnownHosts ${hash ? 'yes' : 'no'}\n`);
    const first = await SshTarget.connect(
      opts(sshd, dir, { knownHostsFile: kh, configFile: cfg, onUnknownHost: () => 'accept-and-record' }),
    );
    assert.equal((await run(first, ['true'])).code, 0);
    await first.close();
    const text = readFileSync(kh, 'utf8');
    assert.equal(text.trim().split('\n').length, 1);
    if (hash) assert.match(text, /^\|1\|\S+\|\S+ ssh-ed25519 /);
    else assert.equal(text, `${sshd.knownHostsLine}\n`);
    // OpenSSH reads what we wrote.
    assert.equal(spawnSync('ssh-keygen', ['-F', `[127.0.0.1]:${sshd.port}`, '-f', kh]).status, 0);
    const second = await SshTarget.connect(opts(sshd, dir, { knownHostsFile: kh, configFile: cfg, onUnknownHost: neverAsked }));
    await second.close();
  }
  // accept-once connects but records nothing.
  const once = join(dir, 'known_hosts_once');
  const t1 = await SshTarget.connect(opts(sshd, dir, { knownHostsFile: once, onUnknownHost: () => 'accept-once' }));
  await t1.close();
  assert.equal(existsSync(once), false);
});

test('changed host key: refused always, with the OpenSSH-style warning and FILE:LINE', async (t) => {
  const sshd = await requireSshd(t);
  if (!sshd) return;
  const dir = scratch(t);
  const other = generateKeyPair(dir, 'ed25519', 'impostor');
  const rsa = generateKeyPair(dir, 'rsa', 'impostor_rsa');
  const kh = join(dir, 'known_hosts');
  const cfg = join(dir, 'config');
  // Even a config that says "don't check" cannot override a changed key.
  writeFileSync(cfg, 'Host *\n  StrictHostKeyChecking no\n');
  for (const pub of [other.publicKey, rsa.publicKey]) {
    writeFileSync(kh, `# first line\n[127.0.0.1]:${sshd.port} ${pub.split(' ').slice(0, 2).join(' ')}\n`);
    const err = await SshTarget.connect(
      opts(sshd, dir, { knownHostsFile: kh, configFile: cfg, onUnknownHost: () => 'accept-and-record' }),
    ).then(
      () => assert.fail('connected despite a changed host key'),
      (e: unknown) => e,
    );
    assert.ok(err instanceof HostKeyChangedError, String(err));
    assert.match(err.message, /WARNING: REMOTE HOST IDENTIFICATION HAS CHANGED!/);
    assert.match(err.message, new RegExp(`Offending (ED25519|RSA) key in ${kh.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}:2`));
    assert.match(err.message, /Host key verification failed\.$/);
    assert.ok(err.message.includes(hostPubFingerprint(sshd)));
    assert.equal(readFileSync(kh, 'utf8').split('\n').length, 3, 'known_hosts untouched');
  }
});

test('a server with several host keys shows the type known_hosts has (as OpenSSH orders HostKeyAlgorithms)', async (t) => {
  const dir = scratch(t);
  const rsaHostKey = generateKeyPair(dir, 'rsa', 'second_host_key');
  const sshd = await requireSshd(t, { extraConfig: [`HostKey ${rsaHostKey.privateKeyFile}`] });
  if (!sshd) return;
  const kh = join(dir, 'known_hosts');
  // Only the RSA key is known; the server's ed25519 key would otherwise be preferred and look like a change.
  writeFileSync(kh, `[127.0.0.1]:${sshd.port} ${rsaHostKey.publicKey.split(' ').slice(0, 2).join(' ')}\n`);
  const target = await SshTarget.connect(opts(sshd, dir, { knownHostsFile: kh, onUnknownHost: neverAsked }));
  await target.close();
});

test('@revoked host key: refused always, even next to a matching line and with accept callbacks', async (t) => {
  const sshd = await requireSshd(t);
  if (!sshd) return;
  const dir = scratch(t);
  const kh = join(dir, 'known_hosts');
  writeFileSync(kh, `${sshd.knownHostsLine}\n@revoked [127.0.0.1]:${sshd.port} ${sshd.hostKey}\n`);
  const err = await SshTarget.connect(opts(sshd, dir, { knownHostsFile: kh, onUnknownHost: () => 'accept-and-record' })).then(
    () => assert.fail('connected with a revoked key'),
    (e: unknown) => e,
  );
  assert.ok(err instanceof HostKeyRevokedError, String(err));
  assert.match(err.message, /REVOKED HOST KEY DETECTED[\s\S]*marked as revoked[\s\S]*Host key verification failed\./);
});

test('known_hosts hashed by ssh-keygen -H matches [host]:port without asking', async (t) => {
  const sshd = await requireSshd(t);
  if (!sshd) return;
  const dir = scratch(t);
  const kh = join(dir, 'known_hosts');
  copyFileSync(sshd.knownHostsFile, kh);
  execFileSync('ssh-keygen', ['-H', '-f', kh], { stdio: 'ignore' });
  assert.doesNotMatch(readFileSync(kh, 'utf8'), /127\.0\.0\.1/);
  const target = await SshTarget.connect(opts(sshd, dir, { knownHostsFile: kh, onUnknownHost: neverAsked }));
  assert.equal((await run(target, ['true'])).code, 0);
  await target.close();

  // HostKeyAlias: the alias is looked up (as written, no port), hashed too.
  const cfg = join(dir, 'config');
  writeFileSync(cfg, `Host aliased\n  HostName 127.0.0.1\n  Port ${sshd.port}\n  User root\n  HostKeyAlias prod-db\n`);
  writeFileSync(kh, `prod-db ${sshd.hostKey}\n`);
  execFileSync('ssh-keygen', ['-H', '-f', kh], { stdio: 'ignore' });
  const aliased = await SshTarget.connect(
    opts(sshd, dir, { destination: 'aliased', knownHostsFile: kh, configFile: cfg, onUnknownHost: neverAsked }),
  );
  await aliased.close();
});

test('ProxyJump through a second sshd verifies both host keys; a wrong jump host key fails', async (t) => {
  const jump = await requireSshd(t);
  if (!jump) return;
  const target = await requireSshd(t, { authorizedKeys: [jump.publicKey] });
  if (!target) return;
  const dir = scratch(t);
  const kh = join(dir, 'known_hosts');
  const cfg = join(dir, 'config');
  // The jump host is resolved through the config too: the `Host *` IdentityFile applies to both hops.
  writeFileSync(
    cfg,
    `Host tgt\n  HostName 127.0.0.1\n  Port ${target.port}\n  User root\n  ProxyJump root@127.0.0.1:${jump.port}\nHost *\n  IdentityFile ${jump.identityFile}\n`,
  );
  writeFileSync(kh, `${jump.knownHostsLine}\n${target.knownHostsLine}\n`);
  const base = { destination: 'tgt', knownHostsFile: kh, configFile: cfg, agentSocket: null, home: dir, connectTimeoutMs: 10_000 } as const;
  const conn = await SshTarget.connect({ ...base, onUnknownHost: neverAsked });
  assert.match(conn.describe(), new RegExp(`root@127\\.0\\.0\\.1:${target.port} via root@127\\.0\\.0\\.1:${jump.port}`));
  // The program ran on the far server: its log shows our login, and its forwarding went through the jump.
  const r = await run(conn, ['sh', '-c', 'echo "$SSH_CONNECTION"']);
  assert.match(r.out, new RegExp(` ${target.port}\\n$`));
  await conn.close();
  await jump.waitForLog(/Accepted publickey for root/);
  await target.waitForLog(/Accepted publickey for root/);

  const wrong = generateKeyPair(dir, 'ed25519', 'wrong_jump');
  writeFileSync(kh, `[127.0.0.1]:${jump.port} ${wrong.publicKey.split(' ').slice(0, 2).join(' ')}\n${target.knownHostsLine}\n`);
  const err = await SshTarget.connect({ ...base, onUnknownHost: () => 'accept-and-record' }).then(
    () => assert.fail('connected through a jump host with the wrong key'),
    (e: unknown) => e,
  );
  assert.ok(err instanceof HostKeyChangedError, String(err));
  assert.equal(err.hostName, `[127.0.0.1]:${jump.port}`);

  // The far host's key is checked too, not just the first hop's.
  writeFileSync(kh, `${jump.knownHostsLine}\n`);
  const far = await SshTarget.connect(base).then(
    () => assert.fail('connected to an unknown far host'),
    (e: unknown) => e,
  );
  assert.ok(far instanceof HostKeyUnknownError, String(far));
  assert.equal(far.hostName, `[127.0.0.1]:${target.port}`);
});

test('encrypted identity file: the passphrase callback unlocks it (a wrong answer is asked again)', async (t) => {
  const sshd = await requireSshd(t);
  if (!sshd) return;
  const dir = scratch(t);
  const enc = generateKeyPair(dir, 'ed25519', 'enc_key', 'correct horse');
  sshd.authorize('root', enc.publicKey);
  const answers = ['wrong', 'correct horse'];
  const asked: string[] = [];
  const target = await SshTarget.connect(
    opts(sshd, dir, { identityFiles: [enc.privateKeyFile], passphrase: (file) => (asked.push(file), answers.shift()) }),
  );
  assert.deepEqual(asked, [enc.privateKeyFile, enc.privateKeyFile]);
  await target.close();

  const err = await SshTarget.connect(opts(sshd, dir, { identityFiles: [enc.privateKeyFile] })).then(
    () => assert.fail('logged in with a locked key'),
    (e: unknown) => e,
  );
  assert.ok(err instanceof SshAuthError, String(err));
  assert.match(err.message, /permission denied for root@127\.0\.0\.1/);
  assert.match(err.message, /server accepts publickey/);
  assert.match(err.message, /--identity FILE/);
});

test('login timeout: a server that stalls during login fails in time; slow user prompts do not count', async (t) => {
  const dir = scratch(t);
  // A real SSH server (ssh2's) that completes the key exchange and then never answers authentication.
  const hostKey = generateKeyPair(dir, 'ed25519', 'stall_host');
  const server = new Server({ hostKeys: [readFileSync(hostKey.privateKeyFile)] }, (client) => {
    client.on('authentication', () => undefined);
    client.on('error', () => undefined);
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  t.after(() => server.close());
  const port = (server.address() as { port: number }).port;
  const kh = join(dir, 'known_hosts');
  writeFileSync(kh, `[127.0.0.1]:${port} ${hostKey.publicKey.split(' ').slice(0, 2).join(' ')}\n`);
  const key = generateKeyPair(dir, 'ed25519', 'client');
  const stalled = await SshTarget.connect({
    destination: `root@127.0.0.1:${port}`,
    identityFiles: [key.privateKeyFile],
    knownHostsFile: kh,
    configFile: null,
    agentSocket: null,
    home: dir,
    connectTimeoutMs: 500,
  }).then(
    () => assert.fail('logged in to a server that never answers'),
    (e: unknown) => e,
  );
  assert.ok(stalled instanceof SshConnectError && stalled.failure === 'timeout', String(stalled));
  assert.match(stalled.message, /login did not finish/);

  // Against a real sshd, a passphrase prompt slower than the timeout still ends in a login.
  const sshd = await requireSshd(t);
  if (!sshd) return;
  const enc = generateKeyPair(dir, 'ed25519', 'slow_enc', 'pw');
  sshd.authorize('root', enc.publicKey);
  const slow = await SshTarget.connect(
    opts(sshd, dir, {
      identityFiles: [enc.privateKeyFile],
      connectTimeoutMs: 2000,
      passphrase: () => new Promise((r) => setTimeout(() => r('pw'), 3000)),
    }),
  );
  await slow.close();
});

test('an unauthorised key fails with the methods tried', async (t) => {
  const sshd = await requireSshd(t);
  if (!sshd) return;
  const dir = scratch(t);
  const stranger = generateKeyPair(dir, 'ed25519', 'stranger');
  const err = await SshTarget.connect(opts(sshd, dir, { identityFiles: [stranger.privateKeyFile], password: () => 'nope' })).then(
    () => assert.fail('logged in with an unauthorised key'),
    (e: unknown) => e,
  );
  assert.ok(err instanceof SshAuthError, String(err));
  assert.deepEqual(err.tried, [{ method: 'publickey', detail: stranger.privateKeyFile }]);
  assert.deepEqual(err.serverMethods, ['publickey']);
});

test('ssh-agent: a key held by a real ssh-agent logs in', async (t) => {
  if (spawnSync('sh', ['-c', 'command -v ssh-agent && command -v ssh-add'], { stdio: 'ignore' }).status !== 0)
    return missing(t, 'ssh-agent/ssh-add not installed');
  const sshd = await requireSshd(t);
  if (!sshd) return;
  const dir = scratch(t);
  const sock = join(dir, 'agent.sock');
  const agent = spawn('ssh-agent', ['-D', '-a', sock], { stdio: 'ignore' });
  t.after(() => agent.kill());
  for (let i = 0; i < 100 && !existsSync(sock); i++) await new Promise((r) => setTimeout(r, 50));
  const key = generateKeyPair(dir, 'ed25519', 'agent_key');
  sshd.authorize('root', key.publicKey);
  execFileSync('ssh-add', [key.privateKeyFile], { env: { ...process.env, SSH_AUTH_SOCK: sock }, stdio: 'ignore' });
  rmSync(key.privateKeyFile);
  const target = await SshTarget.connect(opts(sshd, dir, { identityFiles: [], agentSocket: sock }));
  assert.equal((await run(target, ['true'])).code, 0);
  await target.close();
  await sshd.waitForLog(
    new RegExp(
      `Accepted publickey for root .*${fingerprintSha256(Buffer.from(key.publicKey.split(' ')[1], 'base64')).replace(/[+/]/g, '.')}`,
    ),
  );
  await assert.rejects(SshTarget.connect(opts(sshd, dir, { identityFiles: [], agentSocket: null })), SshAuthError);
  // A dead agent socket is skipped and the next method (the identity file) still logs in.
  const notes: string[] = [];
  const viaKey = await SshTarget.connect(opts(sshd, dir, { agentSocket: join(dir, 'dead.sock'), log: (m) => notes.push(m) }));
  await viaKey.close();
  assert.ok(
    notes.some((n) => /trying the next authentication method/.test(n)),
    notes.join('\n'),
  );
});

// Without keepalives the awaited disconnect never comes and the test fails on its timeout.
test('keepalive from ServerAliveInterval/CountMax ends a connection whose server stopped answering', { timeout: 60_000 }, async (t) => {
  const sshd = await requireSshd(t);
  if (!sshd) return;
  const dir = scratch(t);
  const cfg = join(dir, 'config');
  writeFileSync(cfg, 'Host *\n  ServerAliveInterval 1\n  ServerAliveCountMax 2\n');
  const target = await SshTarget.connect(opts(sshd, dir, { configFile: cfg }));
  t.after(() => target.close());
  assert.equal((await run(target, ['true'])).code, 0);
  // Freeze the per-connection sshd processes (not the listener): the TCP link stays up but nothing answers.
  const frozen = descendants(sshd.pid);
  assert.ok(frozen.length > 0);
  for (const p of frozen) process.kill(p, 'SIGSTOP');
  t.after(() =>
    frozen.forEach((p) => {
      try {
        process.kill(p, 'SIGCONT');
      } catch {
        /* gone */
      }
    }),
  );
  const why = await target.disconnected;
  assert.ok(why instanceof SshConnectError && why.failure === 'keepalive', String(why));
});

test('a connection killed under a running program: exit settles, disconnected resolves, new execs are refused', async (t) => {
  const sshd = await requireSshd(t);
  if (!sshd) return;
  const target = await SshTarget.connect(opts(sshd, scratch(t)));
  t.after(() => target.close());
  const ch = await target.exec(['cat']);
  ch.stdin.write('ping\n');
  await new Promise<void>((resolve) => ch.stdout.once('data', () => resolve()));
  for (const p of descendants(sshd.pid)) process.kill(p, 'SIGKILL');
  const exit = await ch.exit;
  assert.equal(exit.code, null);
  ch.stdin.write('after the end\n');
  await target.disconnected;
  await assert.rejects(target.exec(['true']), /could not start the remote program/);
});

test('the fixed tracefs agent (multi-line, quotes, backslashes) starts and stops over SSH', async (t) => {
  const tracefs = requireTracefs(t);
  if (!tracefs) return;
  const sshd = await requireSshd(t);
  if (!sshd) return;
  const target = await SshTarget.connect(opts(sshd, scratch(t)));
  t.after(() => target.close());
  const agent = await TracefsAgent.start(target);
  assert.match(agent.hello.group, /^probelens_\d+_[0-9a-f]+_[0-9a-f]+_[0-9a-f]+$/);
  assert.ok(agent.hello.caps.has('uprobe_events'));
  assert.ok(existsSync(join(tracefs, 'instances', agent.hello.group)), 'the agent made its instance on the target');
  await agent.stop();
  await agent.exit;
  assert.equal(existsSync(join(tracefs, 'instances', agent.hello.group)), false, 'and removed it at stop');
});

function descendants(pid: number): number[] {
  const out: number[] = [];
  const walk = (p: number) => {
    for (const task of safeList(`/proc/${p}/task`)) {
      let kids: string[] = [];
      try {
        kids = readFileSync(`/proc/${p}/task/${task}/children`, 'utf8').split(/\s+/).filter(Boolean);
      } catch {
        /* gone */
      }
      for (const k of kids) {
        out.push(Number(k));
        walk(Number(k));
      }
    }
  };
  walk(pid);
  return out;
}

function safeList(dir: string): string[] {
  try {
    return readdirSync(dir);
  } catch {
    return [];
  }
}

test('typed connection errors: refused, silent port (timeout), unresolvable name', async (t) => {
  const dir = scratch(t);
  const port = await freePort();
  const refused = await SshTarget.connect({ destination: `root@127.0.0.1:${port}`, configFile: null, agentSocket: null, home: dir }).then(
    () => assert.fail('connected to a closed port'),
    (e: unknown) => e,
  );
  assert.ok(refused instanceof SshConnectError && refused.failure === 'refused', String(refused));
  assert.match(refused.message, /is sshd running/);

  const silent = createServer(() => {});
  await new Promise<void>((r) => silent.listen(0, '127.0.0.1', r));
  t.after(() => silent.close());
  const sp = (silent.address() as { port: number }).port;
  const timeout = await SshTarget.connect({
    destination: `root@127.0.0.1:${sp}`,
    configFile: null,
    agentSocket: null,
    home: dir,
    connectTimeoutMs: 300,
  }).then(
    () => assert.fail('connected to a silent port'),
    (e: unknown) => e,
  );
  assert.ok(timeout instanceof SshConnectError && timeout.failure === 'timeout', String(timeout));

  const dns = await SshTarget.connect({ destination: 'root@no-such-host.invalid', configFile: null, agentSocket: null, home: dir }).then(
    () => assert.fail('resolved an .invalid name'),
    (e: unknown) => e,
  );
  assert.ok(dns instanceof SshConnectError && dns.failure === 'dns', String(dns));
});

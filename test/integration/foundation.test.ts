// The integration tier's own footing: real tracefs read through a real sshd, as root and through `sudo -n`, with
// host keys really checked. The uprobe written locally and found remotely proves the remote read is of this
// kernel's live state, not of some file that merely has the right name.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync, spawn, spawnSync } from 'node:child_process';
import { appendFileSync, mkdtempSync, readFileSync, realpathSync, rmSync, writeFileSync } from 'node:fs';
import { createConnection } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { requireTracefs } from '../helpers/tracefs';
import { alive, generateKeyPair, requireSshd } from '../helpers/sshd';
import { sudoUser } from '../helpers/sudo';
import { missing } from '../helpers/require';
import { netnsExists, requireSshdInNetns } from '../helpers/netns';
import { plainData } from '../helpers/plain';

const TIMEOUT = 60_000;

function ssh(args: string[], command: string): { status: number | null; stdout: string; stderr: string } {
  const r = spawnSync('ssh', [...args, '--', command], { encoding: 'utf8', timeout: 30_000 });
  return { status: r.status, stdout: r.stdout, stderr: r.stderr };
}

/** File offset of `path`'s entry point, by the PT_LOAD formula (offset = vaddr − p_vaddr + p_offset). */
function entryFileOffset(path: string): number {
  const header = execFileSync('readelf', ['-hW', path], { encoding: 'utf8' });
  const entry = Number(/Entry point address:\s+(0x[0-9a-f]+)/.exec(header)?.[1]);
  const segments = execFileSync('readelf', ['-lW', path], { encoding: 'utf8' });
  for (const m of segments.matchAll(/^\s*LOAD\s+(0x[0-9a-f]+)\s+(0x[0-9a-f]+)\s+0x[0-9a-f]+\s+0x[0-9a-f]+\s+(0x[0-9a-f]+)/gm)) {
    const [offset, vaddr, memsz] = [Number(m[1]), Number(m[2]), Number(m[3])];
    if (entry >= vaddr && entry < vaddr + memsz) return entry - vaddr + offset;
  }
  throw new Error(`no PT_LOAD segment of ${path} contains its entry point 0x${entry.toString(16)}`);
}

/**
 * Adds a uprobe on /usr/bin/true's entry under a group unique to this process, runs `fn`, and always removes it
 * (by name: truncating uprobe_events would delete every probe on the system).
 */
async function withProbe(
  tracefs: string,
  fn: (p: { group: string; event: string; pattern: RegExp }) => Promise<void> | void,
): Promise<void> {
  const binary = realpathSync('/usr/bin/true');
  const offset = entryFileOffset(binary);
  const group = `probelens_test_${process.pid}`;
  const event = 'true_entry';
  const events = join(tracefs, 'uprobe_events');
  appendFileSync(events, `p:${group}/${event} ${binary}:0x${offset.toString(16)}\n`);
  try {
    // The kernel prints the offset zero-padded: compare numerically.
    const pattern = new RegExp(`^p:${group}/${event} ${binary}:0x0*${offset.toString(16)}$`, 'm');
    assert.match(readFileSync(events, 'utf8'), pattern, 'the probe was not added locally');
    await fn({ group, event, pattern });
  } finally {
    appendFileSync(events, `-:${group}/${event}\n`);
  }
  assert.doesNotMatch(readFileSync(events, 'utf8'), new RegExp(`^p:${group}/`, 'm'), 'the probe was not removed');
}

test('uprobe_events read through the throwaway sshd as root shows a probe added here', { timeout: TIMEOUT }, async (t) => {
  const tracefs = requireTracefs(t);
  if (!tracefs) return;
  const sshd = await requireSshd(t);
  if (!sshd) return;
  await withProbe(tracefs, ({ pattern }) => {
    const r = ssh(sshd.sshArgs(), `id -un; cat ${tracefs}/uprobe_events`);
    assert.equal(r.status, 0, `ssh failed: ${r.stderr}\n--- sshd log ---\n${sshd.log()}`);
    const [who, ...rest] = r.stdout.split('\n');
    assert.equal(who, 'root');
    assert.match(rest.join('\n'), pattern);
  });
});

test('the sudo user reads uprobe_events over ssh with sudo -n, and cannot without it', { timeout: TIMEOUT }, async (t) => {
  const tracefs = requireTracefs(t);
  if (!tracefs) return;
  const sshd = await requireSshd(t);
  if (!sshd) return;
  const user = sudoUser(t, sshd);
  if (!user) return;
  await withProbe(tracefs, ({ pattern }) => {
    const plain = ssh(sshd.sshArgs(user), `id -un; cat ${tracefs}/uprobe_events`);
    assert.equal(plain.stdout.split('\n')[0], user, `logged in as someone else: ${plain.stderr}\n${sshd.log()}`);
    assert.notEqual(plain.status, 0, 'a non-root user could read uprobe_events without sudo: the sudo test would prove nothing');
    const viaSudo = ssh(sshd.sshArgs(user), `sudo -n cat ${tracefs}/uprobe_events`);
    assert.equal(viaSudo.status, 0, `sudo -n failed: ${viaSudo.stderr}`);
    assert.match(viaSudo.stdout, pattern);
  });
});

test('requireTracefs mounts tracefs where it is missing (in a private mount namespace)', { timeout: TIMEOUT }, (t) => {
  const tracefs = requireTracefs(t);
  if (!tracefs) return;
  // Unmounting for real would pull tracefs from under every other test on this machine: do it in a private copy.
  const probe = `const m = require(${JSON.stringify(join(__dirname, '..', 'helpers', 'tracefs.ts'))}); console.log(JSON.stringify(m.locateTracefs()));`;
  const script = `umount ${tracefs} && ! test -e ${tracefs}/uprobe_events && echo unmounted && "$0" --import tsx -e "$1" && grep -c ' ${tracefs} tracefs ' /proc/self/mounts`;
  const r = spawnSync('unshare', ['--mount', '--propagation', 'private', 'sh', '-c', script, process.execPath, probe], {
    encoding: 'utf8',
    timeout: 30_000,
  });
  if (r.status !== 0 && !r.stdout.includes('unmounted'))
    return missing(t, `no private mount namespace to unmount tracefs in: ${r.stderr.trim()}`);
  assert.equal(r.status, 0, r.stderr);
  assert.deepEqual(plainData(r.stdout.split('\n')), ['unmounted', JSON.stringify({ path: tracefs }), '1', '']);
});

test('ssh with StrictHostKeyChecking=yes accepts the helper known_hosts line and refuses other keys', { timeout: TIMEOUT }, async (t) => {
  const sshd = await requireSshd(t);
  if (!sshd) return;
  const dir = mkdtempSync(join(tmpdir(), 'probelens-kh-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  const withKnownHosts = (content: string): ReturnType<typeof ssh> => {
    const file = join(dir, 'known_hosts');
    writeFileSync(file, content);
    const args = sshd.sshArgs().map((a) => (a.startsWith('UserKnownHostsFile=') ? `UserKnownHostsFile=${file}` : a));
    return ssh(args, 'echo reached');
  };

  const good = withKnownHosts(`${sshd.knownHostsLine}\n`);
  assert.equal(good.status, 0, good.stderr);
  assert.equal(good.stdout, 'reached\n');

  const other = generateKeyPair(join(dir, 'other'), 'ed25519').publicKey.split(' ').slice(0, 2).join(' ');
  const changed = withKnownHosts(`[${sshd.host}]:${sshd.port} ${other}\n`);
  assert.equal(changed.status, 255);
  assert.match(changed.stderr, /REMOTE HOST IDENTIFICATION HAS CHANGED|Host key verification failed/);
  assert.doesNotMatch(changed.stdout, /reached/);

  const unknown = withKnownHosts('');
  assert.equal(unknown.status, 255);
  assert.match(unknown.stderr, /Host key verification failed/);
  assert.doesNotMatch(unknown.stdout, /reached/);
});

test('an ecdsa host key, and ProxyJump-style forwarding through another sshd', { timeout: TIMEOUT }, async (t) => {
  const jump = await requireSshd(t);
  if (!jump) return;
  const target = await requireSshd(t, { hostKeyType: 'ecdsa' });
  if (!target) return;
  assert.match(target.hostKey, /^ecdsa-sha2-nistp256 AAAA/);
  assert.match(target.knownHostsLine, new RegExp(`^\\[127\\.0\\.0\\.1\\]:${target.port} ecdsa-sha2-nistp256 `));
  // The outer ssh verifies the target's key, the inner one (the proxy) the jump host's: both must pass.
  const proxy = ['ssh', ...jump.sshArgs(), '-W', '%h:%p'].join(' ');
  const r = ssh([`-oProxyCommand=${proxy}`, ...target.sshArgs()], 'echo "$SSH_CONNECTION"');
  assert.equal(r.status, 0, `${r.stderr}\n--- jump log ---\n${jump.log()}\n--- target log ---\n${target.log()}`);
  // Through the jump host, the target sees a connection from 127.0.0.1 made by sshd, not by this process.
  assert.match(r.stdout, new RegExp(`^127\\.0\\.0\\.1 \\d+ 127\\.0\\.0\\.1 ${target.port}\\n$`));
  await jump.waitForLog(/Accepted publickey for root/);
});

async function connects(host: string, port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const s = createConnection({ host, port });
    s.setTimeout(2000, () => (s.destroy(), resolve(false)));
    s.on('connect', () => (s.destroy(), resolve(true)));
    s.on('error', () => resolve(false));
  });
}

test('stop() ends sshd and its sessions and removes its files', { timeout: TIMEOUT }, async (t) => {
  const sshd = await requireSshd(t);
  if (!sshd) return;
  // A session that would run for a minute: stop() must neither wait for it nor leave it behind.
  const client = spawn('ssh', [...sshd.sshArgs(), '--', 'echo $$; exec sleep 60'], { stdio: ['ignore', 'pipe', 'pipe'] });
  t.after(() => void client.kill('SIGKILL'));
  const remotePid = await new Promise<number>((resolve, reject) => {
    let out = '';
    client.stdout.on('data', (d: Buffer) => {
      out += d.toString();
      if (out.includes('\n')) resolve(Number(out.split('\n')[0]));
    });
    client.on('exit', (code) => reject(new Error(`ssh exited ${code} before the session started`)));
  });
  assert.ok(alive(remotePid), 'the remote session is not running');
  const clientDone = new Promise<number | null>((resolve) => client.on('exit', (code) => resolve(code)));

  await sshd.stop();
  assert.equal(alive(sshd.pid), false, 'the sshd listener survived stop()');
  assert.equal(await connects(sshd.host, sshd.port), false, 'the port still accepts connections');
  assert.throws(() => readFileSync(sshd.identityFile), /ENOENT/, 'the temp dir survived stop()');
  // The client sees its session end (it would otherwise wait out the remote sleep).
  assert.equal(await clientDone, 255);
  // The remote `sleep` loses its session when sshd's handler dies (SIGHUP); give the kernel a moment.
  for (let i = 0; i < 100 && alive(remotePid); i++) await new Promise((r) => setTimeout(r, 50));
  assert.equal(alive(remotePid), false, `remote session process ${remotePid} outlived stop()`);
});

for (const ending of ['an uncaught exception', 'SIGTERM'] as const) {
  test(`no sshd outlives a test process that ends by ${ending}`, { timeout: TIMEOUT }, async (t) => {
    if (!(await requireSshd(t))) return;
    const helper = JSON.stringify(join(__dirname, '..', 'helpers', 'sshd.ts'));
    // No TestContext here: only the helper's process hooks stand between this sshd and an orphan.
    const script = `require(${helper}).startSshd().then((s) => { console.log(s.pid); ${
      ending === 'SIGTERM' ? 'setInterval(() => {}, 1000);' : "setTimeout(() => { throw new Error('boom'); }, 100);"
    } });`;
    const child = spawn(process.execPath, ['--import', 'tsx', '-e', script], { stdio: ['ignore', 'pipe', 'pipe'] });
    t.after(() => void child.kill('SIGKILL'));
    const pid = await new Promise<number>((resolve, reject) => {
      child.stdout.once('data', (d: Buffer) => resolve(Number(d.toString().trim())));
      child.once('exit', (code) => reject(new Error(`helper process exited ${code} before starting sshd`)));
    });
    assert.ok(alive(pid), 'sshd was not running');
    const exited = new Promise<NodeJS.Signals | number | null>((resolve) => child.once('exit', (code, sig) => resolve(sig ?? code)));
    if (ending === 'SIGTERM') child.kill('SIGTERM');
    // The process still dies the way it would have without the hooks.
    assert.equal(await exited, ending === 'SIGTERM' ? 'SIGTERM' : 1);
    for (let i = 0; i < 100 && alive(pid); i++) await new Promise((r) => setTimeout(r, 50));
    assert.equal(alive(pid), false, `sshd ${pid} outlived its test process`);
  });
}

let nsName: string | undefined;
test('an sshd behind a namespace link is reachable until the link is cut, and back after restore', { timeout: TIMEOUT }, async (t) => {
  const r = await requireSshdInNetns(t);
  if (!r) return;
  const { sshd, netns } = r;
  nsName = netns.name;
  assert.equal(sshd.host, netns.nsAddress);
  const ok = ssh(sshd.sshArgs(), 'cat /proc/net/dev');
  assert.equal(ok.status, 0, `${ok.stderr}\n${sshd.log()}`);
  // Inside the namespace only its own interfaces exist: proves the server runs there, not on this host.
  assert.doesNotMatch(ok.stdout, /\beth0:/);
  assert.match(ok.stdout, /\bpln\d+:/);

  netns.cut();
  const cut = ssh(['-o', 'ConnectTimeout=2', ...sshd.sshArgs()], 'echo reached');
  assert.equal(cut.status, 255);
  assert.doesNotMatch(cut.stdout, /reached/);

  netns.restore();
  let back = ssh(sshd.sshArgs(), 'echo reached');
  // The host side needs a moment to come back up (carrier, neighbour discovery): retry a few times.
  for (let i = 0; i < 10 && back.status !== 0; i++) {
    await new Promise((res) => setTimeout(res, 300));
    back = ssh(sshd.sshArgs(), 'echo reached');
  }
  assert.equal(back.stdout, 'reached\n', back.stderr);
});

test('the namespace is gone after its test', (t) => {
  if (!nsName) return missing(t, 'the namespace test did not run');
  assert.equal(netnsExists(nsName!), false);
});

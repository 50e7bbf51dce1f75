// Password logins against a real throwaway sshd: the prompt is asked again (attempt 2, 3) after a rejection, and a
// remembered password the server rejects is forgotten.
import { test, type TestContext } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { SshTarget } from '../../src/core/target/ssh';
import type { SshConnectOptions } from '../../src/core/ssh/connect';
import { SshAuthError } from '../../src/core/ssh/errors';
import { rememberedSecret, type SecretStore } from '../../src/core/ssh/rememberedSecret';
import { requireSshd, type Sshd } from '../helpers/sshd';

// A Match block may switch on what the helper's first-value-wins lines switched off.
const PASSWORD_LOGINS = ['Match Address 127.0.0.1', '  PasswordAuthentication yes', '  PermitRootLogin yes'];

function scratch(t: TestContext): string {
  const d = mkdtempSync(join(tmpdir(), 'pl-ssh-pw-'));
  t.after(() => rmSync(d, { recursive: true, force: true }));
  return d;
}

/** Only this sshd's files, and no key that could log in: the password is the only way. */
function opts(sshd: Sshd, home: string, extra: Partial<SshConnectOptions>): SshConnectOptions {
  return {
    destination: `root@${sshd.host}:${sshd.port}`,
    identityFiles: [join(home, 'no-such-key')],
    knownHostsFile: sshd.knownHostsFile,
    configFile: null,
    agentSocket: null,
    home,
    connectTimeoutMs: 10_000,
    ...extra,
  };
}

class MapStore implements SecretStore {
  readonly map = new Map<string, string>();
  async get(key: string) {
    return this.map.get(key);
  }
  async store(key: string, value: string) {
    this.map.set(key, value);
  }
  async delete(key: string) {
    this.map.delete(key);
  }
}

test('a wrong password is asked again with attempts 1, 2 and 3 (OpenSSH gives three prompts), each one reported', async (t) => {
  const sshd = await requireSshd(t, { extraConfig: PASSWORD_LOGINS });
  if (!sshd) return;
  const asked: string[] = [];
  const err = await SshTarget.connect(
    opts(sshd, scratch(t), { password: (user, host, attempt) => (asked.push(`${user}@${host} #${attempt}`), 'definitely-wrong') }),
  ).then(
    () => assert.fail('logged in with a wrong password'),
    (e: unknown) => e,
  );
  assert.ok(err instanceof SshAuthError, String(err));
  assert.deepEqual(asked, ['root@127.0.0.1 #1', 'root@127.0.0.1 #2', 'root@127.0.0.1 #3']);
  assert.deepEqual(err.tried, [{ method: 'password' }, { method: 'password' }, { method: 'password' }]);
  assert.ok(err.serverMethods.includes('password'), err.serverMethods.join(','));
  const log = await sshd.waitForLog(/(Failed password for root[^]*){3}/);
  assert.equal(log.match(/Failed password for root/g)?.length, 3);
});

test('a remembered password the server rejects is forgotten: the user is asked, the new one logs in and is remembered', async (t) => {
  const sshd = await requireSshd(t, { extraConfig: PASSWORD_LOGINS, passwords: { root: 'the-right-one' } });
  if (!sshd) return;
  const home = scratch(t);
  const store = new MapStore();
  const key = `password:root@${sshd.host}`;
  store.map.set(key, 'remembered-but-changed');
  const prompts: boolean[] = [];
  const password = (_user: string, _host: string, attempt: number) =>
    rememberedSecret(store, key, attempt, async (retry) => {
      prompts.push(retry);
      // After a rejection the store no longer offers the stale password.
      assert.equal(store.map.get(key), undefined);
      return { value: 'the-right-one', remember: true };
    });

  const target = await SshTarget.connect(opts(sshd, home, { password }));
  await target.close();
  assert.deepEqual(prompts, [true], 'asked once, as a retry after the remembered password failed');
  assert.equal(store.map.get(key), 'the-right-one');
  await sshd.waitForLog(/Failed password for root[^]*Accepted password for root/);

  // The next connection uses the remembered password without asking.
  const again = await SshTarget.connect(opts(sshd, home, { password }));
  await again.close();
  assert.deepEqual(prompts, [true]);
});

// The agent through LocalTarget as a real client process would use it: the client killed with -9, sudo -n,
// and a user without root.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import { join } from 'node:path';
import { requireTracefs } from '../helpers/tracefs';
import { missing } from '../helpers/require';
import { TracefsAgent } from '../../src/core/tracefs/agentClient';
import { LocalTarget } from '../../src/core/target/local';
import type { ExecChannel, ExecOptions, Target } from '../../src/core/target/target';
import { leftovers, waitClean } from './agentHarness';

test('kill -9 of the client process: the agent sees stdin EOF and leaves nothing behind within 10 s', async (t) => {
  if (!requireTracefs(t)) return;
  const child = spawn(process.execPath, ['--import', 'tsx', join(__dirname, 'agentClientProcess.ts')], {
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  const group = await new Promise<string>((resolve, reject) => {
    let out = '';
    child.stdout.on('data', (c: Buffer) => {
      out += c.toString();
      if (out.includes('\n')) resolve(out.trim());
    });
    child.once('exit', (code) => reject(new Error(`client exited early (${code})`)));
  });
  assert.ok(leftovers(group).length >= 3, 'armed before the kill');
  child.kill('SIGKILL');
  assert.deepEqual(await waitClean(group), []);
});

test('LocalTarget with sudo -n runs the agent (as root here, sudo passes straight through)', async (t) => {
  if (!requireTracefs(t)) return;
  if (spawnSync('sudo', ['-n', 'true']).status !== 0) return missing(t, 'sudo -n does not work here');
  const target = new LocalTarget({ sudo: true });
  assert.match(target.describe(), /^local/);
  const agent = await TracefsAgent.start(target, {});
  assert.equal(agent.hello.uid, 0);
  await agent.stop();
  await agent.exit;
  assert.deepEqual(leftovers(agent.group), []);
});

/** Runs the agent as an unprivileged user (setpriv), as a non-root login would. */
class NobodyTarget implements Target {
  readonly host = 'local';
  private readonly local = new LocalTarget();
  describe(): string {
    return 'local (nobody)';
  }
  exec(argv: readonly string[], opts?: ExecOptions): Promise<ExecChannel> {
    return this.local.exec(['setpriv', '--reuid=65534', '--regid=65534', '--clear-groups', ...argv], opts);
  }
  close(): Promise<void> {
    return this.local.close();
  }
}

test('without root and without sudo the agent says what is missing', async (t) => {
  if (!requireTracefs(t)) return;
  if (process.getuid?.() !== 0) return missing(t, 'switching to an unprivileged user needs root');
  await assert.rejects(TracefsAgent.start(new NobodyTarget(), {}), /needs root or passwordless sudo \(uid 65534/);
});

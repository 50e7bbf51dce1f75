// Cleanup at the CLI: `probelens trace` over SSH with 100 probes armed, ended every way a session can
// end — a normal stop, kill -9 of the client, the network path cut (sshd in a namespace whose link goes down), the
// TCP connection killed — leaves no definitions, instance or reader of its group on the target within 10 s.
// The sshd target and this machine share one kernel, so the target's tracefs is /sys/kernel/tracing here.
import { test, type TestContext } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { requireTracefs } from '../helpers/tracefs';
import { requireSshd, type Sshd } from '../helpers/sshd';
import { requireSshdInNetns } from '../helpers/netns';
import { fixtureOrSkip } from '../helpers/fixtures';
import { missing } from '../helpers/require';
import { waitReader } from './agentHarness';
import {
  definitionsOf,
  isolatedEnv,
  privateCopy,
  sshFlags,
  startCli,
  waitAllClean,
  waitForGroups,
  waitNoGroups,
  type CliRun,
} from './engine-harness';

const TIMEOUT = { timeout: 240_000 };
// Starting the CLI from source and indexing on a loaded two-core machine: generous, bounded.
const ARM_MS = 120_000;
const CLEAN_MS = 10_000;

interface Armed {
  cli: CliRun;
  bin: string;
  group: string;
}

/** Starts `trace many-O2 'many_*'` (100 probes) on `sshd` and waits until they are armed; returns its group. */
async function armHundred(t: TestContext, sshd: Sshd, host?: string, extra: string[] = []): Promise<Armed | undefined> {
  const f = await fixtureOrSkip(t, 'many-O2');
  if (!f) return undefined;
  const bin = privateCopy(t, f.path);
  const cli = startCli(t, ['trace', bin, 'many_* x', ...sshFlags(sshd, host), ...extra], isolatedEnv(t));
  await cli.waitFor(/tracing 1 probe at 100 sites on /, ARM_MS);
  const groups = await waitForGroups(bin, 5_000);
  assert.equal(groups.length, 1, `exactly one session probes ${bin}: ${groups.join(', ')}`);
  const group = groups[0];
  assert.equal(definitionsOf(group).length, 100, 'all 100 definitions are in uprobe_events');
  assert.ok(existsSync(`/sys/kernel/tracing/instances/${group}`), 'the private instance exists');
  assert.ok(await waitReader(group), 'a reader of the stream (cat trace_pipe, or dd of trace_pipe_raw) runs');
  return { cli, bin, group };
}

function summarize(left: string[]): string {
  const defs = left.filter((l) => /^[pr]:/.test(l)).length;
  return [`${defs} definitions`, ...left.filter((l) => !/^[pr]:/.test(l))].join(', ');
}

/** Sessions of this test ran the fixture: arm, see a hit, so the probes were really live. */
async function seeHit(a: Armed): Promise<void> {
  execFileSync(a.bin, ['1'], { stdio: 'ignore' });
  await a.cli.waitFor(/many_042 x=0\b/, 30_000, 'stdout');
}

test('normal stop (SIGINT) with 100 probes armed: hits arrive, the summary prints, nothing is left on the target', TIMEOUT, async (t) => {
  if (!requireTracefs(t)) return;
  const sshd = await requireSshd(t);
  if (!sshd) return;
  const a = await armHundred(t, sshd);
  if (!a) return;
  await seeHit(a);
  a.cli.child.kill('SIGINT');
  const { code } = await a.cli.exit;
  assert.equal(code, 0, a.cli.stderr());
  assert.match(a.cli.stdout(), /^many_042: 1 hit \(kernel counted 1\)$/m);
  // The CLI exits only after STOP: cleanup has already happened by now, the 10 s bound is generous.
  assert.deepEqual(await waitAllClean([a.group], CLEAN_MS), []);
});

test('SIGINT the moment the CLI says "Ctrl-C to stop": a summary, exit 0, nothing left (no race with the handler)', TIMEOUT, async (t) => {
  if (!requireTracefs(t)) return;
  const sshd = await requireSshd(t);
  if (!sshd) return;
  const f = await fixtureOrSkip(t, 'many-O2');
  if (!f) return;
  const bin = privateCopy(t, f.path);
  const cli = startCli(t, ['trace', bin, 'many_* x', ...sshFlags(sshd)], isolatedEnv(t));
  // Signalled from the data callback itself, as a script reacting to the line would.
  let fired = false;
  cli.child.stderr!.on('data', () => {
    if (!fired && /Ctrl-C to stop/.test(cli.stderr())) fired = cli.child.kill('SIGINT');
  });
  const { code, signal } = await cli.exit;
  assert.deepEqual({ code, signal }, { code: 0, signal: null }, cli.stderr());
  assert.deepEqual(await waitNoGroups(bin, 30_000), []);
});

test('--duration ends the session by itself and cleans up', TIMEOUT, async (t) => {
  if (!requireTracefs(t)) return;
  const sshd = await requireSshd(t);
  if (!sshd) return;
  const a = await armHundred(t, sshd, undefined, ['--duration', '3']);
  if (!a) return;
  const exit = await Promise.race([a.cli.exit, new Promise<null>((r) => setTimeout(() => r(null), 60_000))]);
  assert.ok(exit, `the CLI did not end within 60 s after --duration 3\n${a.cli.stderr()}`);
  assert.equal(exit.code, 0, a.cli.stderr());
  assert.deepEqual(await waitAllClean([a.group], CLEAN_MS), []);
});

test('kill -9 of the client with 100 probes armed: the target is clean within 10 s', TIMEOUT, async (t) => {
  if (!requireTracefs(t)) return;
  const sshd = await requireSshd(t);
  if (!sshd) return;
  const a = await armHundred(t, sshd);
  if (!a) return;
  await seeHit(a);
  const killedAt = Date.now();
  a.cli.child.kill('SIGKILL');
  assert.deepEqual(await waitAllClean([a.group], CLEAN_MS), []);
  t.diagnostic(`clean ${((Date.now() - killedAt) / 1000).toFixed(1)} s after kill -9`);
});

test('network path cut (sshd in a namespace, link down) with 100 probes armed: the target is clean within 10 s', TIMEOUT, async (t) => {
  if (!requireTracefs(t)) return;
  const r = await requireSshdInNetns(t);
  if (!r) return;
  const a = await armHundred(t, r.sshd, r.netns.nsAddress);
  if (!a) return;
  await seeHit(a);
  // No FIN, no RST: the agent learns of it only from the client's silence (heartbeat, 5 s by default).
  const cutAt = Date.now();
  r.netns.cut();
  const left = await waitAllClean([a.group], CLEAN_MS);
  t.diagnostic(`after the cut: ${left.length ? 'not clean' : 'clean'} at ${((Date.now() - cutAt) / 1000).toFixed(1)} s`);
  if (left.length) {
    // Say how long it really took, so a failure tells a slow cleanup from none at all.
    const rest = await waitAllClean([a.group], 30_000);
    assert.fail(
      `still there ${CLEAN_MS / 1000} s after the cut: ${summarize(left)}; ` +
        (rest.length ? `and after 40 s: ${summarize(rest)}` : `all gone after ${((Date.now() - cutAt) / 1000).toFixed(1)} s`),
    );
  }
  // The client is still waiting on a dead connection; the test ends it.
  a.cli.child.kill('SIGKILL');
});

test('TCP connection killed (ss -K) with 100 probes armed: the target is clean within 10 s', TIMEOUT, async (t) => {
  if (!requireTracefs(t)) return;
  const sshd = await requireSshd(t);
  if (!sshd) return;
  const a = await armHundred(t, sshd);
  if (!a) return;
  await seeHit(a);
  // Both ends of every TCP connection to this sshd's port (only this test's client talks to it).
  const filter = ['state', 'established', '(', 'dport', '=', `:${sshd.port}`, 'or', 'sport', '=', `:${sshd.port}`, ')'];
  const before = execFileSync('ss', ['-Htn', ...filter], { encoding: 'utf8' }).trim();
  assert.ok(before, 'the client has an established connection');
  try {
    execFileSync('ss', ['-HtnK', ...filter], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] });
  } catch (e) {
    return missing(t, `ss -K cannot kill sockets here (CONFIG_INET_DIAG_DESTROY): ${(e as Error).message}`);
  }
  assert.equal(execFileSync('ss', ['-Htn', ...filter], { encoding: 'utf8' }).trim(), '', 'the connection is gone');
  assert.deepEqual(await waitAllClean([a.group], CLEAN_MS), []);
  const exit = await Promise.race([a.cli.exit, new Promise<null>((r) => setTimeout(() => r(null), 30_000))]);
  assert.ok(exit, 'the client notices its connection died and ends');
  assert.equal(exit.code, 1, 'a host that failed mid-session makes the exit status 1');
});

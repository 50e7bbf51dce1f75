// Fan-out at the CLI: `probelens trace` against three sshd hosts at once, one of them failing, reports
// hits from the two others (tagged by host) and the failure of the one, with exit status 1. All three servers run on
// this machine, so every call of the fixture hits both healthy sessions' probes (each in its own group).
import { test, type TestContext } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { requireTracefs } from '../helpers/tracefs';
import { requireSshd, type Sshd } from '../helpers/sshd';
import { fixtureOrSkip } from '../helpers/fixtures';
import {
  groupsProbing,
  isolatedEnv,
  parseJsonOutput,
  privateCopy,
  scratch,
  sleep,
  startCli,
  waitAllClean,
  waitNoGroups,
  type CliRun,
} from './engine-harness';
import { plainData } from '../helpers/plain';

const TIMEOUT = { timeout: 300_000 };
const host = (s: Sshd) => `root@${s.host}:${s.port}`;

/** Runs the fixture until `cli` printed hits from every host in `hosts` (bounded), then asks it to stop. */
async function driveUntilHitsFrom(cli: CliRun, bin: string, hosts: string[]): Promise<void> {
  const until = Date.now() + 120_000;
  let exited = false;
  void cli.exit.then(() => (exited = true));
  while (!exited && Date.now() < until) {
    const seen = new Set(
      parseJsonOutput(
        cli
          .stdout()
          .split('\n')
          .filter((l) => l.startsWith('{"host"'))
          .join('\n'),
      ).hits.map((h) => h.host),
    );
    if (hosts.every((h) => seen.has(h))) break;
    if (groupsProbing(bin).length >= hosts.length) execFileSync(bin, ['1'], { stdio: 'ignore' });
    await sleep(250);
  }
  cli.child.kill('SIGINT');
}

async function threeHosts(t: TestContext) {
  if (!requireTracefs(t)) return undefined;
  const servers: Sshd[] = [];
  for (let i = 0; i < 3; i++) {
    const s = await requireSshd(t);
    if (!s) return undefined;
    servers.push(s);
  }
  const f = await fixtureOrSkip(t, 'calls-O2');
  if (!f) return undefined;
  return { servers, bin: privateCopy(t, f.path), dir: scratch(t) };
}

test('fan-out: three sshd hosts, one with an unverifiable host key: hits from two, the failure of one, exit 1', TIMEOUT, async (t) => {
  const s = await threeHosts(t);
  if (!s) return;
  const [a, b, bad] = s.servers;
  // The third host's key is not known: it is refused (no --accept-new) while the others go on.
  const kh = join(s.dir, 'known_hosts');
  writeFileSync(kh, `${a.knownHostsLine}\n${b.knownHostsLine}\n`);
  const args = ['trace', s.bin, 'add_ints a b', '--json', '--known-hosts', kh];
  for (const srv of s.servers) args.push('--host', host(srv), '--identity', srv.identityFile);
  const cli = startCli(t, args, isolatedEnv(t));
  await driveUntilHitsFrom(cli, s.bin, [host(a), host(b)]);
  const { code } = await cli.exit;
  assert.equal(code, 1, cli.stderr());
  const { hits, summary } = parseJsonOutput(cli.stdout());
  assert.ok(summary, `a summary line: ${cli.stdout()}`);
  const byHost = new Map<string, number>();
  for (const h of hits) {
    assert.equal(h.probe, 'add_ints');
    assert.deepEqual(plainData(h.args), { a: 3, b: -7 });
    byHost.set(String(h.host), (byHost.get(String(h.host)) ?? 0) + 1);
  }
  assert.deepEqual(plainData([...byHost.keys()].sort()), [host(a), host(b)].sort());
  assert.equal(summary.hosts[host(a)].ok, true);
  assert.equal(summary.hosts[host(b)].ok, true);
  assert.equal(summary.hosts[host(bad)].ok, false);
  assert.match(summary.hosts[host(bad)].error ?? '', /can't be established/);
  assert.match(cli.stderr(), new RegExp(`${host(bad).replace(/\./g, '\\.')}: The authenticity of host`));
  assert.equal((summary.hits as Record<string, number>).add_ints, hits.length, "the summary counts every host's hits");
  assert.deepEqual(plainData(await waitNoGroups(s.bin, 30_000)), [], 'both healthy sessions cleaned up');
});

test('fan-out: a host that dies mid-session (its sshd killed) is reported; the other two keep delivering', TIMEOUT, async (t) => {
  const s = await threeHosts(t);
  if (!s) return;
  const [a, b, dying] = s.servers;
  const kh = join(s.dir, 'known_hosts');
  writeFileSync(kh, s.servers.map((x) => x.knownHostsLine).join('\n') + '\n');
  const args = ['trace', s.bin, 'add_ints a b', '--json', '--known-hosts', kh];
  for (const srv of s.servers) args.push('--host', host(srv), '--identity', srv.identityFile);
  const cli = startCli(t, args, isolatedEnv(t));
  const until = Date.now() + 120_000;
  while (groupsProbing(s.bin).length < 3 && Date.now() < until) await sleep(250);
  const groups = groupsProbing(s.bin);
  assert.equal(groups.length, 3, `three sessions armed\n${cli.stderr()}`);
  // The server and its session processes (the agent among them) go away: SIGTERM, as a reboot would, and SIGKILL
  // for what is left a minute later (systemd's stop timeout is 90 s): the agent's cleanup waits for a CPU like
  // everything else on a loaded machine.
  const stopAt = Date.now();
  await dying.stop(60_000);
  t.diagnostic(`its sshd and session processes were gone ${Date.now() - stopAt} ms after SIGTERM`);
  // The dying host's group is cleaned up by its agent; the two others stay armed. Bounded, not timed, as above.
  const remaining = async () => {
    for (const end = Date.now() + 60_000; Date.now() < end && groupsProbing(s.bin).length !== 2;) await sleep(100);
    return groupsProbing(s.bin);
  };
  const t0 = Date.now();
  assert.equal((await remaining()).length, 2);
  t.diagnostic(`the dying host's group was gone ${Date.now() - t0} ms after its sshd was stopped`);
  // Hits that arrive after the death: count from now.
  const before = cli.stdout().length;
  const from = (text: string) =>
    new Set(
      parseJsonOutput(
        text
          .split('\n')
          .filter((l) => l.startsWith('{"host"'))
          .join('\n'),
      ).hits.map((h) => String(h.host)),
    );
  const deadline = Date.now() + 60_000;
  while (Date.now() < deadline) {
    execFileSync(s.bin, ['1'], { stdio: 'ignore' });
    await sleep(250);
    const seen = from(
      cli
        .stdout()
        .slice(before)
        .replace(/^[^\n]*\n/, ''),
    );
    if (seen.has(host(a)) && seen.has(host(b))) break;
  }
  cli.child.kill('SIGINT');
  const { code } = await cli.exit;
  assert.equal(code, 1, cli.stderr());
  const { summary } = parseJsonOutput(cli.stdout());
  assert.ok(summary);
  assert.deepEqual(
    plainData(
      from(
        cli
          .stdout()
          .slice(before)
          .replace(/^[^\n]*\n/, ''),
      ),
    ),
    new Set([host(a), host(b)]),
  );
  assert.equal(summary.hosts[host(a)].ok, true);
  assert.equal(summary.hosts[host(b)].ok, true);
  assert.equal(summary.hosts[host(dying)].ok, false, JSON.stringify(summary.hosts));
  assert.deepEqual(await waitAllClean(groups, 10_000), []);
});

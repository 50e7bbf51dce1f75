// Stopping a probe of more than a thousand sites: its sites are the probe points of one tracefs event, so Stop
// (the editor's TraceSession.stop) and Ctrl-C (the CLI) disarm one event, every hit still names its own site, and
// nothing is left on the target once the agent is done. The user does not wait for the kernel's teardown: the
// summary comes first, and the agent disarms by itself afterwards, also once its client has gone (the CLI exits,
// over SSH its connection closes). How fast either happens is measured by bench:attach, not here.
import { test } from 'node:test';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import assert from 'node:assert/strict';
import { loadIndex } from '../../src/core/index/load';
import { TraceSession } from '../../src/core/session/traceSession';
import { LocalTarget } from '../../src/core/target/local';
import type { Hit } from '../../src/core/tracefs/hitParser';
import { fixtureOrSkip, runFixture } from '../helpers/fixtures';
import { requireSshd } from '../helpers/sshd';
import { requireTracefs, TRACEFS } from '../helpers/tracefs';
import { leftovers } from './agentHarness';
import { definitionsOf, holdInstance, isolatedEnv, privateCopy, sshFlags, startCli, waitAllClean, waitForGroups } from './engine-harness';
import { plainData } from '../helpers/plain';

const TIMEOUT = { timeout: 300_000 };
const SITES = 1024;

/** The CLI's hit lines matching `line` once `n` of them arrived (bounded at 60 s, not timed). */
async function waitHitLines(cli: { stdout(): string }, line: RegExp, n: number): Promise<number> {
  const count = () =>
    cli
      .stdout()
      .split('\n')
      .filter((l) => line.test(l)).length;
  for (let i = 0; i < 1200 && count() < n; i++) await new Promise((r) => setTimeout(r, 50));
  return count();
}

const eventOf = (definition: string) => /^[pr]:[^/]+\/(\S+) /.exec(definition)?.[1];

test(
  'Stop of a session with a 1,024-site probe: one event, each hit and kernel count on its own site, nothing left',
  TIMEOUT,
  async (t) => {
    if (!requireTracefs(t)) return;
    const f = await fixtureOrSkip(t, 'inlined1k');
    if (!f) return;
    const bin = privateCopy(t, f.path);
    const { index } = await loadIndex(bin, { noCache: true });
    const hits: Hit[] = [];
    const session = await TraceSession.start({ target: new LocalTarget(), index, specs: ['hot'], onHit: (h) => hits.push(h) });
    const group = session.probes[0].group;
    let stopped = false;
    t.after(async () => {
      if (!stopped) await session.stop().catch(() => undefined);
    });
    assert.equal(session.probes.length, SITES);
    const defs = definitionsOf(group);
    assert.equal(defs.length, SITES, 'every site is a probe point');
    assert.deepEqual([...new Set(defs.map(eventOf))], ['hot'], 'of one event');

    const out = await runFixture({ ...f, path: bin }, ['1']);
    assert.equal(out.counts.get('hot'), SITES);
    for (let i = 0; i < 400 && hits.length < SITES; i++) await new Promise((r) => setTimeout(r, 50));
    const summary = await session.stop();
    stopped = true;
    await session.exited;
    assert.deepEqual(leftovers(group), [], 'nothing is left once the agent has finished');

    assert.equal(hits.length, SITES);
    // Each caller ran once, so each site was hit exactly once: the record's point number names the site.
    const bySite = new Map<string, number>();
    for (const h of hits) bySite.set(h.site?.address ?? '?', (bySite.get(h.site?.address ?? '?') ?? 0) + 1);
    assert.equal(bySite.size, SITES);
    assert.ok([...bySite.values()].every((n) => n === 1));
    // A hit names its probe (the function) and its point (the site's own name), whose site it carries.
    const pointOf = new Map(session.probes.map((p) => [p.event, p]));
    for (const h of hits) {
      assert.equal(h.probe, 'hot');
      assert.equal(pointOf.get(h.event)?.site?.address, h.site?.address, `${h.event} carries its own site`);
    }
    // The kernel's count is read per point, and summed per probe in the summary.
    const perPoint = summary.loss!.kernelHits;
    assert.equal(perPoint.size, SITES);
    assert.ok([...perPoint.values()].every((n) => n === 1));
    assert.deepEqual(plainData(summary.kernelHits), { hot: SITES });
    assert.deepEqual(plainData({ lost: summary.lost, mismatch: summary.mismatch }), { lost: 0, mismatch: 0 });
  },
);

test('Ctrl-C on a CLI trace of a 1,024-site probe over SSH: exit 0 with the summary, nothing left on the target', TIMEOUT, async (t) => {
  if (!requireTracefs(t)) return;
  const sshd = await requireSshd(t);
  if (!sshd) return;
  const f = await fixtureOrSkip(t, 'inlined1k');
  if (!f) return;
  const bin = privateCopy(t, f.path);
  const cli = startCli(t, ['trace', bin, 'hot', ...sshFlags(sshd)], isolatedEnv(t));
  await cli.waitFor(new RegExp(`tracing 1 probe at ${SITES} sites on `), 120_000);
  const groups = await waitForGroups(bin, 5_000);
  assert.equal(groups.length, 1);
  assert.equal(definitionsOf(groups[0]).length, SITES);
  await runFixture({ ...f, path: bin }, ['1']);
  // Every site's line arrives before the stop (each caller ran once); bounded, not timed.
  assert.equal(await waitHitLines(cli, /^\S+ \S+ \S+ hot \[inlined into /, SITES), SITES, cli.stderr());
  cli.child.kill('SIGINT');
  const { code } = await cli.exit;
  assert.equal(code, 0, cli.stderr());
  assert.match(
    cli.stdout(),
    new RegExp(`^hot: ${SITES} hits \\(kernel counted ${SITES}\\)$`, 'm'),
    'the probe summary line, with the kernel count',
  );
  assert.deepEqual(await waitAllClean(groups, 60_000), [], 'the agent leaves the target clean after the CLI has exited');
});

// The CLI inherits the user's shell, and the agent the CLI's environment (on this machine; over SSH, sshd's). A name
// the agent assigns that the environment exports stays exported, so its value goes to every command the agent
// starts: PROF (a line of uprobe_profile per probe point, here > 128 KiB, the kernel's limit on one environment
// string) made each command fail to start (E2BIG), the kernel's counts were never read, and Ctrl-C waited ~40 s to
// report a mismatch. The binary's long path makes each profile line long enough.
test(
  "Ctrl-C on a CLI trace of a 1,024-site probe from a shell that exports the agent's own variable names: the kernel's counts are read, nothing left",
  TIMEOUT,
  async (t) => {
    if (!requireTracefs(t)) return;
    const f = await fixtureOrSkip(t, 'inlined1k');
    if (!f) return;
    const bin = privateCopy(t, f.path, 'a-directory-name-long-enough-that-a-line-of-uprobe-profile-per-probe-point-adds-up');
    const env = { ...isolatedEnv(t), PROF: 'the-users', G: 'the-users', T: 'the-users', I: 'the-users', N: 'the-users', CAT: 'the-users' };
    const cli = startCli(t, ['trace', bin, 'hot'], env);
    await cli.waitFor(new RegExp(`tracing 1 probe at ${SITES} sites on local`), 120_000);
    const groups = await waitForGroups(bin, 5_000);
    assert.equal(groups.length, 1);
    assert.ok(
      readFileSync(join(TRACEFS, 'uprobe_profile'), 'utf8')
        .split('\n')
        .filter((l) => l.includes(` ${bin} `))
        .join('\n').length > 131_072,
      'the probe points profile lines exceed one environment string',
    );
    await runFixture({ ...f, path: bin }, ['1']);
    assert.equal(await waitHitLines(cli, /^\S+ \S+ \S+ hot \[inlined into /, SITES), SITES, cli.stderr());
    cli.child.kill('SIGINT');
    const { code } = await cli.exit;
    assert.equal(code, 0, cli.stderr());
    assert.match(cli.stdout(), new RegExp(`^hot: ${SITES} hits \\(kernel counted ${SITES}\\)$`, 'm'), cli.stderr());
    assert.doesNotMatch(cli.stdout() + cli.stderr(), /mismatch/);
    assert.deepEqual(await waitAllClean(groups, 60_000), [], 'the agent leaves the target clean after the CLI has exited');
  },
);

test(
  'Ctrl-C on a CLI trace of 100 specs: their points share one event, each hit and kernel count on its own function',
  TIMEOUT,
  async (t) => {
    if (!requireTracefs(t)) return;
    const sshd = await requireSshd(t);
    if (!sshd) return;
    const f = await fixtureOrSkip(t, 'many-O2');
    if (!f) return;
    const bin = privateCopy(t, f.path);
    const specs = Array.from({ length: 100 }, (_, i) => `many_${String(i).padStart(3, '0')} x`);
    const cli = startCli(t, ['trace', bin, ...specs, ...sshFlags(sshd)], isolatedEnv(t));
    await cli.waitFor(/tracing 100 probes at 100 sites on /, 120_000);
    const groups = await waitForGroups(bin, 5_000);
    assert.equal(groups.length, 1);
    const defs = definitionsOf(groups[0]);
    assert.equal(defs.length, 100);
    assert.deepEqual([...new Set(defs.map(eventOf))], ['many_000'], 'one event for the 100 specs');
    await runFixture({ ...f, path: bin }, ['1']);
    assert.equal(await waitHitLines(cli, /^\S+ \S+ \S+ many_[0-9]{3} x=0$/, 100), 100, cli.stderr());
    cli.child.kill('SIGINT');
    const { code } = await cli.exit;
    assert.equal(code, 0, cli.stderr());
    for (const s of specs) assert.match(cli.stdout(), new RegExp(`^${s.split(' ')[0]}: 1 hit \\(kernel counted 1\\)$`, 'm'));
    assert.deepEqual(await waitAllClean(groups, 60_000), [], 'the agent leaves the target clean after the CLI has exited');
  },
);

// The order the user sees: the summary, the CLI's exit, then the kernel's teardown. The test holds a file of the
// session's tracefs instance open, which the kernel's rmdir refuses (EBUSY) until it is closed: so the agent cannot
// have finished when the CLI exits, whatever the machine's load. The agent retries that rmdir (for seconds), so
// closing the file lets it finish. Local and over SSH, where the agent outlives the client's connection.
for (const over of ['local', 'ssh'] as const) {
  test(
    `Ctrl-C on a CLI trace of ${SITES} sites (${over}): the summary and the exit come before the teardown ends, nothing is left after`,
    TIMEOUT,
    async (t) => {
      if (!requireTracefs(t)) return;
      const sshd = over === 'ssh' ? await requireSshd(t) : undefined;
      if (over === 'ssh' && !sshd) return;
      const f = await fixtureOrSkip(t, 'inlined1k');
      if (!f) return;
      const bin = privateCopy(t, f.path);
      const cli = startCli(t, ['trace', bin, 'hot', ...(sshd ? sshFlags(sshd) : [])], isolatedEnv(t));
      await cli.waitFor(new RegExp(`tracing 1 probe at ${SITES} sites on `), 120_000);
      const groups = await waitForGroups(bin, 5_000);
      assert.equal(groups.length, 1);
      await runFixture({ ...f, path: bin }, ['1']);
      assert.equal(await waitHitLines(cli, /^\S+ \S+ \S+ hot \[inlined into /, SITES), SITES, cli.stderr());
      const release = holdInstance(groups[0]);
      t.after(release);
      cli.child.kill('SIGINT');
      const { code } = await cli.exit;
      assert.equal(code, 0, cli.stderr());
      assert.match(
        cli.stdout(),
        new RegExp(`^hot: ${SITES} hits \\(kernel counted ${SITES}\\)$`, 'm'),
        'the summary, with the kernel count',
      );
      assert.ok(
        leftovers(groups[0]).includes(`instance ${groups[0]}`),
        'the CLI has exited while its agent is still tearing down (its instance is still there)',
      );
      release();
      assert.deepEqual(await waitAllClean(groups, 60_000), [], 'then the agent removes everything by itself');
    },
  );
}

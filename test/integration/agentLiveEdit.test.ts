// Editing an armed agent session in place on the real tracefs: definitions added in one round trip while the
// first probe keeps counting, a refused one touching nothing else, one event toggled and one removed alone.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { chmodSync, copyFileSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { requireTracefs } from '../helpers/tracefs';
import { AgentError, TracefsAgent } from '../../src/core/tracefs/agentClient';
import type { EventSchema } from '../../src/core/tracefs/hitParser';
import { ADD_SCHEMA, SHELLS, ShellTarget, buildWorkload, collectHits, leftovers, runWorkload, type Workload } from './agentHarness';
import { plainData } from '../helpers/plain';

let shared: Workload | undefined;

/** A private copy of the workload: uprobes sit on the inode, and other test runs probe the shared one. */
function privateWorkload(t: { after(f: () => void): void }): Workload {
  shared ??= buildWorkload();
  const dir = mkdtempSync(join(tmpdir(), 'pl-liveedit-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  const path = join(dir, 'workload');
  copyFileSync(shared.path, path);
  chmodSync(path, 0o755);
  return { ...shared, path };
}

const ours = (group: string) =>
  readFileSync('/sys/kernel/tracing/uprobe_events', 'utf8')
    .split('\n')
    .filter((l) => l.startsWith(`p:${group}/`) || l.startsWith(`r:${group}/`));

const LEAF_IN: EventSchema = { event: 'leaf_in', probe: 'pl_leaf', kind: 'entry', args: [{ name: 'x', type: 's64' }] };
const LEAF_RET: EventSchema = { event: 'leaf_ret', probe: 'pl_leaf%return', kind: 'return', args: [{ name: 'retval', type: 's64' }] };

for (const [name, shell] of Object.entries(SHELLS)) {
  test(`${name}: add to an armed session (one round trip), refuse one, toggle and remove single events; the first keeps counting`, async (t) => {
    if (!requireTracefs(t)) return;
    const w = privateWorkload(t);
    const agent = await TracefsAgent.start(new ShellTarget(shell), {});
    const g = agent.group;
    try {
      const { hits, ended } = collectHits(agent, [ADD_SCHEMA, LEAF_IN, LEAF_RET]);
      await agent.define(`p:${g}/pl_add ${w.path}:${w.addOffset} a=%di:s32 b=%si:u64 s=+0(%dx):string`);
      await agent.arm();
      runWorkload(w, 3);

      const before = ours(g);
      const verdicts = await agent.defineAll([
        `p:${g}/leaf_in ${w.path}:${w.leafOffset} x=%di:s64`,
        `p:${g}/bad ${w.path}:${w.leafOffset} x=%nosuchreg:s64`,
        `p:${g}/evil ${w.path};reboot:${w.leafOffset}`,
        `r:${g}/leaf_ret ${w.path}:${w.leafOffset} retval=$retval:s64`,
      ]);
      assert.equal(verdicts.length, 4, 'one verdict per line');
      assert.equal(verdicts[0], null);
      assert.ok(verdicts[1] instanceof AgentError && verdicts[1].code === 'EKERNEL', String(verdicts[1]));
      assert.ok(verdicts[2] instanceof AgentError && verdicts[2].code === 'EINVAL', String(verdicts[2]));
      assert.equal(verdicts[3], null);
      // The refused line touched nothing: the earlier definition is as it was, the two good ones were added.
      const after = ours(g);
      assert.deepEqual(after.slice(0, before.length), before);
      assert.deepEqual(
        after.slice(before.length).map((l) => l.split(' ')[0]),
        [`p:${g}/leaf_in`, `r:${g}/leaf_ret`],
      );
      // Only the new events are enabled, one by one; an unknown event is refused alone.
      const on = await agent.setEventsEnabled(['leaf_in', 'leaf_ret', 'bad'], true);
      assert.deepEqual(on.slice(0, 2), [{}, {}]);
      assert.ok(on[2] instanceof AgentError && on[2].code === 'ENOENT');
      runWorkload(w, 4);

      // Disabling one event reports its kernel count and leaves the others recording.
      const off = await agent.setEventsEnabled(['leaf_in'], false);
      assert.deepEqual(off, [{ hits: 4 }]);
      runWorkload(w, 2);

      const removed = await agent.undefine('leaf_ret');
      assert.equal(removed.hits, 6);
      assert.ok(!ours(g).some((l) => l.startsWith(`r:${g}/leaf_ret `)), 'leaf_ret is gone from uprobe_events');
      assert.ok(ours(g).some((l) => l.startsWith(`p:${g}/pl_add `)) && ours(g).some((l) => l.startsWith(`p:${g}/leaf_in `)));
      await assert.rejects(agent.undefine('leaf_ret'), (e: AgentError) => e.code === 'ENOENT');
      runWorkload(w, 5);

      const report = await agent.stop();
      await ended;
      const count = (ev: string) => hits.filter((h) => h.event === ev).length;
      // pl_add counted through every edit: 3 + 4 + 2 + 5 calls, no reset, none lost against the kernel's count.
      assert.equal(count('pl_add'), 14);
      assert.equal(report.kernelHits.get('pl_add'), 14);
      assert.deepEqual(
        plainData(hits.filter((h) => h.event === 'pl_add').map((h) => h.args.a)),
        [-1, -2, -3, -1, -2, -3, -4, -1, -2, -1, -2, -3, -4, -5],
      );
      assert.equal(count('leaf_in'), 4);
      assert.equal(report.kernelHits.get('leaf_in'), 4);
      // The removed return probe: every hit it made before removal arrived (the buffer was drained first).
      assert.equal(count('leaf_ret'), 6);
      assert.equal(removed.unread, 0);
      assert.equal(
        report.cpus.reduce((s, c) => s + c.overrun + c.dropped, 0),
        0,
      );
      // STOP replies before the teardown; the agent has removed everything once it exits.
      await agent.exit;
      assert.deepEqual(leftovers(g), []);
    } finally {
      agent.kill('KILL');
    }
  });
}

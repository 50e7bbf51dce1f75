// Loss accounting under pressure, 100 probes at once, and hostile input, on the real tracefs.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { requireTracefs } from '../helpers/tracefs';
import { TracefsAgent, AgentError } from '../../src/core/tracefs/agentClient';
import { lossReport } from '../../src/core/tracefs/loss';
import {
  ShellTarget,
  buildWorkload,
  collectHits,
  leftovers,
  runWorkload,
  runWorkloadAsync,
  waitClean,
  ADD_SCHEMA,
  type Workload,
} from './agentHarness';

let workload: Workload | undefined;
const getWorkload = () => (workload ??= buildWorkload());

for (const overwrite of [true, false]) {
  test(`a fixed workload at full speed into a tiny buffer (overwrite ${overwrite ? 'on' : 'off'}): received + lost == N == kernelHits`, async (t) => {
    if (!requireTracefs(t)) return;
    const w = getWorkload();
    const N = 100_000;
    const agent = await TracefsAgent.start(new ShellTarget(['dash']), {});
    const { hits, parser, ended } = collectHits(agent, [ADD_SCHEMA]);
    await agent.define(`p:${agent.group}/pl_add ${w.path}:${w.addOffset} a=%di:s32 b=%si:u64 s=+0(%dx):string`);
    await agent.setBufferKb(8);
    await agent.setOverwrite(overwrite);
    await agent.arm();
    await runWorkloadAsync(w, N);
    const live = await agent.cpuStats();
    const report = await agent.stop();
    await ended;
    const loss = lossReport(parser.stats, report);
    t.diagnostic(
      `received ${hits.length}, LOST lines ${parser.stats.lost}, overrun ${loss.overrun}, dropped ${loss.dropped}, kernelHits ${report.kernelHits.get('pl_add')}`,
    );
    assert.equal(report.kernelHits.get('pl_add'), N);
    assert.ok(loss.lost > 0, 'the tiny buffer must overflow, else this test proves nothing');
    assert.equal(parser.stats.malformed, 0);
    assert.equal(hits.length + loss.lost, N);
    assert.equal(loss.unaccounted, 0);
    if (overwrite) {
      assert.equal(loss.overrun, parser.stats.lost, "the stream's LOST lines agree with the per-CPU counters");
    } else {
      // Dropping the newest leaves no LOST line in the stream: only the counters (live, too) tell.
      assert.equal(parser.stats.lost, 0);
      assert.equal(loss.dropped, loss.lost);
      assert.ok(live.reduce((s, c) => s + c.dropped, 0) > 0);
    }
    await agent.exit;
    assert.deepEqual(leftovers(agent.group), []);
  });
}

test('100 probes armed at once are all hit and all cleaned up after STOP', async (t) => {
  if (!requireTracefs(t)) return;
  const w = getWorkload();
  const agent = await TracefsAgent.start(new ShellTarget(['dash']), {});
  const events = Array.from({ length: 100 }, (_, i) => ({ ...ADD_SCHEMA, event: `pl_add_${i}`, probe: `p${i}` }));
  const { hits, ended } = collectHits(agent, events);
  for (const e of events) await agent.define(`p:${agent.group}/${e.event} ${w.path}:${w.addOffset} a=%di:s32 b=%si:u64 s=+0(%dx):string`);
  await agent.arm();
  runWorkload(w, 3);
  const t0 = Date.now();
  const report = await agent.stop();
  await ended;
  t.diagnostic(`STOP with 100 probes took ${Date.now() - t0} ms`);
  assert.equal(hits.length, 300);
  assert.equal(report.kernelHits.size, 100);
  assert.ok([...report.kernelHits.values()].every((n) => n === 3));
  assert.deepEqual(await waitClean(agent.group), []);
});

test('100 probes are cleaned up within 10 s when the client just goes away', async (t) => {
  if (!requireTracefs(t)) return;
  const w = getWorkload();
  const agent = await TracefsAgent.start(new ShellTarget(['busybox', 'sh']), {});
  for (let i = 0; i < 100; i++) await agent.define(`p:${agent.group}/pl_add_${i} ${w.path}:${w.addOffset} a=%di:s32`);
  await agent.arm();
  agent.abandon();
  assert.deepEqual(await waitClean(agent.group), []);
});

test('hostile definitions, paths, pids and filters are refused or inert: nothing runs on the target', async (t) => {
  if (!requireTracefs(t)) return;
  const w = getWorkload();
  const canary = `/tmp/probelens-canary-${process.pid}`;
  const agent = await TracefsAgent.start(new ShellTarget(['dash']), { sentinel: false });
  const g = agent.group;
  const inject = [
    `;touch ${canary}`,
    `$(touch ${canary})`,
    `\`touch ${canary}\``,
    `'; touch ${canary}; '`,
    `"; touch ${canary}; "`,
    `|touch ${canary}`,
    `&& touch ${canary}`,
  ];
  try {
    for (const x of inject) {
      for (const def of [
        `p:${g}/e ${w.path}:${w.addOffset} a=%di${x}`,
        `p:${g}/e${x} ${w.path}:${w.addOffset}`,
        `p:${g}/e ${w.path}${x}:${w.addOffset}`,
        `p:probelens_1_other/e ${w.path}:${w.addOffset}`,
      ]) {
        await assert.rejects(agent.define(def), AgentError);
      }
      await assert.rejects(agent.define(`p:${g}/e ${w.path}:${w.addOffset}\n${x}`), /line break/);
      await assert.rejects(agent.checkBuildId(`${w.path}${x}`, w.buildIdOffset, 20, w.buildId), AgentError);
      await assert.rejects(agent.setFilter('e', `a == 1 ${x}`), AgentError);
      await assert.rejects(agent.setFilter(`e${x}`, 'a == 1'), AgentError);
    }
    await assert.rejects(agent.filterPid(Number.NaN), AgentError);
    // A filter with quotes passes the pattern but only ever reaches the kernel's filter parser.
    await agent.define(`p:${g}/e ${w.path}:${w.addOffset} a=%di:s32 s=+0(%dx):string`);
    await assert.rejects(agent.setFilter('e', `s == "$(touch ${canary})"`), AgentError);
    await agent.setFilter('e', 's ~ "*touch*"');
    await agent.arm();
    runWorkload(w, 1, `$(touch ${canary})`);
  } finally {
    await agent.stop();
  }
  assert.equal(existsSync(canary), false);
});

// The agent's binary stream on this machine's real tracefs, under dash, busybox ash and bash: RAW is accepted, the
// pages it ships decode (RawStream) into exactly the calls the workload made, with their pids, and a target whose
// capability check fails keeps the text stream.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { requireTracefs } from '../helpers/tracefs';
import { AgentError, TracefsAgent } from '../../src/core/tracefs/agentClient';
import { RawStream } from '../../src/core/tracefs/rawStream';
import { lossReport } from '../../src/core/tracefs/loss';
import type { Hit } from '../../src/core/tracefs/hitParser';
import {
  ADD_SCHEMA,
  LEAF_SCHEMA,
  SHELLS,
  ShellTarget,
  FakeRawlessTarget,
  buildWorkload,
  defineWorkloadProbes,
  leftovers,
  runWorkloadAsync,
  runWorkloadPid,
  type Workload,
} from './agentHarness';
import { plainData } from '../helpers/plain';

let workload: Workload | undefined;
const getWorkload = () => (workload ??= buildWorkload());

function rawHits(agent: TracefsAgent, setup: { headerPage: string; headerEvent: string }, events = [ADD_SCHEMA, LEAF_SCHEMA]) {
  const hits: Hit[] = [];
  const stream = new RawStream({
    host: 'local',
    ...setup,
    onHit: (h) => hits.push(h),
    lookupTgids: (tids) => agent.tgids(tids),
  });
  stream.addEvents(events);
  const bytes: Buffer[] = [];
  agent.onTraceData((c) => {
    bytes.push(Buffer.from(c));
    stream.push(c);
  });
  const ended = new Promise<void>((res) => agent.onTraceEnd(res));
  return { hits, stream, ended, bytes };
}

/**
 * The pump's rounds, read off its bytes: the CPUs each round's headers named, and whether a round end closed it. A
 * 64-byte item has ASCII digits in bytes 12-15, a page does not.
 */
function pumpRounds(bytes: Buffer, pageSize: number): Array<{ cpus: number[]; ended: boolean }> {
  const rounds: Array<{ cpus: number[]; ended: boolean }> = [{ cpus: [], ended: false }];
  for (let pos = 0; pos < bytes.length;) {
    if (!/^\d{4}$/.test(bytes.toString('latin1', pos + 12, pos + 16))) {
      pos += pageSize;
      continue;
    }
    const item = bytes.toString('latin1', pos, pos + 64);
    pos += 64;
    if (item.startsWith('PLRAWCPU')) rounds[rounds.length - 1].cpus.push(Number(item.slice(8, 16)));
    else {
      assert.equal(item, `PLRAWEND${'0'.repeat(56)}`);
      rounds[rounds.length - 1].ended = true;
      rounds.push({ cpus: [], ended: false });
    }
  }
  return rounds;
}

for (const [name, shell] of Object.entries(SHELLS)) {
  test(`${name}: RAW ships ring-buffer pages that decode into exactly the workload's calls, pids and strings`, async (t) => {
    if (!requireTracefs(t)) return;
    const w = getWorkload();
    const agent = await TracefsAgent.start(new ShellTarget(shell), {});
    const group = agent.group;
    try {
      const setup = await agent.useRawStream();
      assert.equal(agent.stream, 'raw');
      assert.equal(setup.pageSize, 4096);
      assert.ok(setup.cpus.length >= 1);
      assert.equal(agent.sentinel, null, 'records of the binary stream need no framing secret');
      const { hits, stream, ended, bytes } = rawHits(agent, setup);
      await defineWorkloadProbes(agent, w);
      stream.addFormats(await agent.formats(['pl_add', 'pl_leaf_ret']));
      await agent.arm();
      // A string shaped like the stream's own CPU header and like trace_pipe's lines changes nothing.
      const str = 'PLRAWCPU00000001\nCPU:0 [LOST 7 EVENTS]\r\u2028';
      let sum = 0;
      for (let i = 0; i < 5; i++) sum += -(i + 1) + (255 - i) + Buffer.byteLength(str) + 2 * -(i + 1);
      const run = runWorkloadPid(w, 5, str);
      assert.equal(run.out, String(sum));
      const report = await agent.stop();
      await ended;
      stream.end(report.tgids);
      const entries = hits.filter((h) => h.kind === 'entry');
      assert.deepEqual(
        entries.map((h) => h.args.a),
        [-1, -2, -3, -4, -5],
      );
      assert.deepEqual(
        entries.map((h) => h.args.b),
        ['18446744073709551615', '18446744073709551614', '18446744073709551613', '18446744073709551612', '18446744073709551611'],
      );
      assert.ok(entries.every((h) => h.args.s === str));
      assert.deepEqual(
        hits.filter((h) => h.kind === 'return').map((h) => h.retval),
        [-2, -4, -6, -8, -10],
      );
      assert.ok(
        hits.every((h) => h.pid === run.pid && h.tid === run.pid),
        JSON.stringify({ workload: run.pid, hits: hits.map((h) => [h.pid, h.tid]) }),
      );
      assert.ok(report.tgids && report.tgids.get(run.pid) === run.pid, 'STOP says the saved thread-group ids');
      assert.deepEqual(plainData(Object.fromEntries(report.kernelHits)), { pl_add: 5, pl_leaf_ret: 5 });
      assert.equal(stream.stats.lost, 0);
      assert.equal(stream.stats.malformed, 0);
      assert.equal(stream.stats.hits, 10);
      // Every round names every CPU once, in order, and ends with a round end (so its last CPU's hits need not wait
      // for the next round); only the round the stop cut may be unfinished.
      const rounds = pumpRounds(Buffer.concat(bytes), setup.pageSize);
      const whole = rounds.slice(0, -1);
      assert.ok(whole.length >= 1, 'at least one whole round');
      for (const r of whole) assert.deepEqual(r, { cpus: setup.cpus, ended: true });
      assert.ok(rounds[rounds.length - 1].cpus.every((c, i) => c === setup.cpus[i]));
      assert.equal((await agent.exit).code, 0);
      assert.deepEqual(leftovers(group), []);
    } finally {
      agent.kill('KILL');
    }
  });
}

for (const overwrite of [true, false]) {
  test(`raw: a fixed workload at full speed into a tiny buffer (overwrite ${overwrite ? 'on' : 'off'}): received + lost == N == kernelHits`, async (t) => {
    if (!requireTracefs(t)) return;
    const w = getWorkload();
    const N = 100_000;
    const agent = await TracefsAgent.start(new ShellTarget(['dash']), {});
    try {
      const { hits, stream, ended } = rawHits(agent, await agent.useRawStream(), [ADD_SCHEMA]);
      await agent.define(`p:${agent.group}/pl_add ${w.path}:${w.addOffset} a=%di:s32 b=%si:u64 s=+0(%dx):string`);
      stream.addFormats(await agent.formats(['pl_add']));
      await agent.setBufferKb(8);
      await agent.setOverwrite(overwrite);
      await agent.arm();
      await runWorkloadAsync(w, N);
      const report = await agent.stop();
      await ended;
      stream.end(report.tgids);
      const loss = lossReport(stream.stats, report);
      t.diagnostic(
        `received ${hits.length}, lost per pages ${stream.stats.lost}, overrun ${loss.overrun}, dropped ${loss.dropped}, kernelHits ${report.kernelHits.get('pl_add')}`,
      );
      assert.equal(report.kernelHits.get('pl_add'), N);
      assert.ok(loss.lost > 0, 'the tiny buffer must overflow, else this test proves nothing');
      assert.equal(stream.stats.malformed, 0);
      assert.equal(hits.length + loss.lost, N);
      assert.equal(loss.unaccounted, 0);
      // The stream's live figure is the per-CPU counters the pump ships with its CPU headers: overwriting the
      // oldest (overrun) or dropping the newest (dropped events), it ends equal to what STOP reads.
      assert.equal(stream.stats.lost, loss.overrun + loss.dropped + loss.commitOverrun);
      assert.equal(overwrite ? loss.overrun : loss.dropped, loss.lost);
      // Every hit decoded whole: its own values, not a neighbour's.
      assert.ok(hits.every((h) => h.args.s === 'hi' && typeof h.args.a === 'number' && h.args.a < 0));
      await agent.exit;
      assert.deepEqual(leftovers(agent.group), []);
    } finally {
      agent.kill('KILL');
    }
  });
}

for (const how of ['noRawFile', 'blockingRead'] as const) {
  test(`RAW is refused (ENOTSUP) where the raw check fails (fake target: ${how}), and the text stream still works`, async (t) => {
    if (!requireTracefs(t)) return;
    const w = getWorkload();
    const agent = await TracefsAgent.start(new FakeRawlessTarget(how), {});
    try {
      const asked = Date.now();
      await assert.rejects(agent.useRawStream(), (e: unknown) => e instanceof AgentError && e.code === 'ENOTSUP');
      // A read that blocks on the emptied buffer (5.10 does) is noticed, not waited out: the bound is 3 s per CPU.
      if (how === 'blockingRead') assert.ok(Date.now() - asked < 2_500, `refused after ${Date.now() - asked} ms`);
      assert.equal(agent.stream, 'text');
      const lines: string[] = [];
      agent.onTraceLine((l) => lines.push(l));
      const ended = new Promise<void>((res) => agent.onTraceEnd(res));
      await defineWorkloadProbes(agent, w);
      await agent.arm();
      runWorkloadPid(w, 2);
      const report = await agent.stop();
      await ended;
      assert.deepEqual(plainData(Object.fromEntries(report.kernelHits)), { pl_add: 2, pl_leaf_ret: 2 });
      assert.equal(lines.filter((l) => / pl_add: /.test(l)).length, 2, lines.join('\n'));
    } finally {
      agent.kill('KILL');
    }
  });
}

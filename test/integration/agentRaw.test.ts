// The agent's binary stream on this machine's real tracefs, under dash, busybox ash and bash: RAW is accepted, the
// pages it ships decode (RawStream) into exactly the calls the workload made, with their pids, and a target whose
// capability check fails keeps the text stream.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { requireTracefs } from '../helpers/tracefs';
import { AgentError, TracefsAgent } from '../../src/core/tracefs/agentClient';
import { RawStream } from '../../src/core/tracefs/rawStream';
import type { Hit } from '../../src/core/tracefs/hitParser';
import type { ExecChannel, ExecOptions, Target } from '../../src/core/target/target';
import { AGENT_SCRIPT } from '../../src/core/tracefs/agentScript';
import {
  ADD_SCHEMA,
  LEAF_SCHEMA,
  SHELLS,
  ShellTarget,
  buildWorkload,
  defineWorkloadProbes,
  leftovers,
  runWorkloadPid,
  type Workload,
} from './agentHarness';

let workload: Workload | undefined;
const getWorkload = () => (workload ??= buildWorkload());

function rawHits(agent: TracefsAgent, setup: { headerPage: string; headerEvent: string }) {
  const hits: Hit[] = [];
  const stream = new RawStream({
    host: 'local',
    ...setup,
    onHit: (h) => hits.push(h),
    lookupTgids: (tids) => agent.tgids(tids),
  });
  stream.addEvents([ADD_SCHEMA, LEAF_SCHEMA]);
  agent.onTraceData((c) => stream.push(c));
  const ended = new Promise<void>((res) => agent.onTraceEnd(res));
  return { hits, stream, ended };
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
      const { hits, stream, ended } = rawHits(agent, setup);
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
      assert.deepEqual(Object.fromEntries(report.kernelHits), { pl_add: 5, pl_leaf_ret: 5 });
      assert.equal(stream.stats.lost, 0);
      assert.equal(stream.stats.malformed, 0);
      assert.equal(stream.stats.hits, 10);
      assert.equal((await agent.exit).code, 0);
      assert.deepEqual(leftovers(group), []);
    } finally {
      agent.kill('KILL');
    }
  });
}

/**
 * A FAKE target: runs the real agent with its script edited so the capability check meets what an older or
 * different kernel gives. `noRawFile`: per_cpu/cpuN/trace_pipe_raw is looked for under another name (a kernel
 * without it); `blockingRead`: the check's reads block on an empty buffer as they do before a reader's close ends
 * them (the check must end them itself, within its 3 s bound, and refuse).
 */
export class FakeRawlessTarget implements Target {
  readonly host = 'local';
  private readonly inner = new ShellTarget(['dash']);
  constructor(private readonly how: 'noRawFile' | 'blockingRead') {}
  describe(): string {
    return `local (fake: ${this.how})`;
  }
  exec(argv: readonly string[], opts?: ExecOptions): Promise<ExecChannel> {
    if (argv[2] !== AGENT_SCRIPT) throw new Error('not the agent');
    const script =
      this.how === 'noRawFile'
        ? AGENT_SCRIPT.replaceAll('/per_cpu/cpu0/trace_pipe_raw" ]', '/per_cpu/cpu0/trace_pipe_raw_absent" ]')
        : AGENT_SCRIPT.replace('dd bs=65536 < "$I/per_cpu/cpu$c/trace_pipe_raw" 2>/dev/null &', 'cat "$I/trace_pipe" > /dev/null 2>&1 &');
    assert.notEqual(script, AGENT_SCRIPT, 'the fake edit applies');
    return this.inner.exec([argv[0], '-c', script, ...argv.slice(3)], opts);
  }
  close(): Promise<void> {
    return this.inner.close();
  }
}

for (const how of ['noRawFile', 'blockingRead'] as const) {
  test(`RAW is refused (ENOTSUP) where the raw check fails (fake target: ${how}), and the text stream still works`, async (t) => {
    if (!requireTracefs(t)) return;
    const w = getWorkload();
    const agent = await TracefsAgent.start(new FakeRawlessTarget(how), {});
    try {
      await assert.rejects(agent.useRawStream(), (e: unknown) => e instanceof AgentError && e.code === 'ENOTSUP');
      assert.equal(agent.stream, 'text');
      const lines: string[] = [];
      agent.onTraceLine((l) => lines.push(l));
      const ended = new Promise<void>((res) => agent.onTraceEnd(res));
      await defineWorkloadProbes(agent, w);
      await agent.arm();
      runWorkloadPid(w, 2);
      const report = await agent.stop();
      await ended;
      assert.deepEqual(Object.fromEntries(report.kernelHits), { pl_add: 2, pl_leaf_ret: 2 });
      assert.equal(lines.filter((l) => / pl_add: /.test(l)).length, 2, lines.join('\n'));
    } finally {
      agent.kill('KILL');
    }
  });
}

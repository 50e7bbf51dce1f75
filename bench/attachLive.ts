// bench:attach's in-process figures (local target, no node start or SSH login in them):
// - defining 100 functions: pipelined (every DEF line written at once, then the replies) beside one round trip
//   per definition (how sessions defined probes before), on a raw agent;
// - "add 1 probe to a session with 100 armed": time from `session.add` to armed while a workload keeps
//   calling the 100, and the hits lost on the 100 meanwhile (received against the kernel's uprobe_profile
//   counts), beside what an edit used to cost: stopping the 100-probe session and starting one with 101.
import { spawn } from 'node:child_process';
import { copyFileSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { basename, join } from 'node:path';
import { loadIndex } from '../src/core/index/load';
import { compileProbes } from '../src/core/probes/compiler';
import { bindGroup } from '../src/core/probes/definition';
import { TraceSession } from '../src/core/session/traceSession';
import { LocalTarget } from '../src/core/target/local';
import { TracefsAgent } from '../src/core/tracefs/agentClient';
import { fixture } from '../test/helpers/fixtures';
import { median, sleep } from './engineCommon';

const ms = (x: number) => `${x.toFixed(0)} ms`;

/** Defines `specs` of `bin` on a raw local agent, pipelined and one by one; returns both times per run. */
export async function benchDefine(bin: string, specs: string[], runs: number): Promise<string[][]> {
  const { index } = await loadIndex(bin);
  const probes = await compileProbes(specs, index, {});
  const piped: number[] = [];
  const serial: number[] = [];
  for (let r = 0; r < runs + 1; r++) {
    for (const mode of ['piped', 'serial'] as const) {
      // A generous watchdog: enabling 100 probes of a 40 MB binary is one kernel write the agent cannot interrupt.
      const agent = await TracefsAgent.start(new LocalTarget(), { heartbeatTimeoutSeconds: 10 });
      try {
        const defs = probes.map((p) => bindGroup(p.definition, agent.group));
        const t0 = performance.now();
        if (mode === 'piped') {
          const v = await agent.defineAll(defs);
          if (v.some((x) => x)) throw new Error(`a definition was refused: ${v.find((x) => x)?.message}`);
        } else for (const d of defs) await agent.define(d);
        await agent.arm();
        const dt = performance.now() - t0;
        if (r > 0) (mode === 'piped' ? piped : serial).push(dt); // run 0 warms the page cache
      } finally {
        await agent.stop();
      }
    }
  }
  return [
    [
      `define + enable ${specs.length}, pipelined (local agent)`,
      ms(median(piped)),
      piped.map((x) => x.toFixed(0)).join(' / '),
      '-',
      `one round trip for all DEF lines, then ARM; before: ${ms(median(serial))} (${serial.map((x) => x.toFixed(0)).join(' / ')}) one round trip each`,
    ],
  ];
}

/** A process that calls the 100 functions of the many fixture over and over until stopped. */
function workload(bin: string): { stop(): Promise<void> } {
  let stopped = false;
  const done = (async () => {
    while (!stopped) {
      await new Promise<void>((res, rej) => {
        const c = spawn(bin, ['200'], { stdio: ['ignore', 'ignore', 'inherit'] });
        c.once('error', rej);
        c.once('exit', () => res());
      });
    }
  })();
  return {
    stop: async () => {
      stopped = true;
      await done;
    },
  };
}

export async function benchLiveAdd(runs: number): Promise<{ rows: string[][]; notes: string[] }> {
  const f = await fixture('many-O2');
  const dir = mkdtempSync(join(tmpdir(), 'plbench-live-'));
  const bin = join(dir, basename(f.path));
  copyFileSync(f.path, bin);
  try {
    const { index } = await loadIndex(bin);
    const hundred = Array.from({ length: 100 }, (_, i) => `many_${String(i).padStart(3, '0')} x`);
    // Distinct specs of main (called once per workload process), one added per run.
    const extra = ['main', 'main argc', 'main argv', 'main argc argv', 'main argv argc', 'main%return', 'main%return $retval'];
    const target = new LocalTarget();
    const received = new Map<string, number>();
    const session = await TraceSession.start({
      target,
      index,
      specs: hundred,
      bufferKb: 8192,
      keepGoing: true,
      onHit: (h) => received.set(h.probe, (received.get(h.probe) ?? 0) + 1),
    });
    const add: number[] = [];
    let summary;
    const load = workload(bin);
    try {
      await sleep(1000);
      for (let r = 0; r < Math.min(runs + 2, extra.length); r++) {
        const t0 = performance.now();
        const res = await session.add([extra[r]]);
        const dt = performance.now() - t0;
        if (res.refused.length) throw new Error(`${extra[r]} was refused: ${res.refused[0].error.message}`);
        if (r > 0) add.push(dt);
        await sleep(500);
      }
    } finally {
      await load.stop();
      await sleep(500);
      summary = await session.stop();
    }
    let kernel = 0;
    let got = 0;
    for (const p of session.probes.filter((q) => q.spec.startsWith('many_'))) {
      kernel += summary.kernelHits[p.event] ?? 0;
      got += received.get(p.event) ?? 0;
    }

    // What an edit cost before: the 100-probe session stopped and a 101-probe one started.
    const restart: number[] = [];
    for (let r = 0; r < Math.min(runs, 3); r++) {
      const s100 = await TraceSession.start({ target, index, specs: hundred });
      const t0 = performance.now();
      await s100.stop();
      const s101 = await TraceSession.start({ target, index, specs: [...hundred, extra[0]] });
      restart.push(performance.now() - t0);
      await s101.stop();
    }
    const m = median(add);
    return {
      rows: [
        [
          'add 1 probe to a session with 100 armed',
          ms(m),
          add.map((x) => x.toFixed(0)).join(' / '),
          '-',
          `session.add → armed, the 100 called all along; before: stop + restart with 101 = ${ms(median(restart))} (${restart
            .map((x) => x.toFixed(0))
            .join(' / ')}), all counts reset`,
        ],
      ],
      notes: [
        `add 1 to 100 armed: median ${ms(m)} — goal < 300 ms: ${m < 300 ? 'met' : 'NOT met'}`,
        `hits on the 100 while adding: kernel counted ${kernel}, received ${got}, lost ${kernel - got} (ring-buffer lost ${summary.lost}) — goal 0: ${kernel - got === 0 ? 'met' : 'NOT met'}`,
      ],
    };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

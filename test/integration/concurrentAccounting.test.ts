// kernelHits holds with other tracers at work: two sessions stop at once while an outside writer removes events
// defined before theirs and adds and removes others (which shifts uprobe_events against uprobe_profile between
// an agent's two reads). Each session must still get every one of its events' kernel counts, and
// received + lost = kernelHits for each event.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { appendFileSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { requireTracefs } from '../helpers/tracefs';
import { TracefsAgent } from '../../src/core/tracefs/agentClient';
import { lossReport } from '../../src/core/tracefs/loss';
import { ShellTarget, buildWorkload, collectHits, leftovers, runWorkload, ADD_SCHEMA } from './agentHarness';
import { plainData } from '../helpers/plain';

const EVENTS = 40;
const OUTSIDE = 400;
const N = 200;

test('two sessions and an outside writer at once: every event has its kernelHits, and received + lost = kernelHits', async (t) => {
  const tracefs = requireTracefs(t);
  if (!tracefs) return;
  const w = buildWorkload();
  const outside = `plouter_${process.pid}`;
  const uprobeEvents = join(tracefs, 'uprobe_events');
  // Events of another tracer, defined before the sessions' so that removing them shifts the sessions' lines.
  for (let i = 0; i < OUTSIDE; i++) appendFileSync(uprobeEvents, `p:${outside}/o${i} ${w.path}:${w.addOffset}\n`);
  const sessions = await Promise.all(
    [0, 1].map(async () => {
      const agent = await TracefsAgent.start(new ShellTarget(['dash']), {});
      const events = Array.from({ length: EVENTS }, (_, i) => ({ ...ADD_SCHEMA, event: `pl_add_${i}`, probe: `p${i}` }));
      const c = collectHits(agent, events);
      for (const e of events)
        await agent.define(`p:${agent.group}/${e.event} ${w.path}:${w.addOffset} a=%di:s32 b=%si:u64 s=+0(%dx):string`);
      await agent.arm();
      return { agent, events, ...c };
    }),
  );
  let writer: ReturnType<typeof spawn> | undefined;
  try {
    runWorkload(w, N);
    // The outside writer starts as the sessions stop, so its removals land while their agents read the files.
    writer = spawn(
      'sh',
      [
        '-c',
        // Remove the early events one by one, then keep adding and removing one at the end until killed.
        `for i in $(seq 0 ${OUTSIDE - 1}); do echo "-:${outside}/o$i" >> "$1" 2>/dev/null; done; ` +
          `i=0; while :; do echo "p:${outside}/x$i $2" >> "$1" 2>/dev/null; echo "-:${outside}/x$i" >> "$1" 2>/dev/null; i=$((i+1)); done`,
        'writer',
        uprobeEvents,
        `${w.path}:${w.addOffset}`,
      ],
      { stdio: 'ignore' },
    );
    const reports = await Promise.all(sessions.map((s) => s.agent.stop()));
    for (const [k, s] of sessions.entries()) {
      await s.ended;
      const report = reports[k];
      const loss = lossReport(s.parser.stats, report);
      let kernelTotal = 0;
      for (const e of s.events) {
        const kernel = report.kernelHits.get(e.event);
        assert.equal(kernel, N, `session ${k}: ${e.event} has its kernel count`);
        kernelTotal += kernel!;
      }
      assert.equal(s.hits.length + loss.lost, kernelTotal, `session ${k}: received + lost = kernelHits`);
      assert.equal(loss.unaccounted, 0, `session ${k}: nothing unaccounted`);
      await s.agent.exit;
      assert.deepEqual(plainData(leftovers(s.agent.group)), []);
    }
  } finally {
    if (writer) {
      const wr = writer;
      wr.kill('SIGKILL');
      await new Promise((r) => wr.once('exit', r));
    }
    // Whatever of the outside tracer's events is left.
    for (const line of readFileSync(uprobeEvents, 'utf8').split('\n')) {
      const m = /^[pr]:(\S+)\s/.exec(line);
      if (m && m[1].startsWith(`${outside}/`)) appendFileSync(uprobeEvents, `-:${m[1]}\n`);
    }
  }
});

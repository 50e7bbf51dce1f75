// The loss report behind the CLI summary's and the panel's "lost" and "unaccounted" figures: the per-CPU
// counters win over the stream's LOST lines when the agent reported them, and every hit the kernel counted
// is either received, lost or unaccounted, never silently gone.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { lossReport } from '../../../../src/core/tracefs/loss';
import type { CpuBufferStats, StopReport } from '../../../../src/core/tracefs/agentClient';
import type { ParserStats } from '../../../../src/core/tracefs/hitParser';

const parser = (hits: number, lost: number, malformed = 0): ParserStats => ({
  hits,
  lost,
  lostByCpu: new Map(lost ? [[0, lost]] : []),
  unparsed: 0,
  malformed,
});
const cpu = (overrun: number, dropped: number, commitOverrun = 0): CpuBufferStats => ({
  cpu: 0,
  entries: 0,
  overrun,
  dropped,
  commitOverrun,
});
const stop = (cpus: CpuBufferStats[], kernel: Record<string, number>): StopReport => ({
  cpus,
  kernelHits: new Map(Object.entries(kernel)),
});

test('a clean run: received plus lost is the kernel count, nothing unaccounted', () => {
  const r = lossReport(parser(90, 4), stop([cpu(6, 0), cpu(0, 4)], { f: 60, g: 40 }));
  assert.equal(r.lost, 10, 'the per-CPU counters: overrun 6 + dropped 4');
  assert.equal(r.streamLost, 4);
  assert.equal(r.overrun, 6);
  assert.equal(r.dropped, 4);
  assert.equal(r.unaccounted, 0);
  assert.equal(r.mismatch, 0);
  assert.equal(r.kernelHits.get('f'), 60);
});

test('without per-CPU counters the stream LOST lines are the loss', () => {
  const r = lossReport(parser(95, 5), stop([], { f: 100 }));
  assert.equal(r.lost, 5);
  assert.equal(r.unaccounted, 0);
});

test('hits neither received nor lost show as unaccounted, and as a mismatch unless the session filtered', () => {
  const unfiltered = lossReport(parser(70, 0), stop([cpu(0, 0, 2)], { f: 100 }));
  assert.equal(unfiltered.lost, 2, 'commit overruns count as lost');
  assert.equal(unfiltered.unaccounted, 28);
  assert.equal(unfiltered.mismatch, 28);
  // With --pid or --filter the kernel also counts what the filter dropped: only unreadable records are certain.
  const filtered = lossReport(parser(70, 0, 3), stop([cpu(0, 0, 2)], { f: 100 }), true);
  assert.equal(filtered.unaccounted, 28);
  assert.equal(filtered.mismatch, 3);
  // More records than the kernel counted is a mismatch too.
  assert.equal(lossReport(parser(12, 0), stop([cpu(0, 0)], { f: 10 })).mismatch, -2);
});

test("calls a kernel probe missed (kprobe_profile's second column) are lost, and leave the mismatch alone", () => {
  // 883 calls of do_sys_openat2 on a 1-CPU 5.10 kernel: its return probe recorded 714 and missed 169.
  const r = lossReport(parser(714 + 799, 0), {
    ...stop([cpu(0, 0)], { openat2: 799, openat2_ret: 714 }),
    kernelMissed: new Map([
      ['openat2', 84],
      ['openat2_ret', 169],
    ]),
  });
  assert.equal(r.lost, 84 + 169, 'every missed call counts as lost');
  assert.deepEqual(Object.fromEntries(r.missed), { openat2: 84, openat2_ret: 169 });
  assert.equal(r.unaccounted, 0, 'no hit the kernel counted is unaccounted: the misses were never hits');
  assert.equal(r.mismatch, 0);
});

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mergeSummaries } from '../../../../src/core/session/fanout';
import type { SessionSummary } from '../../../../src/core/session/traceSession';
import { describeMismatch } from '../../../../src/cli/commands/trace';
import { plainData } from '../../../helpers/plain';
import { addCall, emptyLatency, latencySummary, type Latency } from '../../../../src/core/session/latency';

const summary = (host: string, hits: number, mismatch: number): SessionSummary => ({
  host,
  hits: { f: hits },
  lost: 1,
  mismatch,
  kernelHits: { f: hits + 1 + mismatch },
  latency: {},
  timings: {},
  sites: {},
});

test("merged summaries: a host whose received + lost differs from the kernel's count says by how much", () => {
  const m = mergeSummaries([
    { host: 'a', summary: summary('a', 10, 0) },
    { host: 'b', summary: summary('b', 5, 3) },
    { host: 'c', error: new Error('unreachable') },
  ]);
  assert.equal(m.mismatch, 3);
  assert.deepEqual(plainData(m.hosts), { a: { ok: true }, b: { ok: true, mismatch: 3 }, c: { ok: false, error: 'unreachable' } });
  assert.deepEqual(plainData(m.kernelHits), { f: 20 });
  assert.equal(describeMismatch(3), 'mismatch: 3 events the kernel counted were neither received nor reported lost');
  assert.equal(describeMismatch(1), 'mismatch: 1 event the kernel counted was neither received nor reported lost');
  assert.equal(describeMismatch(-2), 'mismatch: 2 more records received than the kernel counted');
});

test("merged summaries add up per-site counts over hosts, and a latency is every host's calls together", () => {
  const site = (address: string) => ({ kind: 'entry' as const, address, file: '/w/a.c', line: 3 });
  const timed = (calls: number[]): Latency => {
    const l = emptyLatency();
    for (const ns of calls) addCall(l, ns);
    return l;
  };
  const one = (host: string, hits: number, calls: number[], sites: Array<[string, number]>): SessionSummary => ({
    host,
    hits: { f: hits },
    lost: 0,
    mismatch: 0,
    kernelHits: { f: hits },
    latency: { f: latencySummary(timed(calls)) },
    timings: { f: timed(calls) },
    sites: { f: sites.map(([a, n]) => ({ site: site(a), hits: n })) },
  });
  // A fast host with many calls and a slow one with a few: the worst host's p50 (40 µs) is not the trace's.
  const fast = Array.from({ length: 90 }, (_, i) => 1000 + i * 10);
  const slow = Array.from({ length: 10 }, (_, i) => 40_000 + i * 1000);
  const m = mergeSummaries([
    { host: 'a', summary: one('a', 5, fast, [['0x10', 5]]) },
    {
      host: 'b',
      summary: one('b', 7, slow, [
        ['0x20', 3],
        ['0x10', 4],
      ]),
    },
  ]);
  assert.deepEqual(plainData(m.sites.f.map((s) => [s.site.address, s.hits])), [
    ['0x10', 9],
    ['0x20', 3],
  ]);
  assert.deepEqual(plainData(m.latency.f), plainData(latencySummary(timed([...fast, ...slow]))));
  assert.equal(m.latency.f.count, 100);
  assert.equal(m.latency.f.max, 49_000);
  assert.ok(m.latency.f.p50 < 2000, `p50 ${m.latency.f.p50} is the fast host's calls' middle`);
  assert.ok(m.latency.f.p99 >= 40_000, `p99 ${m.latency.f.p99} among the slow host's calls`);
});

test('in-kernel figures merge with the path they came by, and each host keeps its own threads', () => {
  const s = (host: string, pid: number): SessionSummary => ({
    host,
    hits: { f: 3 },
    lost: 0,
    mismatch: 0,
    kernelHits: { f: 3 },
    latency: {},
    timings: {},
    sites: {},
    aggregated: 'kernel',
    pids: { f: [{ pid, hits: 3 }] },
  });
  const m = mergeSummaries([
    { host: 'a', summary: s('a', 10) },
    { host: 'b', summary: s('b', 10) },
  ]);
  assert.equal(m.aggregated, 'kernel');
  assert.equal(m.hits.f, 6);
  assert.deepEqual(plainData(m.pids), {
    f: [
      { host: 'a', pid: 10, hits: 3 },
      { host: 'b', pid: 10, hits: 3 },
    ],
  });
  const streamed = mergeSummaries([{ host: 'a', summary: { ...s('a', 1), aggregated: undefined, pids: undefined } }]);
  assert.equal(streamed.aggregated, undefined);
  assert.equal(streamed.pids, undefined);
});

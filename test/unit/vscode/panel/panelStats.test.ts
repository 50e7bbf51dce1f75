// The panel's figures from several sessions' aggregates, less the baseline a clear took.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { Aggregates } from '../../../../src/core/session/aggregates';
import type { Hit } from '../../../../src/shared/hit';
import type { Site } from '../../../../src/shared/site';
import { panelStats, tally } from '../../../../src/vscode/panel/panelStats';
import { plainData } from '../../../helpers/plain';

const SITE: Site = { kind: 'entry', address: '0x10' };

/** A session on `host` that saw `calls` calls of f, each `ns` long, through SITE. */
function session(host: string, calls: number, ns: number, from = 0): Aggregates {
  const agg = new Aggregates(new Map(), [{ entry: 'f', exit: 'f__return' }]);
  add(agg, host, calls, ns, from);
  return agg;
}

function add(agg: Aggregates, host: string, calls: number, ns: number, from = 0): void {
  for (let i = from; i < from + calls; i++) {
    const e: Hit = { host, probe: 'f', event: 'f', kind: 'entry', pid: 1, tid: 1, comm: 'c', cpu: 0, ts: i, args: { i }, site: SITE };
    agg.add(e);
    agg.add({ ...e, probe: 'f__return', event: 'f__return', kind: 'return', args: {}, retval: i, ts: i + ns / 1e9 });
  }
}

test('sessions sum: counts, one row per site, latency buckets, lost', () => {
  const a = session('h1', 3, 1000);
  const b = session('h2', 2, 5000, 10);
  b.addLost(4);
  const st = panelStats(tally([a.snapshot(), b.snapshot()]), undefined, { mismatch: 0, historyDropped: 0 });
  assert.deepEqual(plainData(st.counts), { f: 5, f__return: 5 });
  assert.equal(st.lost, 4);
  assert.deepEqual(
    plainData(st.sites.f.map((s) => [s.site.address, s.count, s.lastArgs, s.latencyCount, s.latencySumNs, s.latencyMaxNs])),
    [['0x10', 5, 'i=11', 5, 13000, 5000]],
    'the newest hit is the latest',
  );
  assert.deepEqual(plainData(st.sites.f__return[0].lastRet), '11');
  assert.deepEqual(plainData([st.latency.f.count, st.latency.f.maxNs, st.latency.f.buckets.length]), [5, 5000, 13]);
  assert.equal(st.latency.f.buckets[9], 3, '1000 ns is in [512, 1024)');
  assert.equal(st.latency.f.buckets[12], 2, '5000 ns is in [4096, 8192)');
});

test('a baseline subtracts exactly, bounds a maximum reached before it, and drops what did not move', () => {
  const a = session('h1', 3, 3000);
  const base = tally([a.snapshot()]);
  const none = panelStats(tally([a.snapshot()]), base, { mismatch: 0, historyDropped: 0 });
  assert.deepEqual(plainData([none.counts, none.sites, none.latency, none.lost]), [{}, {}, {}, 0]);
  add(a, 'h1', 2, 300, 10);
  const st = panelStats(tally([a.snapshot()]), base, { mismatch: 2, historyDropped: 1 });
  assert.deepEqual(plainData(st.counts), { f: 2, f__return: 2 });
  assert.deepEqual(plainData([st.mismatch, st.historyDropped]), [2, 1]);
  assert.deepEqual(plainData(st.sites.f.map((s) => [s.count, s.latencyCount, s.latencySumNs])), [[2, 2, 600]]);
  // 3000 ns before the clear; since, two calls of 300 ns in [256, 512): the bucket's top bounds the maximum.
  assert.deepEqual(plainData([st.latency.f.count, st.latency.f.maxNs]), [2, 511]);
  assert.equal(st.sites.f[0].latencyMaxNs, 511);
  add(a, 'h1', 1, 9000, 20);
  assert.equal(panelStats(tally([a.snapshot()]), base, { mismatch: 0, historyDropped: 0 }).latency.f.maxNs, 9000, 'a new maximum is exact');
});

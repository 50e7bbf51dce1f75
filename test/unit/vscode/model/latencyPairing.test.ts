import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { Hit } from '../../../../src/core/tracefs/hitParser';
import { LatencyPairer, type PairInfo } from '../../../../src/vscode/model/latencyPairing';

const info: Record<string, PairInfo> = {
  f: { pairKey: 'f@1', pairBy: 'tid', kind: 'entry' },
  f_ret: { pairKey: 'f@1', pairBy: 'tid', kind: 'return' },
  g: { pairKey: 'g@2', pairBy: 'goroutine', kind: 'entry' },
  g_ret: { pairKey: 'g@2', pairBy: 'goroutine', kind: 'return' },
};
const hit = (event: string, tid: number, ts: number): Hit => ({
  host: 'h',
  probe: event,
  event,
  kind: info[event].kind as Hit['kind'],
  pid: 1,
  tid,
  comm: 'c',
  cpu: 0,
  ts,
  args: {},
});

test('returns pair with the newest entry of the same thread; recursion pairs inner calls first', () => {
  const p = new LatencyPairer((e) => info[e]);
  assert.equal(p.latencyNs(hit('f', 1, 1.0)), undefined);
  assert.equal(p.latencyNs(hit('f', 2, 1.5)), undefined);
  assert.equal(p.latencyNs(hit('f', 1, 2.0)), undefined);
  assert.equal(p.latencyNs(hit('f_ret', 1, 2.000003)), 3000);
  assert.equal(p.latencyNs(hit('f_ret', 1, 3.0)), 2e9);
  assert.equal(p.latencyNs(hit('f_ret', 2, 1.6)), 1e8);
  assert.equal(p.latencyNs(hit('f_ret', 1, 4.0)), undefined, 'a return without an open entry has no latency');
});

test('goroutine-paired (Go) probes get none here', () => {
  const p = new LatencyPairer((e) => info[e]);
  p.latencyNs(hit('g', 1, 1));
  assert.equal(p.latencyNs(hit('g_ret', 1, 2)), undefined);
});

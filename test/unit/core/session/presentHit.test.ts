// presentHit: a record's hit as the user sees it — named by its probe, visible arguments only, every other field kept.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { Hit } from '../../../../src/shared/hit';
import type { CompiledProbe } from '../../../../src/core/probes/compiler';
import { presentHit } from '../../../../src/core/session/points';
import { plainData } from '../../../helpers/plain';

const probe = {
  event: 'pl_f_3',
  group: 'g',
  kind: 'entry',
  spec: 'f x',
  address: 0x40n,
  fileOffset: 0x40n,
  args: [
    { name: 'x', type: 's32', fetch: '%di' },
    { name: 'probelens_comm', type: 'string', fetch: '$comm', hidden: true },
  ],
  pairBy: 'tid',
  warnings: [],
} as unknown as CompiledProbe;

test('every field of the hit is kept (a field added to Hit makes this fixture fail to compile until it is covered)', () => {
  const full: Required<Hit> = {
    host: 'h',
    probe: 'pl_f_3',
    kind: 'entry',
    pid: 10,
    nsPid: 2,
    tid: 11,
    comm: '<...>',
    cpu: 1,
    ts: 5.25,
    args: { x: -3, probelens_comm: 'worker' },
    retval: 7,
    latencyNs: 99,
    site: { kind: 'entry', address: '0x40' },
    caller: 'main',
    unavailable: { y: 'optimized out' },
    inferred: ['z'],
    cut: ['s'],
    event: 'pl_f_3',
  };
  const out = presentHit(full, probe, 'f');
  assert.deepEqual(plainData(out), {
    ...full,
    probe: 'f',
    comm: 'worker',
    args: { x: -3 },
  });
  assert.deepEqual(plainData(Object.keys(out).sort()), Object.keys(full).sort());
});

test('optional fields the hit lacks stay absent; the probe name defaults to its event', () => {
  const bare: Hit = { host: 'h', probe: 'e', kind: 'entry', pid: 1, tid: 1, comm: 'app', cpu: 0, ts: 1, args: { x: 4 }, event: 'e' };
  const out = presentHit(bare, probe);
  assert.deepEqual(plainData(out), { ...bare, probe: 'pl_f_3', event: 'pl_f_3' });
  assert.ok(!('retval' in out) && !('site' in out) && !('latencyNs' in out));
});

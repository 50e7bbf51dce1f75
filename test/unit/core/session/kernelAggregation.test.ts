import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { CompiledProbe } from '../../../../src/core/probes/compiler';
import { histEvents, kernelFigures, planHist, readPeriodically } from '../../../../src/core/session/kernelAggregation';
import { Aggregates } from '../../../../src/core/session/aggregates';
import { plainData } from '../../../helpers/plain';

const G = 'probelens_1_4_effffffc_abc';

/** A probe point as the session holds it: only what the plan reads. */
function point(event: string, o: Partial<CompiledProbe> & { tracefsEvent?: string; site?: CompiledProbe['site'] }): CompiledProbe {
  return {
    event,
    spec: o.spec ?? event,
    kind: o.kind ?? 'entry',
    args: o.args ?? [],
    pairKey: o.pairKey,
    pairBy: o.pairBy,
    site: o.site,
    function: o.function,
    definition: { event: o.tracefsEvent ?? event },
  } as unknown as CompiledProbe;
}

const SITE = [{ name: 'probelens_site', fetch: '\\0', type: 'u32', hidden: true }] as unknown as CompiledProbe['args'];
const entry0 = point('f', { args: SITE, pairKey: 'f@0x10', site: { kind: 'entry', address: '0x10' } });
const entry1 = point('f_inlined_0x40', { tracefsEvent: 'f', args: SITE, site: { kind: 'inlined', address: '0x40', caller: 'main' } });
const ret = point('f_return', { kind: 'return', pairKey: 'f@0x10', spec: 'f%return' });
const other = point('g', {});
const points = new Map<string, CompiledProbe[]>([
  ['f', [entry0, entry1]],
  ['f_return', [ret]],
  ['g', [other]],
]);
const name = (p: CompiledProbe): string => (p.definition.event === 'f' ? 'f' : p.event);

test('the plan: a count per event (per point where records name it), and one synthetic latency event per timed pair', () => {
  const plan = planHist(G, points, name);
  assert.deepEqual(plainData(plan.synths), [`${G}_l0`]);
  assert.deepEqual(plainData(plan.triggers), [
    { event: 'f', trigger: 'hist:keys=common_pid,probelens_site:vals=hitcount' },
    { event: 'f_return', trigger: 'hist:keys=common_pid:vals=hitcount' },
    { event: 'g', trigger: 'hist:keys=common_pid:vals=hitcount' },
    // The variable before its reader, the synthetic event's buckets last.
    { event: 'f', trigger: 'hist:keys=common_pid:ts0=common_timestamp:clock=mono' },
    { event: 'f_return', trigger: `hist:keys=common_pid:lat=common_timestamp-$ts0:clock=mono:onmatch(${G}.f).trace(${G}_l0,$lat)` },
    { event: `${G}_l0`, trigger: 'hist:keys=lat.log2:vals=hitcount' },
  ]);
  assert.deepEqual(plainData(histEvents(plan)), ['f', 'f_return', 'g', `${G}_l0`]);
  assert.equal(plan.latencyOf.get(`${G}_l0`), 'f');
});

test('Go pairs (by goroutine) are not timed in the kernel, and say so', () => {
  const go = new Map<string, CompiledProbe[]>([
    ['h', [point('h', { pairKey: 'h@1', pairBy: 'goroutine' })]],
    ['h_return', [point('h_return', { kind: 'return', pairKey: 'h@1', pairBy: 'goroutine' })]],
  ]);
  const plan = planHist(G, go, (p) => p.event);
  assert.deepEqual(plainData(plan.synths), []);
  assert.deepEqual(plainData(plan.untimed), ['h']);
});

test("the kernel's tables become counts per probe, site and thread, and latency buckets, in the aggregates' summary", () => {
  const plan = planHist(G, points, name);
  const hist = new Map<string, string[]>([
    [
      'f',
      [
        '# trigger info: hist:keys=common_pid,probelens_site:vals=hitcount:sort=hitcount:size=2048 [active]',
        '{ common_pid:        195, probelens_site:          0 } hitcount:        200',
        '{ common_pid:        195, probelens_site:          1 } hitcount:          5',
        '{ common_pid:        201, probelens_site:          0 } hitcount:          7',
        '    Dropped: 1',
        '# trigger info: hist:keys=common_pid:vals=hitcount:ts0=common_timestamp:sort=hitcount:size=2048:clock=mono [active]',
        '{ common_pid:        195 } hitcount:        205',
        '{ common_pid:        201 } hitcount:          7',
      ],
    ],
    [
      'f_return',
      ['# trigger info: hist:keys=common_pid:vals=hitcount:sort=hitcount:size=2048 [active]', '{ common_pid: 195 } hitcount: 200'],
    ],
    [
      `${G}_l0`,
      [
        '# trigger info: hist:keys=lat.log2:vals=hitcount:sort=hitcount:size=2048 [active]',
        '{ lat: ~ 2^15 } hitcount:        150',
        '{ lat: ~ 2^12 } hitcount:         50',
        '{ lat: ~ 2^18446744073709551615 } hitcount: 1',
      ],
    ],
  ]);
  const k = kernelFigures(hist, plan, points, name);
  assert.equal(k.dropped, 1);
  const agg = new Aggregates();
  assert.equal(agg.path, 'stream');
  agg.setKernel(k);
  assert.equal(agg.path, 'kernel');
  const s = agg.summary();
  assert.equal(s.aggregated, 'kernel');
  assert.deepEqual(plainData(s.hits), { f: 212, f_return: 200 }, 'the entry-time table is not counted again');
  assert.deepEqual(plainData(s.sites.f), [
    { site: { kind: 'entry', address: '0x10' }, hits: 207 },
    { site: { kind: 'inlined', address: '0x40', caller: 'main' }, hits: 5 },
  ]);
  assert.deepEqual(plainData(s.pids?.f), [
    { pid: 195, hits: 205 },
    { pid: 201, hits: 7 },
  ]);
  // ~2^12 holds (2^11, 2^12]: bucket 11; a latency of 0 ns (the kernel's huge exponent) is bucket 0.
  const lat = s.latency.f;
  assert.equal(lat.count, 201);
  assert.equal(lat.log2[11], 50);
  assert.equal(lat.log2[14], 150);
  assert.equal(lat.log2[0], 1);
  assert.equal(lat.log2.length, 15);
  // Percentiles and the maximum are the upper ends of their buckets.
  assert.equal(lat.p50, 2 ** 15);
  assert.equal(lat.max, 2 ** 15);
});

test('before any call has returned, the kernel path has counts but no latency, as a streamed session has none', () => {
  const plan = planHist(G, points, name);
  const hist = new Map<string, string[]>([
    [
      'f',
      [
        '# trigger info: hist:keys=common_pid,probelens_site:vals=hitcount:sort=hitcount:size=2048 [active]',
        '{ common_pid: 9, probelens_site: 0 } hitcount: 1',
      ],
    ],
    [`${G}_l0`, ['# trigger info: hist:keys=lat.log2:vals=hitcount:sort=hitcount:size=2048 [active]', '    Hits: 0']],
  ]);
  const agg = new Aggregates();
  agg.setKernel(kernelFigures(hist, plan, points, name));
  const s = agg.summary();
  assert.deepEqual(plainData(s.hits), { f: 1 });
  assert.deepEqual(plainData(s.latency), {});
});

test('the hist files are read periodically while armed, one reading at a time, until stopped', async () => {
  const plan = planHist(G, points, name);
  const asked: string[][] = [];
  let release: () => void = () => undefined;
  const agent = {
    readHist: (events: readonly string[]) => {
      asked.push([...events]);
      return new Promise<Map<string, string[]>>((res) => (release = () => res(new Map([['f', []]]))));
    },
  };
  let armed = true;
  const got: number[] = [];
  const stop = readPeriodically(
    agent,
    plan,
    2,
    () => armed,
    (h) => void got.push(h.size),
  );
  const waitFor = async (ok: () => boolean) => {
    for (let i = 0; i < 5000 && !ok(); i++) await new Promise((r) => setTimeout(r, 2));
    assert.ok(ok());
  };
  await waitFor(() => asked.length === 1);
  // A reading that has not answered is not asked again, however long it takes.
  await new Promise((r) => setTimeout(r, 50));
  assert.equal(asked.length, 1);
  assert.deepEqual(plainData(asked[0]), ['f', 'f_return', 'g', `${G}_l0`]);
  release();
  await waitFor(() => got.length === 1 && asked.length === 2);
  // Once no longer armed, what still answers is dropped and nothing more is asked.
  armed = false;
  release();
  await new Promise((r) => setTimeout(r, 50));
  assert.equal(got.length, 1);
  assert.equal(asked.length, 2);
  stop();
});

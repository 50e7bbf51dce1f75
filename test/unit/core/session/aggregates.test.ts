import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Aggregates } from '../../../../src/core/session/aggregates';
import { percentiles } from '../../../../src/core/session/latency';
import type { Hit } from '../../../../src/core/tracefs/hitParser';
import { plainData } from '../../../helpers/plain';

function hit(probe: string, ts: number, extra: Partial<Hit> = {}): Hit {
  return { host: 'h', probe, kind: 'entry', pid: 10, tid: 10, comm: 'c', cpu: 0, ts, args: {}, event: probe, ...extra };
}

test('counts per probe and per source line; last N values per argument', () => {
  const sites = new Map([
    ['f', { file: '/src/a.c', line: 12 }],
    ['g', { file: '/src/a.c', line: 12 }],
  ]);
  const agg = new Aggregates(sites, [], { lastN: 3 });
  for (let i = 0; i < 5; i++) agg.add(hit('f', i, { args: { x: i, s: `v${i}` } }));
  agg.add(hit('g', 9, { args: {} }));
  agg.add(hit('h', 10, { args: {} }));
  const s = agg.snapshot();
  assert.deepEqual(plainData(s.hits), { f: 5, g: 1, h: 1 });
  assert.deepEqual(plainData(s.lines), { '/src/a.c:12': 6 });
  assert.deepEqual(plainData(s.last.f.map((h) => [h.ts, h.args.x])), [
    [2, 2],
    [3, 3],
    [4, 4],
  ]);
  assert.deepEqual(plainData(s.last.f.map((h) => h.args.s)), ['v2', 'v3', 'v4']);
});

test('latency pairs per thread, with recursion on a stack, and ignores returns without an entry', () => {
  const agg = new Aggregates(new Map(), [{ entry: 'f', exit: 'f%return' }]);
  agg.add(hit('f%return', 0.5, { kind: 'return', retval: 1 }));
  agg.add(hit('f', 1.0, { tid: 11 }));
  agg.add(hit('f', 1.0, { tid: 12 }));
  agg.add(hit('f', 1.000002, { tid: 11 })); // recursive call on thread 11
  agg.add(hit('f%return', 1.000003, { tid: 11, kind: 'return' })); // inner: 1 µs
  agg.add(hit('f%return', 1.00001, { tid: 12, kind: 'return' })); // 10 µs
  agg.add(hit('f%return', 1.0001, { tid: 11, kind: 'return' })); // outer: 100 µs
  const s = agg.snapshot();
  assert.equal(s.unpairedReturns, 1);
  const l = s.latency.f;
  assert.equal(l.count, 3);
  assert.equal(Math.round(l.max), 100_000);
  assert.equal(Math.round(l.min), 1000);
  const p50 = percentiles(l).p50;
  assert.ok(Math.abs(p50 - 10_000) / 10_000 < 0.07, `p50 ${p50}`);
  assert.equal(
    l.log2.reduce((a, b) => a + b, 0),
    3,
  );
  assert.equal(l.log2[Math.floor(Math.log2(10_000))], 1);
  assert.deepEqual(plainData(s.last['f%return'].flatMap((h) => (h.retval === undefined ? [] : [h.retval]))), [1]);
  const sum = agg.summary();
  assert.deepEqual(plainData(sum.hits), { f: 3, 'f%return': 4 });
  assert.deepEqual(plainData(Object.keys(sum.latency.f)), ['count', 'p50', 'p90', 'p99', 'max', 'log2']);
  assert.equal(sum.latency.f.max, 100_000);
  assert.equal(sum.latency.f.count, l.count);
  // The summary's buckets are the snapshot's, without trailing empty ones.
  const used = l.log2.reduce((last, n, i) => (n > 0 ? i + 1 : last), 0);
  assert.deepEqual(plainData(sum.latency.f.log2), l.log2.slice(0, used));
});

test('Go: pairs by goroutine across threads and across several RET probes', () => {
  const agg = new Aggregates(new Map(), [{ entry: 'main.work', exit: ['main.work%ret0', 'main.work%ret1'], by: 'g' }]);
  agg.add(hit('main.work', 1, { tid: 1, args: { g: '0xc000001' } }));
  agg.add(hit('main.work', 1, { tid: 1, args: { g: '0xc000002' } }));
  // goroutine 1 resumes on another thread and leaves through the second RET
  agg.add(hit('main.work%ret1', 1.000005, { tid: 2, args: { g: '0xc000001' } }));
  agg.add(hit('main.work%ret0', 1.00005, { tid: 3, args: { g: '0xc000002' } }));
  const l = agg.snapshot().latency['main.work'];
  assert.equal(l.count, 2);
  assert.equal(Math.round(l.min), 5000);
  assert.equal(Math.round(l.max), 50_000);
});

test('percentiles stay within the histogram resolution over many values', () => {
  const agg = new Aggregates(new Map(), [{ entry: 'f', exit: 'r' }]);
  let ts = 0;
  for (let i = 1; i <= 1000; i++) {
    agg.add(hit('f', ts));
    ts += i * 1e-6; // i µs
    agg.add(hit('r', ts));
    ts += 1;
  }
  const l = agg.snapshot().latency.f;
  const p = percentiles(l);
  for (const [got, want] of [
    [p.p50, 500_000],
    [p.p90, 900_000],
    [p.p99, 990_000],
  ]) {
    assert.ok(Math.abs(got - want) / want < 0.07, `${got} vs ${want}`);
  }
  assert.equal(Math.round(l.max), 1_000_000);
});

test('memory stays bounded: deep recursion and many threads never grow the open-entry state past the caps', () => {
  const agg = new Aggregates(new Map(), [{ entry: 'f', exit: 'r' }], { maxDepth: 4, maxKeys: 8 });
  for (let i = 0; i < 100; i++) agg.add(hit('f', i, { tid: 1 }));
  for (let t = 0; t < 1000; t++) agg.add(hit('f', 1, { tid: 100 + t }));
  // thread 1 was the least recently active: evicted, so its return is unpaired
  agg.add(hit('r', 200, { tid: 1 }));
  assert.equal(agg.snapshot().unpairedReturns, 1);
  // the 8 most recent threads still pair; each had depth 1
  for (let t = 992; t < 1000; t++) agg.add(hit('r', 2, { tid: 100 + t }));
  assert.equal(agg.snapshot().latency.f.count, 8);
  agg.add(hit('r', 2, { tid: 100 + 991 }));
  assert.equal(agg.snapshot().unpairedReturns, 2);
});

test("add() returns each paired return's latency, per thread and per goroutine (the one pairing the panel and CLI use)", () => {
  const agg = new Aggregates(new Map(), [
    { entry: 'c', exit: 'c%return' },
    { entry: 'g', exit: ['g%ret0', 'g%ret1'], by: 'probelens_g' },
  ]);
  assert.equal(agg.add(hit('c', 1.0)), undefined, 'an entry has no latency');
  assert.equal(agg.add(hit('c%return', 1.000003, { kind: 'return' })), 3000);
  assert.equal(agg.add(hit('c%return', 1.1, { kind: 'return' })), undefined, 'a return without its entry has none');
  // A goroutine that migrates from thread 20 to thread 21 between entry and return still pairs.
  assert.equal(agg.add(hit('g', 2.0, { tid: 20 }), { probelens_g: '0xc000001' }), undefined);
  assert.equal(agg.add(hit('g', 2.0, { tid: 20 }), { probelens_g: '0xc000002' }), undefined);
  assert.equal(agg.add(hit('g%ret1', 2.000005, { tid: 21, kind: 'return' }), { probelens_g: '0xc000001' }), 5000);
  assert.equal(agg.add(hit('g%ret0', 2.00001, { tid: 22, kind: 'return' }), { probelens_g: '0xc000002' }), 10000);
  assert.equal(agg.snapshot().latency.g.count, 2);
});

test('a probe counts over all its events; each site of it counts its own hits, keeps its latest hit and the latency of the calls entered through it', () => {
  const entry = { kind: 'entry' as const, address: '0x1000' };
  const inl = { kind: 'inlined' as const, address: '0x2000', caller: 'main' };
  // One probe (`f`) armed as one event per site; its returns (`f__return`) are another probe, paired per site.
  const agg = new Aggregates(new Map([['f_inlined_2000', { file: '/src/a.c', line: 3 }]]), [
    { entry: 'f', exit: 'f__return' },
    { entry: 'f_inlined_2000', exit: 'f_inlined_2000__return' },
  ]);
  const at = (event: string, ts: number, site: typeof entry | typeof inl, extra: Partial<Hit> = {}) =>
    hit(event.endsWith('__return') ? 'f__return' : 'f', ts, { event, site, ...extra });
  agg.add(at('f', 1, entry, { args: { n: 1 } }));
  agg.add(at('f__return', 1.000002, entry, { kind: 'return', retval: 7 }));
  agg.add(at('f_inlined_2000', 2, { ...inl }, { args: { n: 2 } }));
  agg.add(at('f_inlined_2000', 3, inl, { args: { n: 3 }, tid: 11 }));
  agg.add(at('f_inlined_2000__return', 3.000005, inl, { kind: 'return', tid: 11 }));
  const s = agg.snapshot();
  assert.deepEqual(plainData(s.hits), { f: 3, f__return: 2 });
  assert.deepEqual(plainData(s.lines), { '/src/a.c:3': 2 }, 'source lines count by event');
  assert.deepEqual(
    plainData(s.sites.f.map((x) => [x.site.address, x.hits, x.last?.args.n, x.latency?.count, x.latency?.sum])),
    [
      ['0x1000', 1, 1, 1, 2000],
      ['0x2000', 2, 3, 1, 5000],
    ],
    'an equal site from another object is the same site',
  );
  assert.equal(s.latency.f.count, 2, "latency counts under the entry's probe");
  assert.equal(s.latency.f.sum, 7000);
  assert.equal(s.latency.f__return, undefined);
  assert.deepEqual(plainData(s.sites.f__return.map((x) => [x.site.address, x.hits, x.last?.retval, x.latency])), [
    ['0x1000', 1, 7, undefined],
    ['0x2000', 1, undefined, undefined],
  ]);
  assert.deepEqual(plainData(agg.summary().hits), { f: 3, f__return: 2 });
});

test("the kernel's figures are what the snapshot shows once handed in: the summary's counts, sites and latency, no hits to list", () => {
  const agg = new Aggregates();
  const entry = { kind: 'entry' as const, address: '0x10' };
  const inl = { kind: 'inlined' as const, address: '0x40', caller: 'main' };
  const log2 = new Array<number>(16).fill(0);
  log2[11] = 50;
  log2[14] = 150;
  agg.setKernel({
    counts: [
      { event: 'f', point: 0, probe: 'f', site: entry, tid: 7, hits: 200 },
      { event: 'f', point: 1, probe: 'f', site: inl, tid: 7, hits: 5 },
      { event: 'f', point: 0, probe: 'f', site: entry, tid: 8, hits: 7 },
    ],
    latency: { f: log2 },
    dropped: 3,
  });
  const s = agg.snapshot();
  const sum = agg.summary();
  assert.deepEqual(plainData(s.hits), { f: 212 });
  assert.deepEqual(plainData(s.hits), plainData(sum.hits));
  assert.deepEqual(plainData(s.sites.f), [
    { site: entry, hits: 207 },
    { site: inl, hits: 5 },
  ]);
  assert.deepEqual(plainData(s.last), {});
  assert.equal(s.lost, 3);
  const l = s.latency.f;
  assert.deepEqual(plainData([l.count, percentiles(l).p50, percentiles(l).p99, l.max, l.min]), [
    sum.latency.f.count,
    sum.latency.f.p50,
    sum.latency.f.p99,
    sum.latency.f.max,
    2 ** 11,
  ]);
  assert.equal(l.sum, 50 * 2 ** 11 + 150 * 2 ** 14, "each call at its bucket's lower end");
});

test('one site object in hits of two probes counts under each probe; an equal site object is the same site', () => {
  const agg = new Aggregates();
  const site = { kind: 'entry' as const, address: '0x401000' };
  for (let i = 0; i < 6; i++) agg.add(hit(i % 3 === 0 ? 'g' : 'f', i, { site: i === 4 ? { ...site } : site }));
  const s = agg.summary();
  assert.deepEqual(plainData(s.hits), { f: 4, g: 2 });
  assert.deepEqual(
    plainData(Object.fromEntries(Object.entries(s.sites).map(([p, list]) => [p, list.map((x) => [x.site.address, x.hits])]))),
    {
      g: [['0x401000', 2]],
      f: [['0x401000', 4]],
    },
  );
});

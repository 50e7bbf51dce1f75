import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { Hit } from '../../../../src/shared/hit';
import { decodeHits, type ToWebview } from '../../../../src/shared/protocol';
import { Aggregates, type LatencyPair } from '../../../../src/core/session/aggregates';
import { fakeClock } from '../../../helpers/fakeClock';
import { PanelFeed } from '../../../../src/vscode/panel/panelFeed';
import { plainData } from '../../../helpers/plain';

function hits(from: number, count: number): Hit[] {
  return Array.from({ length: count }, (_, k) => {
    const i = from + k;
    return {
      host: 'local',
      probe: i % 2 ? 'sub' : 'add',
      kind: i % 2 ? 'return' : 'entry',
      pid: 1,
      tid: 1,
      comm: 'calc',
      cpu: 0,
      ts: i,
      args: { i },
      event: i % 2 ? 'sub' : 'add',
      ...(i % 2 ? { retval: -1, latencyNs: 1000 * (i + 1) } : {}),
    };
  });
}

/** A session as the host sees it: its aggregates count each hit (the panel reads them), then the hit is posted. */
function session(feed: PanelFeed, pairs: LatencyPair[] = []): { agg: Aggregates; post: (hs: Hit[]) => void } {
  const agg = new Aggregates(new Map(), pairs);
  feed.watch(agg);
  return {
    agg,
    post: (hs) => {
      for (const h of hs) {
        const latencyNs = agg.add(h);
        if (latencyNs !== undefined) h.latencyNs = latencyNs;
      }
      feed.post(hs);
    },
  };
}

const hitsIn = (msgs: ToWebview[]): Hit[] => msgs.flatMap((m) => (m.type === 'hits' ? decodeHits(m.batch) : []));

test('ready replays init then the history, and later hits arrive batched with stats', () => {
  const feed = new PanelFeed({ version: '9.9.9', flushIntervalMs: 60_000, maxBatch: 4 });
  feed.setProbes([{ name: 'add', file: '/src/calc.c', line: 3 }]);
  const { agg, post } = session(feed);
  post(hits(0, 6));
  agg.addLost(7);
  feed.setMismatch(-2);
  const msgs: ToWebview[] = [];
  feed.attach((m) => msgs.push(m));
  const init = msgs[0];
  assert.equal(init.type, 'init');
  if (init.type !== 'init') return;
  assert.equal(init.snapshotRows, 6);
  assert.deepEqual(plainData(init.probes), [{ name: 'add', file: '/src/calc.c', line: 3 }]);
  assert.deepEqual(plainData(init.stats.counts), { add: 3, sub: 3 });
  assert.equal(init.stats.lost, 7);
  assert.equal(init.stats.mismatch, -2);
  assert.deepEqual(plainData(hitsIn(msgs)), hits(0, 6));
  msgs.length = 0;
  post(hits(6, 3));
  assert.equal(msgs.length, 0, 'below maxBatch and before the timer: nothing sent yet');
  post(hits(9, 1));
  assert.deepEqual(plainData(hitsIn(msgs)), hits(6, 4), 'a full batch goes at once');
  assert.ok(msgs.some((m) => m.type === 'stats'));
  feed.dispose();
});

test('probes and session go to the webview only when they change (the live timer sets them every refresh)', () => {
  const feed = new PanelFeed({ version: 'x' });
  const msgs: ToWebview[] = [];
  feed.attach((m) => msgs.push(m));
  msgs.length = 0;
  const probes = [{ name: 'add', file: '/src/calc.c', line: 3 }];
  for (let i = 0; i < 3; i++) {
    feed.setProbes(probes.map((p) => ({ ...p })));
    feed.setSession({ state: 'tracing', detail: 'local' });
  }
  assert.deepEqual(plainData(msgs.map((m) => m.type)), ['probes', 'session']);
  feed.setProbes([...probes, { name: 'sub', file: '/src/calc.c', line: 7 }]);
  feed.setSession({ state: 'stopped', detail: 'local' });
  assert.deepEqual(plainData(msgs.map((m) => m.type)), ['probes', 'session', 'probes', 'session']);
  feed.dispose();
});

test('the timer flushes a partial batch', async () => {
  const feed = new PanelFeed({ version: 'x', flushIntervalMs: 5 });
  const msgs: ToWebview[] = [];
  feed.attach((m) => msgs.push(m));
  feed.post(hits(0, 2));
  await new Promise((r) => setTimeout(r, 50));
  assert.deepEqual(plainData(hitsIn(msgs)), hits(0, 2));
  feed.dispose();
});

test('by default a hit waits at most 25 ms for its batch: the panel row follows the hit closely', async () => {
  const feed = new PanelFeed({ version: 'x' });
  const msgs: ToWebview[] = [];
  feed.attach((m) => msgs.push(m));
  feed.post(hits(0, 1));
  // Timers fire in the order they expire, however busy the machine: the feed's (25 ms) before this one (26 ms).
  await new Promise((r) => setTimeout(r, 26));
  assert.deepEqual(plainData(hitsIn(msgs)), hits(0, 1));
  feed.dispose();
});

test('batching by time: a hit after a quiet spell goes at once, a stream of hits in one batch per interval, none waiting longer', () => {
  const clock = fakeClock();
  const feed = new PanelFeed({ version: 'x', clock });
  const sent: Array<[number, number]> = [];
  feed.attach((m) => {
    if (m.type === 'hits') sent.push([clock.now(), m.batch.n]);
  });
  // The webview draws what it is sent within the millisecond (flow control: see the test below).
  const step = (ms: number) => {
    for (let i = 0; i < ms; i++) {
      feed.drawn(Number.MAX_SAFE_INTEGER);
      clock.advance(1);
    }
    feed.drawn(Number.MAX_SAFE_INTEGER);
    clock.advance(0);
  };
  clock.advance(1000);
  feed.post(hits(0, 1));
  feed.post(hits(1, 1));
  clock.advance(0);
  assert.deepEqual(plainData(sent), [[1000, 2]], 'the hits of one turn go together, without waiting for the interval');
  // A hit every millisecond for 100 ms: a batch every 25 ms, each hit sent within 25 ms of its post.
  for (let t = 1; t <= 100; t++) {
    step(1);
    feed.post(hits(1 + t, 1));
  }
  step(100);
  // (A hit posted at the instant a batch goes waits for the next: the one of t=25 goes at 1050.)
  assert.deepEqual(plainData(sent), [
    [1000, 2],
    [1025, 24],
    [1050, 25],
    [1075, 25],
    [1100, 25],
    [1125, 1],
  ]);
  feed.dispose();
});

test("latency histograms are log2 buckets per probe, read from the aggregates' pairing (under the entry's probe)", () => {
  const feed = new PanelFeed({ version: 'x', flushIntervalMs: 60_000 });
  const { post } = session(feed, [{ entry: 'sub', exit: 'sub__return' }]);
  const call = (ts: number, ns: number): Hit[] => {
    const [e] = hits(0, 1).map((h) => ({ ...h, probe: 'sub', event: 'sub', ts }));
    return [e, { ...e, kind: 'return', probe: 'sub__return', event: 'sub__return', ts: ts + ns / 1e9, retval: -1 }];
  };
  post([...call(1, 2000), ...call(2, 4000), ...call(3, 6000)]);
  post(hits(0, 1)); // an `add` entry: no pair, no latency
  const msgs: ToWebview[] = [];
  feed.attach((m) => msgs.push(m));
  const init = msgs[0];
  if (init.type !== 'init') throw new Error('no init');
  const h = init.stats.latency.sub;
  assert.equal(h.count, 3);
  assert.equal(h.maxNs, 6000);
  assert.equal(h.buckets[10], 1, '2000 ns is in [1024, 2048)');
  assert.equal(h.buckets[11], 1, '4000 ns is in [2048, 4096)');
  assert.equal(h.buckets[12], 1, '6000 ns is in [4096, 8192)');
  assert.equal(init.stats.latency.add, undefined);
  assert.deepEqual(
    plainData(hitsIn(msgs).map((x) => x.latencyNs)),
    [undefined, 2000, undefined, 4000, undefined, 6000, undefined],
    "the rows carry the aggregates' latency",
  );
  feed.dispose();
});

test('the history is bounded; what was evicted before a replay is reported as historyDropped', () => {
  const feed = new PanelFeed({ version: 'x', flushIntervalMs: 60_000, maxBatch: 10, historyCapacity: 20 });
  const { post } = session(feed);
  for (let i = 0; i < 10; i++) {
    post(hits(i * 10, 10));
  }
  const msgs: ToWebview[] = [];
  feed.attach((m) => msgs.push(m));
  const init = msgs[0];
  if (init.type !== 'init') throw new Error('no init');
  const replayed = hitsIn(msgs);
  assert.equal(replayed.length, 20);
  assert.equal(replayed[0].ts, 80);
  assert.equal(init.stats.historyDropped, 80);
  assert.equal(init.stats.counts.add + init.stats.counts.sub, 100, 'counts cover every hit, not just the retained');
  feed.dispose();
});

test('retainedHits applies the panel filter for export; clear forgets everything and tells the webview', () => {
  const feed = new PanelFeed({ version: 'x', flushIntervalMs: 60_000 });
  feed.post(hits(0, 6));
  assert.deepEqual(plainData(feed.retainedHits('probe:sub').map((h) => h.ts)), [1, 3, 5]);
  assert.deepEqual(plainData(feed.retainedHits('i=4').map((h) => h.ts)), [4]);
  assert.equal(feed.retainedHits().length, 6);
  const msgs: ToWebview[] = [];
  feed.attach((m) => msgs.push(m));
  feed.clear();
  assert.equal(msgs.at(-1)?.type, 'cleared');
  assert.equal(feed.retainedHits().length, 0);
  feed.detach();
  feed.post(hits(0, 1));
  feed.flush();
  assert.equal(msgs.at(-1)?.type, 'cleared', 'a detached feed sends nothing');
  feed.dispose();
});

test("exportText writes what the panel's Export buttons save: the CLI's JSON objects, or CSV with formulas neutralised", () => {
  const feed = new PanelFeed({ version: 't' });
  const h: Hit = { ...hits(0, 1)[0], comm: '=cmd|x', args: { s: '@SUM(A1)', n: -5, p: null } };
  feed.post([h]);
  const json = feed.exportText('json');
  assert.equal(json.hits, 1);
  assert.deepEqual(plainData(JSON.parse(json.text)), [
    { host: 'local', probe: 'add', kind: 'entry', pid: 1, tid: 1, comm: '=cmd|x', cpu: 0, ts: 0, args: { s: '@SUM(A1)', n: -5, p: null } },
  ]);
  const csv = feed.exportText('csv', 'probe:add').text.split('\r\n');
  assert.equal(csv[0], 'ts,host,probe,kind,pid,tid,comm,cpu,retval,latency_ns,args.s,args.n,args.p');
  assert.equal(csv[1], "0,local,add,entry,1,1,'=cmd|x,0,,,'@SUM(A1),-5,null");
  feed.dispose();
});

test('per-site stats: each probe site counts its own hits, keeps its latest values and latency; the export filters by site', () => {
  const entry = { kind: 'entry' as const, address: '0x128ea0' };
  const inl = { kind: 'inlined' as const, address: '0x5e8f4', caller: 'loadUsers', file: 'acl.c', line: 2210 };
  // One probe armed as one event per site: each hit names the probe and its event.
  const eventOf = (site: Hit['site']) =>
    site && site.kind !== 'entry' ? `ACLAppendUserForLoading_${site.kind}_${site.address.slice(2)}` : 'ACLAppendUserForLoading';
  const hit = (i: number, site: Hit['site'], ret = false): Hit => ({
    host: 'local',
    probe: ret ? 'ACLAppendUserForLoading__return' : 'ACLAppendUserForLoading',
    kind: ret ? 'return' : 'entry',
    pid: 1,
    tid: 1,
    comm: 'redis-server',
    cpu: 0,
    ts: i,
    args: ret ? {} : { n: i },
    event: `${eventOf(site)}${ret ? '__return' : ''}`,
    ...(site ? { site } : {}),
  });
  const feed = new PanelFeed({ version: 'x', flushIntervalMs: 60_000 });
  const { post } = session(feed, [{ entry: 'ACLAppendUserForLoading', exit: 'ACLAppendUserForLoading__return' }]);
  // The engine hands every hit of one site the same object, but equal sites from a replay must still collapse.
  const exit = (i: number, ns: number): Hit => ({ ...hit(i, entry, true), ts: i + ns / 1e9 });
  post([hit(0, entry), exit(0, 100), hit(1, { ...inl }), hit(2, entry), exit(2, 300), hit(3, inl), hit(4, undefined), hit(5, { ...inl })]);
  const msgs: ToWebview[] = [];
  feed.attach((m) => msgs.push(m));
  const init = msgs[0];
  assert.ok(init.type === 'init');
  assert.deepEqual(
    plainData(init.stats.counts),
    { ACLAppendUserForLoading: 6, ACLAppendUserForLoading__return: 2 },
    'the probe counts all its sites once',
  );
  assert.deepEqual(plainData(init.stats.latency.ACLAppendUserForLoading?.count), 2);
  assert.deepEqual(plainData(init.stats.sites.ACLAppendUserForLoading), [
    { site: entry, count: 2, lastArgs: 'n=2', lastRet: '', latencyCount: 2, latencySumNs: 400, latencyMaxNs: 300 },
    { site: inl, count: 3, lastArgs: 'n=5', lastRet: '', latencyCount: 0, latencySumNs: 0, latencyMaxNs: 0 },
  ]);
  assert.deepEqual(plainData(feed.retainedHits('site:0x5e8f4').map((h) => h.ts)), [1, 3, 5]);
  assert.deepEqual(plainData(feed.retainedHits('site:entry').map((h) => h.ts)), [0, 0.0000001, 2, 2.0000003]);
  feed.clear();
  post([hit(6, inl), hit(7, entry), exit(7, 200)]);
  feed.flush();
  const last = msgs.filter((m) => m.type === 'stats').at(-1);
  assert.ok(last?.type === 'stats');
  assert.deepEqual(
    plainData(last.stats.sites.ACLAppendUserForLoading.map((s) => [s.site.address, s.count, s.lastArgs])),
    [
      ['0x128ea0', 1, 'n=7'],
      ['0x5e8f4', 1, 'n=6'],
    ],
    'clear starts the breakdown over (a baseline of the aggregates, which go on counting)',
  );
  assert.deepEqual(plainData(last.stats.counts), { ACLAppendUserForLoading: 2, ACLAppendUserForLoading__return: 1 });
  const lat = last.stats.latency.ACLAppendUserForLoading;
  assert.deepEqual(plainData([lat?.count, lat?.maxNs]), [1, 255], 'since the clear: one call; its max bounded by its bucket [128, 256) ns');
  assert.deepEqual(
    plainData([last.stats.sites.ACLAppendUserForLoading[0].latencyCount, last.stats.sites.ACLAppendUserForLoading[0].latencySumNs]),
    [1, 200],
  );
  feed.dispose();
});

test("a site's latest values and the filter see what its hits say about their arguments (unavailable here, inferred)", () => {
  const site = { kind: 'entry' as const, address: '0x13b700' };
  const hit: Hit = {
    host: 'local',
    probe: 'createStringObject_2',
    kind: 'entry',
    pid: 1,
    tid: 1,
    comm: 'redis-server',
    cpu: 0,
    ts: 1,
    args: { len: 4 },
    event: 'createStringObject_2',
    site,
    unavailable: { ptr: 'no such parameter here' },
  };
  const feed = new PanelFeed({ version: 'x', flushIntervalMs: 60_000 });
  session(feed).post([hit, { ...hit, ts: 2, args: { x: 5 }, unavailable: undefined, inferred: ['x'] }]);
  const msgs: ToWebview[] = [];
  feed.attach((m) => msgs.push(m));
  const init = msgs[0];
  assert.ok(init.type === 'init');
  assert.equal(init.stats.sites.createStringObject_2?.[0]?.lastArgs, 'x≈5');
  assert.deepEqual(plainData(feed.retainedHits('unavailable').map((h) => h.ts)), [1]);
  assert.deepEqual(plainData(hitsIn(msgs).map((h) => [h.unavailable, h.inferred])), [
    [{ ptr: 'no such parameter here' }, undefined],
    [undefined, ['x']],
  ]);
  feed.dispose();
});

test('flow control: a batch waits until the webview drew the ones before it, then goes at once; at most drawnWaitMs', () => {
  const clock = fakeClock();
  const feed = new PanelFeed({ version: 'x', flushIntervalMs: 25, drawnWaitMs: 1_000, maxBatch: 100, clock });
  const { post } = session(feed);
  const msgs: ToWebview[] = [];
  feed.attach((m) => msgs.push(m));
  msgs.length = 0;
  post(hits(0, 2));
  clock.advance(25);
  assert.deepEqual(plainData(hitsIn(msgs)), hits(0, 2), 'the first batch goes within the interval');
  msgs.length = 0;
  post(hits(2, 3));
  clock.advance(500);
  assert.deepEqual(plainData(hitsIn(msgs)), [], 'not drawn yet: the next batch waits (without flow control it went at 25 ms)');
  post(hits(5, 1));
  feed.drawn(1);
  clock.advance(0);
  assert.deepEqual(plainData(hitsIn(msgs)), hits(2, 4), 'drawn: what came meanwhile goes as one batch, at once');
  assert.equal(msgs.filter((m) => m.type === 'hits').length, 1);
  msgs.length = 0;
  // A webview that never says drawn (hidden, or another version) still gets its hits, drawnWaitMs apart.
  post(hits(6, 1));
  clock.advance(999);
  assert.deepEqual(plainData(hitsIn(msgs)), []);
  clock.advance(1);
  assert.deepEqual(plainData(hitsIn(msgs)), hits(6, 1));
  msgs.length = 0;
  // maxBatch hits go at once, drawn or not (the host's memory stays bounded).
  post(hits(7, 100));
  assert.deepEqual(plainData(hitsIn(msgs)), hits(7, 100));
  // A webview attached again (reloaded) owes nothing: its replay is what it draws next.
  feed.attach((m) => msgs.push(m));
  msgs.length = 0;
  feed.drawn(99);
  post(hits(107, 1));
  clock.advance(1_000);
  assert.deepEqual(plainData(hitsIn(msgs)), hits(107, 1));
  feed.dispose();
});

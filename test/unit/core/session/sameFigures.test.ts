// One stream of hits, as a session emits them, read by the three places that show figures: the CLI summary, the
// editor's model (lens, hover) and the live panel. The session's aggregates count it once; all three must show the
// same counts, the same per-site counts and the same latency buckets.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { Aggregates, type LatencyPair } from '../../../../src/core/session/aggregates';
import { percentiles } from '../../../../src/core/session/latency';
import { mergeSummaries } from '../../../../src/core/session/fanout';
import type { SessionSummary } from '../../../../src/core/session/traceSession';
import type { Hit } from '../../../../src/shared/hit';
import type { PanelStats } from '../../../../src/shared/protocol';
import type { Site } from '../../../../src/shared/site';
import { latencyForSpecs, statsForSpec, type SessionView } from '../../../../src/vscode/model/stats';
import { decorationText, formatDuration, hoverMarkdown } from '../../../../src/vscode/model/format';
import { PanelFeed } from '../../../../src/vscode/panel/panelFeed';
import { probeSummaryLines } from '../../../../src/cli/summaryText';
import { plainData } from '../../../helpers/plain';

const ENTRY: Site = { kind: 'entry', address: '0x15c0', file: '/w/sites.c', line: 40 };
const INLINED: Site = { kind: 'inlined', address: '0x12a4', caller: 'main', file: '/w/sites.c', line: 133 };

/** The probe `both_fn x` (an entry and an inlined copy, one event each) and its returns `both_fn%return`. */
const EVENTS: SessionView['events'] = [
  { event: 'both_fn', probe: 'both_fn', spec: 'both_fn x', site: ENTRY },
  { event: 'both_fn_inlined_12a4', probe: 'both_fn', spec: 'both_fn x', site: INLINED },
  { event: 'both_fn__return', probe: 'both_fn__return', spec: 'both_fn%return', site: ENTRY },
  { event: 'both_fn_inlined_12a4__return', probe: 'both_fn__return', spec: 'both_fn%return', site: INLINED },
];
const PAIRS: LatencyPair[] = [
  { entry: 'both_fn', exit: 'both_fn__return' },
  { entry: 'both_fn_inlined_12a4', exit: 'both_fn_inlined_12a4__return' },
];

/**
 * The recorded stream: 40 calls on 3 threads, every third through the inlined copy, latencies from 1 µs to
 * about 1 ms (several log2 buckets), a recursive call, and a return whose entry came before tracing began.
 */
function recorded(): Hit[] {
  const out: Hit[] = [];
  const hit = (event: string, ts: number, tid: number, extra: Partial<Hit> = {}): Hit => {
    const e = EVENTS.find((x) => x.event === event)!;
    return { host: 'db1', probe: e.probe, event, kind: 'entry', pid: 7, tid, comm: 'srv', cpu: 0, ts, args: {}, site: e.site, ...extra };
  };
  out.push(hit('both_fn__return', 0.5, 1, { kind: 'return', retval: 0 }));
  let ts = 1;
  for (let i = 0; i < 40; i++) {
    const at = i % 3 === 2 ? 'both_fn_inlined_12a4' : 'both_fn';
    const tid = 1 + (i % 3);
    out.push(hit(at, ts, tid, { args: { x: i } }));
    if (i === 7) {
      out.push(hit(at, ts + 1e-6, tid, { args: { x: 1000 } }));
      out.push(hit(`${at}__return`, ts + 3e-6, tid, { kind: 'return', retval: 1 }));
    }
    const us = 2 ** (i % 11);
    out.push(hit(`${at}__return`, ts + us / 1e6, tid, { kind: 'return', retval: i }));
    ts += 0.01;
  }
  return out;
}

test('the CLI summary, the editor and the panel read one count of one stream: same counts, per-site counts, latency buckets', () => {
  // As the session does: the aggregates count and pair each hit, then it goes to its consumers with its latency.
  const agg = new Aggregates(new Map(), PAIRS);
  const feed = new PanelFeed({ version: 't', flushIntervalMs: 60_000 });
  feed.watch(agg);
  for (const h of recorded()) {
    const latencyNs = agg.add(h);
    if (latencyNs !== undefined) h.latencyNs = latencyNs;
    feed.post([h]);
  }

  // The CLI: the session's summary, merged over hosts as `trace` prints it.
  const sum = agg.summary();
  const session: SessionSummary = {
    host: 'db1',
    hits: sum.hits,
    sites: sum.sites,
    latency: sum.latency,
    timings: sum.timings,
    lost: 0,
    mismatch: 0,
    kernelHits: {},
  };
  const cli = mergeSummaries([{ host: 'db1', summary: session }]);
  // The editor: the spec's stats over the session's view.
  const view: SessionView = { host: 'db1', events: EVENTS, snapshot: agg.snapshot() };
  const calls = statsForSpec('both_fn x', [view]);
  const returns = statsForSpec('both_fn%return', [view]);
  // The panel: what the webview receives.
  let panel: PanelStats | undefined;
  feed.attach((m) => {
    if (m.type === 'init') panel = m.stats;
  });
  feed.dispose();
  assert.ok(panel);

  // Counts: 41 calls (one recursive), 42 returns (one from before tracing began).
  assert.deepEqual(plainData(cli.hits), { both_fn: 41, both_fn__return: 42 });
  assert.deepEqual(plainData([calls.hits, returns.hits]), [cli.hits.both_fn, cli.hits.both_fn__return]);
  assert.deepEqual(plainData(panel.counts), plainData(cli.hits));

  // Per-site counts.
  const editorSites = (st: typeof calls) => st.bySite?.map((s) => [s.address, s.hits]);
  const panelSites = (probe: string) => panel!.sites[probe].map((s) => [s.site.address, s.count]);
  assert.deepEqual(plainData(editorSites(calls)), [
    ['0x15c0', 28],
    ['0x12a4', 13],
  ]);
  assert.deepEqual(plainData(panelSites('both_fn')), editorSites(calls));
  const cliSites = (probe: string) => cli.sites[probe].map((s) => [s.site.address, s.hits]);
  assert.deepEqual(plainData(cliSites('both_fn')), editorSites(calls));
  assert.deepEqual(plainData(cliSites('both_fn__return')), editorSites(returns));
  assert.deepEqual(plainData(panelSites('both_fn__return')), editorSites(returns));

  // Latency: 41 paired calls under the entry's probe, the same buckets in the editor's hover and the panel, and the
  // CLI's percentiles are the editor's.
  const lat = calls.latency!;
  assert.equal(lat.count, 41);
  const trimmed = (b: readonly number[]) => {
    let n = b.length;
    while (n > 0 && b[n - 1] === 0) n--;
    return b.slice(0, n);
  };
  assert.deepEqual(plainData(panel.latency.both_fn.buckets), trimmed(lat.log2));
  assert.deepEqual(plainData([panel.latency.both_fn.count, panel.latency.both_fn.maxNs]), [lat.count, lat.max]);
  assert.ok(lat.log2.filter((n) => n > 0).length >= 8, 'the stream spans several buckets');
  assert.deepEqual(plainData(cli.latency.both_fn), {
    count: lat.count,
    p50: Math.round(percentiles(lat).p50),
    p90: Math.round(percentiles(lat).p90),
    p99: Math.round(percentiles(lat).p99),
    max: lat.max,
    log2: trimmed(lat.log2),
  });
  assert.equal(cli.latency.both_fn__return, undefined);
  // What the CLI prints: the per-site counts and every bucket's count, as the panel has them.
  const text = probeSummaryLines(cli, 'both_fn').join('');
  const printedSites = [...text.matchAll(/^ {2}\S.*\((0x[0-9a-f]+)\): (\d+) hits$/gm)].map((m) => [m[1], Number(m[2])]);
  assert.deepEqual(plainData(printedSites), editorSites(calls));
  const printedBuckets = [...text.matchAll(/^ {4}\[.*\) +(\d+) \|/gm)].map((m) => Number(m[1]));
  const panelBuckets = panel.latency.both_fn.buckets;
  assert.deepEqual(plainData(printedBuckets), panelBuckets.slice(panelBuckets.findIndex((c) => c > 0)));
  // Per site, the panel's latency is the calls that entered there.
  assert.deepEqual(plainData(panel.sites.both_fn.map((s) => s.latencyCount)), [28, 13]);
  assert.equal(
    panel.sites.both_fn.reduce((n, s) => n + s.latencySumNs, 0),
    agg.snapshot().latency.both_fn.sum,
  );
});

test('one probe on two targets with different latencies: the CLI, the hover, the inline text, the lens and the panel show one count, p50, p99 and max', () => {
  const PAIR: LatencyPair[] = [{ entry: 'both_fn', exit: 'both_fn__return' }];
  // db1 answers 95 calls in 2–3 µs, db2 5 calls in about 1 ms: the trace's p50 is db1's, its p99 db2's.
  const target = (host: string, latenciesUs: number[]): Aggregates => {
    const agg = new Aggregates(new Map(), PAIR);
    let ts = 1;
    for (const us of latenciesUs) {
      const base = { host, pid: 7, tid: 1, comm: 'srv', cpu: 0, args: {}, site: ENTRY };
      agg.add({ ...base, probe: 'both_fn', event: 'both_fn', kind: 'entry', ts });
      agg.add({ ...base, probe: 'both_fn__return', event: 'both_fn__return', kind: 'return', ts: ts + us / 1e6, retval: 0 });
      ts += 1;
    }
    return agg;
  };
  const fast = target(
    'db1',
    Array.from({ length: 95 }, (_, i) => 2 + (i % 10) / 10),
  );
  const slow = target(
    'db2',
    Array.from({ length: 5 }, (_, i) => 1000 + i * 50),
  );
  const summaryOf = (host: string, agg: Aggregates): SessionSummary => {
    const sum = agg.summary();
    return { host, hits: sum.hits, sites: sum.sites, latency: sum.latency, timings: sum.timings, lost: 0, mismatch: 0, kernelHits: {} };
  };
  const cli = mergeSummaries([
    { host: 'db1', summary: summaryOf('db1', fast) },
    { host: 'db2', summary: summaryOf('db2', slow) },
  ]).latency.both_fn;
  const cliText = probeSummaryLines(
    mergeSummaries([
      { host: 'db1', summary: summaryOf('db1', fast) },
      { host: 'db2', summary: summaryOf('db2', slow) },
    ]),
    'both_fn',
  ).join('');
  const views: SessionView[] = [
    { host: 'db1', events: EVENTS, snapshot: fast.snapshot() },
    { host: 'db2', events: EVENTS, snapshot: slow.snapshot() },
  ];
  const st = statsForSpec('both_fn x', views);
  const hover = hoverMarkdown('both_fn x', st, 'armed');
  const inline = decorationText(st, 'armed');
  // The Latency lens (its probe set's entry and return specs), as codeLens.ts computes it.
  const lens = latencyForSpecs(['both_fn x', 'both_fn%return'], views)!;
  const feed = new PanelFeed({ version: 't', flushIntervalMs: 60_000 });
  feed.watch(fast);
  feed.watch(slow);
  let panel: PanelStats | undefined;
  feed.attach((m) => {
    if (m.type === 'init') panel = m.stats;
  });
  feed.dispose();
  const ph = panel!.latency.both_fn;

  // The rule: every call of both targets together. Not the worst host's figures, nor those of the host with most calls.
  assert.equal(cli.count, 100);
  assert.ok(cli.p50 >= 2000 && cli.p50 < 3100, `p50 ${cli.p50} ns: db1's calls' middle`);
  assert.ok(cli.p99 >= 1_000_000, `p99 ${cli.p99} ns: among db2's calls`);
  assert.equal(cli.max, 1_200_000);
  assert.match(cliText, new RegExp(`p50 ${cli.p50} ns p99 ${cli.p99} ns`));
  assert.match(cliText, /latency of 100 calls/);
  const d = formatDuration;
  assert.ok(
    hover.includes(`(100 calls): p50 ${d(cli.p50)} · p90 ${d(cli.p90)} · p99 ${d(cli.p99)} · max ${d(cli.max)}`),
    `the hover's figures are the CLI's:\n${hover}`,
  );
  assert.ok(inline.includes(`p50 ${d(cli.p50)}`), inline);
  const lp = percentiles(lens);
  assert.deepEqual(plainData([lens.count, Math.round(lp.p50), Math.round(lp.p99), lens.max]), [cli.count, cli.p50, cli.p99, cli.max]);
  assert.deepEqual(plainData([ph.count, Math.round(ph.p50Ns!), Math.round(ph.p99Ns!), ph.maxNs]), [cli.count, cli.p50, cli.p99, cli.max]);
});

// A lens counts the sum over its function's sites; the hover breaks it down per site.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { decorationText, hoverMarkdown, HOVER_SITES } from '../../../../src/vscode/model/format';
import { lensesForFunctions } from '../../../../src/vscode/model/lenses';
import { statsForSpec, type SessionView } from '../../../../src/vscode/model/stats';
import { Aggregates } from '../../../../src/core/session/aggregates';
import type { Hit } from '../../../../src/shared/hit';
import type { Site } from '../../../../src/shared/site';

const ENTRY = { kind: 'entry' as const, address: '0x15c0' };
const INLINED = { kind: 'inlined' as const, address: '0x12a4', caller: 'main', file: '/w/sites.c', line: 133 };

/** A session whose aggregates counted `entry` and `inlined` hits of probe both_fn at its two sites. */
function view(host: string, entry: number, inlined: number): SessionView {
  const agg = new Aggregates();
  const hit = (event: string, probe: string, site: Site): Hit => ({
    host,
    probe,
    event,
    kind: 'entry',
    pid: 1,
    tid: 1,
    comm: 'c',
    cpu: 0,
    ts: 0,
    args: {},
    site,
  });
  for (let i = 0; i < entry; i++) agg.add(hit('both_fn', 'both_fn', ENTRY));
  for (let i = 0; i < inlined; i++) agg.add(hit('both_fn_inlined_12a4', 'both_fn', { ...INLINED }));
  for (let i = 0; i < 5; i++) agg.add(hit('other', 'other', { kind: 'entry', address: '0x10' }));
  return {
    host,
    events: [
      { event: 'both_fn', probe: 'both_fn', spec: 'both_fn $params', site: ENTRY },
      { event: 'both_fn_inlined_12a4', probe: 'both_fn', spec: 'both_fn $params', site: INLINED },
      { event: 'other', probe: 'other', spec: 'other', site: { kind: 'entry', address: '0x10' } },
    ],
    snapshot: agg.snapshot(),
  };
}

test('the sum over sites (all hosts) and the per-site breakdown', () => {
  const st = statsForSpec('both_fn $params', [view('local', 300, 200), view('db1', 1, 2)]);
  assert.equal(st.hits, 503);
  assert.deepEqual(
    st.bySite?.map((s) => [s.kind, s.address, s.hits]),
    [
      ['entry', '0x15c0', 301],
      ['inlined', '0x12a4', 202],
    ],
  );
  const md = hoverMarkdown('both_fn $params', st, 'armed');
  assert.match(md, /\*\*By site\*\* \(2\)/);
  assert.match(md, /- entry \(0x15c0\): 301 hits/);
  assert.match(md, /- inlined into main at \S*sites\.c:133 \(0x12a4\): 202 hits/);
});

test('a helper inlined at thousands of sites: the hover lists the busiest, sums the rest, and the sites add up to the count', () => {
  // 4,000 sites (one event of 4,000 points), one hit each but for five busy ones.
  const sites = Array.from({ length: 4000 }, (_, i) => ({
    kind: 'inlined' as const,
    address: `0x${(0x1000 + i * 16).toString(16)}`,
    caller: `f${i}`,
    file: '/w/many.c',
    line: i + 3,
  }));
  const busy = new Map([
    [3999, 50],
    [7, 40],
    [2000, 30],
    [12, 20],
    [1500, 10],
  ]);
  const agg = new Aggregates();
  sites.forEach((site, i) => {
    for (let k = 0; k < (busy.get(i) ?? 1); k++)
      agg.add({ host: 'local', probe: 'hot', event: 'hot', kind: 'entry', pid: 1, tid: 1, comm: 'c', cpu: 0, ts: 0, args: {}, site });
  });
  const st = statsForSpec('hot', [
    { host: 'local', events: sites.map((site) => ({ event: 'hot', probe: 'hot', spec: 'hot', site })), snapshot: agg.snapshot() },
  ]);
  const total = 3995 + 150;
  assert.equal(st.hits, total);
  const md = hoverMarkdown('hot', st, 'armed');
  assert.match(md, /\*\*By site\*\* \(4,000\)/);
  const listed = md.split('\n').filter((l) => /^- inlined into /.test(l));
  assert.equal(listed.length, HOVER_SITES, 'the hover lists at most HOVER_SITES sites');
  // The busiest first, in order of hits; then sites of one hit, in the probe's order.
  assert.deepEqual(
    listed.slice(0, 6).map((l) => /into (f\d+) .*: (\d+) hits?$/.exec(l)?.slice(1).join(' ')),
    ['f3999 50', 'f7 40', 'f2000 30', 'f12 20', 'f1500 10', 'f0 1'],
  );
  const rest = /^- ([\d,]+) other sites: ([\d,]+) hits \(the live panel lists every site\)$/m.exec(md);
  assert.ok(rest, md.slice(-300));
  assert.equal(Number(rest[1].replace(/,/g, '')), 4000 - HOVER_SITES);
  const shown = listed.reduce((n, l) => n + Number(/: (\d+) hits?$/.exec(l)![1]), 0);
  assert.equal(shown + Number(rest[2].replace(/,/g, '')), total, 'the listed sites and the rest add up to the count');
  assert.ok(md.length < 4000, `the hover stays small (${md.length} characters)`);
});

test('a function armed at one site has no breakdown', () => {
  const st = statsForSpec('other', [view('local', 1, 1)]);
  assert.equal(st.hits, 5);
  assert.doesNotMatch(hoverMarkdown('other', st, 'armed'), /By site/);
});

test('a function whose entries are not all proved: the lens, the decoration and the hover say its count is a lower bound', () => {
  const bounded = (v: SessionView): SessionView => ({
    ...v,
    events: v.events.map((e) => (e.spec === 'both_fn $params' && e.site?.kind === 'inlined' ? { ...e, lowerBound: true } : e)),
  });
  const st = statsForSpec('both_fn $params', [bounded(view('local', 10, 2))]);
  assert.equal(st.hits, 12);
  assert.equal(st.lowerBound, true);
  assert.equal(decorationText(st, 'armed'), '● ≥ 12 hits');
  const md = hoverMarkdown('both_fn $params', st, 'armed');
  assert.match(md, /local: ≥ 12 hits/);
  assert.match(md, /The count is a lower bound/);
  const [trace, , latency] = lensesForFunctions(
    [
      {
        name: 'both_fn',
        file: '/w/sites.c',
        line: 20,
        size: 10,
        params: [],
        inlinedInstances: 1,
        sites: [{ kind: 'entry', address: 0x15c0n, dieOffset: 0, unitOffset: 0 }],
        probeable: true,
        external: true,
        unitOffset: 0,
        dieOffset: 0,
      },
    ],
    { trace: true, returns: true, latency: true, isGo: false },
    (specs) =>
      specs[0] === 'both_fn $params'
        ? { state: 'armed', hits: st.hits, lowerBound: st.lowerBound }
        : { state: 'armed', hits: 1, p50Ns: 2100, calls: 1, lowerBound: true },
  );
  assert.equal(trace.title, '$(pulse) Trace: ≥ 12 hits · armed');
  assert.equal(latency.title, '$(watch) Latency: p50 2.1µs · ≥ 1 calls · armed');
  // The other function of the same sessions, all of whose sites are proved, is counted exactly.
  const other = statsForSpec('other', [bounded(view('local', 1, 1))]);
  assert.equal(other.lowerBound, undefined);
  assert.equal(decorationText(other, 'armed'), '● 5 hits');
  assert.doesNotMatch(hoverMarkdown('other', other, 'armed'), /lower bound|≥/);
});

test("a kernel function's lens says where its probes came from: vmlinux DWARF, or BTF and kallsyms", () => {
  const withSource = (v: SessionView, kernelSource: 'dwarf' | 'btf'): SessionView => ({
    ...v,
    events: v.events.map((e) => ({ ...e, kernelSource })),
  });
  for (const [source, words] of [
    ['dwarf', 'vmlinux DWARF'],
    ['btf', 'BTF + kallsyms, no vmlinux'],
  ] as const) {
    const st = statsForSpec('both_fn $params', [withSource(view('vm', 3, 0), source)]);
    assert.equal(st.kernelSource, source);
    const [trace, returns] = lensesForFunctions(
      [
        {
          name: 'both_fn',
          file: '/w/sites.c',
          line: 20,
          size: 10,
          params: [],
          inlinedInstances: 0,
          sites: [{ kind: 'entry', address: 0x15c0n, dieOffset: 0, unitOffset: 0 }],
          probeable: true,
          external: true,
          unitOffset: 0,
          dieOffset: 0,
        },
      ],
      { trace: true, returns: true, latency: false, isGo: false },
      (specs) => (specs[0] === 'both_fn $params' ? { state: 'armed', hits: st.hits, kernelSource: st.kernelSource } : undefined),
    );
    assert.equal(trace.title, `$(pulse) Trace: 3 hits · armed · ${words}`);
    assert.equal(returns.title, 'Trace returns');
  }
  // A program's probes say nothing of the kind.
  assert.equal(statsForSpec('both_fn $params', [view('local', 1, 0)]).kernelSource, undefined);
});

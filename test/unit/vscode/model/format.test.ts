import assert from 'node:assert/strict';
import { test } from 'node:test';
import {
  decorationText,
  formatCount,
  formatDuration,
  hitRate,
  hoverMarkdown,
  sparkline,
  toggleLink,
  TOGGLE_COMMANDS,
} from '../../../../src/vscode/model/format';
import { statsForSpec, type SessionView } from '../../../../src/vscode/model/stats';
import type { Hit } from '../../../../src/shared/hit';
import type { Site } from '../../../../src/shared/site';
import { plainData } from '../../../helpers/plain';
import { addCall, emptyLatency } from '../../../../src/core/session/latency';

const latency = emptyLatency();
for (const ns of [1100, 1500, 1900, 2100, 2100, 2500, 3000, 3500, 9000, 9500]) addCall(latency, ns);

/** A hit as the aggregates keep it (the probe's last hits). */
function lastHit(probe: string, ts: number, args: Hit['args'], site?: Site): Hit {
  return { host: 'h', probe, event: probe, kind: 'entry', pid: 1, tid: 1, comm: 'c', cpu: 0, ts, args, ...(site ? { site } : {}) };
}

function view(host: string, hits: number, site?: Site): SessionView {
  return {
    host,
    events: [
      { event: 'add_ints', probe: 'add_ints', spec: 'add_ints $params' },
      { event: 'other', probe: 'other', spec: 'other' },
    ],
    snapshot: {
      hits: { add_ints: hits, other: 99 },
      sites: {},
      lines: {},
      last: { add_ints: [lastHit('add_ints', 1, { a: 1, b: 2 }, site), lastHit('add_ints', 2, { a: 3, b: -7 }, site)] },
      latency: { add_ints: latency },
      unpairedReturns: 0,
      lost: 0,
    },
  };
}

test('the inline decoration: count, last values, p50', () => {
  const st = statsForSpec('add_ints $params', [view('local', 1000), view('db1', 204)]);
  assert.equal(st.hits, 1204);
  assert.deepEqual(plainData(st.byHost), { local: 1000, db1: 204 });
  assert.equal(decorationText(st, 'armed'), '● 1,204 hits · last a=3 b=-7 · p50 2.1µs');
});

test('states other than armed say so; one hit is singular', () => {
  assert.equal(decorationText({ hits: 1, byHost: {}, lastHits: [] }, 'armed'), '● 1 hit');
  assert.equal(decorationText(undefined, 'armed'), '● 0 hits');
  assert.equal(decorationText(undefined, 'error', 'bad arg'), '● error: bad arg');
  assert.equal(
    decorationText({ hits: 2, byHost: {}, lastHits: [{ host: 'h', ts: 1, values: { a: 1 } }] }, 'stopped'),
    '○ 2 hits · last a=1',
  );
  assert.equal(decorationText(undefined, 'pending'), '○ not armed');
  assert.match(decorationText({ hits: 5, byHost: {}, lastHits: [] }, 'stale'), /^● stale \(binary rebuilt\) · 5 hits$/);
});

test('numbers and durations', () => {
  assert.equal(formatCount(0), '0');
  assert.equal(formatCount(1234567), '1,234,567');
  assert.equal(formatDuration(850), '850ns');
  assert.equal(formatDuration(2100), '2.1µs');
  assert.equal(formatDuration(15_400_000), '15ms');
  assert.equal(formatDuration(1_200_000_000), '1.2s');
});

test('strings are quoted, pointers and a faulted fetch (null) are not', () => {
  const st = statsForSpec('s', [
    {
      host: 'h',
      events: [{ event: 'e', probe: 'e', spec: 's' }],
      snapshot: {
        hits: { e: 1 },
        sites: {},
        lines: {},
        last: { e: [lastHit('e', 1, { name: 'bob', p: '0x7ffd12', q: null })] },
        latency: {},
        unpairedReturns: 0,
        lost: 0,
      },
    },
  ]);
  assert.equal(decorationText(st, 'armed'), '● 1 hit · last name="bob" p=0x7ffd12 q=null');
});

test('the hover lists hosts, last hits (newest first) and a latency sparkline', () => {
  const st = statsForSpec('add_ints $params', [view('local', 3)]);
  const md = hoverMarkdown('add_ints $params', st, 'armed', ['a: optimized out']);
  assert.match(md, /local: 3 hits/);
  assert.ok(md.indexOf('a=3 b=-7') < md.indexOf('a=1 b=2'), 'newest hit first');
  assert.match(md, /⚠ a: optimized out/);
  assert.match(md, /p50 2\.1µs · p90 9µs/);
  const sp = sparkline(latency.log2)!;
  assert.equal(sp.bars.length, 4);
  assert.equal(sp.bars[1], '█');
  assert.equal(sp.bars[2], ' ');
  assert.equal(sp.from, 1024);
  assert.equal(sp.to, 16384);
});

test("a kernel probe's hover says where it came from: the target's BTF and kallsyms, or the vmlinux's DWARF", () => {
  const st = { hits: 2, byHost: { vm: 2 }, lastHits: [], kernelSource: 'btf' as const };
  assert.match(
    hoverMarkdown('do_sys_openat2 $params', st, 'armed'),
    /\n\nfrom the target's BTF and kallsyms \(no vmlinux\); one entry site \(calls at copies inlined into other functions are unknown without the kernel's DWARF\)\n/,
  );
  assert.match(hoverMarkdown('do_sys_openat2 $params', { ...st, kernelSource: 'dwarf' }, 'armed'), /\n\nfrom vmlinux DWARF\n/);
  assert.doesNotMatch(hoverMarkdown('f', { hits: 0, byHost: {}, lastHits: [] }, 'armed'), /from /);
});

test('hit rate from two samples', () => {
  assert.equal(hitRate(undefined, { t: 1000, total: 5 }), 0);
  assert.equal(hitRate({ t: 0, total: 0 }, { t: 500, total: 50 }), 100);
});

test('hover markdown shows hostile values as their text: no markup, link, image, HTML or extra line gets through', () => {
  const hostile = 'x*y*_z_ `c` [t](http://e) ![i](http://e/i.png) <img src=x> a|b ~~s~~ &amp;\n- item';
  const md = hoverMarkdown(
    'f $params',
    { hits: 1, byHost: { 'h<b>': 1 }, lastHits: [{ host: 'h<b>', ts: 1, values: { s: hostile, n: -3 } }] },
    'armed',
    ['arg *p*: <b>optimized out</b>'],
  );
  assert.equal(
    md,
    [
      '**ProbeLens** `f $params` — armed',
      '',
      '⚠ arg \\*p\\*: \\<b\\>optimized out\\</b\\>',
      '',
      'h\\<b\\>: 1 hit',
      '',
      '**Last hits**',
      '',
      '- h\\<b\\> 1.000000 — s="x\\*y\\*\\_z\\_ \\`c\\` \\[t\\](http://e) !\\[i\\](http://e/i.png) \\<img src=x\\> a\\|b \\~\\~s\\~\\~ \\&amp;\\\\n- item" n=-3',
    ].join('\n'),
  );
});

test("the hover says which copy of the function's code a last hit came from, when it is not the entry", () => {
  const site = { kind: 'inlined' as const, address: '0x401136', caller: 'main', file: 'calls.c', line: 130 };
  const st = statsForSpec('add_ints $params', [view('local', 2, site)]);
  const md = hoverMarkdown('add_ints $params', st, 'armed');
  assert.match(md, /^- local 2\.000000 — a=3 b=-7 · inlined into main at calls\.c:130 \(0x401136\)$/m);
  const entry = statsForSpec('add_ints $params', [view('local', 2, { kind: 'entry', address: '0x401000' })]);
  assert.match(hoverMarkdown('add_ints $params', entry, 'armed'), /^- local 2\.000000 — a=3 b=-7$/m);
});

test('the inline text and hover say which path counted: aggregated in the kernel, streamed, or each per host', () => {
  const spec = 'add_ints $params';
  const kernel: SessionView = { ...view('vm', 7), path: 'kernel' };
  kernel.snapshot.last = {};
  const st = statsForSpec(spec, [kernel]);
  assert.equal(decorationText(st, 'armed'), '● 7 hits · p50 2.1µs · aggregated in the kernel');
  assert.match(
    hoverMarkdown(spec, st, 'armed'),
    /Counted: aggregated in the kernel \(hist triggers: counts and latency, no per-hit values\)/,
  );
  const streamed = statsForSpec(spec, [view('h', 3)]);
  assert.doesNotMatch(decorationText(streamed, 'armed'), /aggregated/);
  assert.match(hoverMarkdown(spec, streamed, 'armed'), /Counted: streamed \(every hit\)/);
  const both = statsForSpec(spec, [kernel, view('h', 3)]);
  assert.match(decorationText(both, 'armed'), /^● 10 hits · .*aggregated in the kernel \(streamed on some targets\)$/);
  assert.match(hoverMarkdown(spec, both, 'armed'), /Counted: vm aggregated in the kernel .* · h streamed \(every hit\)/);
});

test("the hover's toggle link runs the toggle command on the probe's own node", () => {
  const link = toggleLink('build/calls', 'add_ints $params', false);
  const m = /^\[Aggregate in the kernel\]\(command:probelens\.aggregateProbe\?(\S+) "[^"]+"\)$/.exec(link);
  assert.ok(m, link);
  assert.deepEqual(plainData(JSON.parse(decodeURIComponent(m[1]))), [
    { kind: 'probe', binaryKey: 'build/calls', spec: 'add_ints $params' },
  ]);
  assert.match(toggleLink('b', 's', true), /^\[Stream hits\]\(command:probelens\.streamProbe\?/);
  assert.ok(TOGGLE_COMMANDS.includes('probelens.aggregateProbe') && TOGGLE_COMMANDS.includes('probelens.streamProbe'));
});

// A lens counts the sum over its function's sites; the hover breaks it down per site.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { hoverMarkdown } from '../../../../src/vscode/model/format';
import { statsForSpec, type SessionView } from '../../../../src/vscode/model/stats';

function view(host: string, entry: number, inlined: number): SessionView {
  return {
    host,
    events: [
      { event: 'both_fn', spec: 'both_fn $params', site: { kind: 'entry', address: '0x15c0' } },
      {
        event: 'both_fn_inlined_12a4',
        spec: 'both_fn $params',
        site: { kind: 'inlined', address: '0x12a4', caller: 'main', file: '/w/sites.c', line: 133 },
      },
      { event: 'other', spec: 'other', site: { kind: 'entry', address: '0x10' } },
    ],
    snapshot: {
      hits: { both_fn: entry, both_fn_inlined_12a4: inlined, other: 5 },
      lines: {},
      lastValues: {},
      latency: {},
      unpairedReturns: 0,
      lost: 0,
    },
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

test('a function armed at one site has no breakdown', () => {
  const st = statsForSpec('other', [view('local', 1, 1)]);
  assert.equal(st.hits, 5);
  assert.doesNotMatch(hoverMarkdown('other', st, 'armed'), /By site/);
});

// A line probe counts each run of the line wherever its code is: the lines fixture (GCC -O2) has marked lines in
// always_inline copies, a .cold block, an IPA clone, a loop body and a function both inlined and out of line,
// and prints how often each ran; probes armed through the whole engine on real tracefs must see exactly that,
// each hit naming the copy it ran in.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { copyFileSync, mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { loadIndex } from '../../src/core/index/load';
import { TraceSession } from '../../src/core/session/traceSession';
import { LocalTarget } from '../../src/core/target/local';
import type { Hit } from '../../src/core/tracefs/hitParser';
import { fixtureOrSkip, runFixture } from '../helpers/fixtures';
import { markedLines } from '../helpers/marks';
import { requireTracefs } from '../helpers/tracefs';
import { plainData } from '../helpers/plain';

test('lines: a line probe sees every run of the line in inlined copies, .cold blocks, clones and loops, once each', async (t) => {
  if (!requireTracefs(t)) return;
  const f = await fixtureOrSkip(t, 'lines');
  if (!f) return;
  const marks = markedLines(join(__dirname, '../fixtures/src/c/lines.c'));
  // A private copy: a uprobe sits on the file's inode, so nobody else's runs hit ours.
  const dir = mkdtempSync(join(tmpdir(), 'probelens-lines-'));
  const bin = join(dir, 'lines');
  copyFileSync(f.path, bin);
  const { index } = await loadIndex(bin, { noCache: true });
  const rel = (fn: string, mark: string) => `${fn}:${marks.get(mark)! - index.function(fn)[0].line!}`;
  // FILE:LINE and FUNC:REL both: FUNC:REL must reach the function's .cold block and inlined copies too.
  const specs: Record<string, string> = {
    inl: rel('scaled', 'inl'),
    cold: rel('checked', 'cold'),
    loop: `lines.c:${marks.get('loop')}`,
    clone: `lines.c:${marks.get('clone')}`,
    both: rel('both', 'both'),
  };
  const hits: Hit[] = [];
  const session = await TraceSession.start({ target: new LocalTarget(), index, specs: Object.values(specs), onHit: (h) => hits.push(h) });
  let out: Awaited<ReturnType<typeof runFixture>>;
  let lost = 0;
  try {
    out = await runFixture({ ...f, path: bin }, ['300']);
    const expected = out.total;
    for (let i = 0; i < 200 && hits.length < expected; i++) await new Promise((r) => setTimeout(r, 100));
  } finally {
    lost = (await session.stop()).lost;
  }
  assert.equal(lost, 0, 'no events lost');
  const byEvent = new Map(session.probes.map((p) => [p.event, p]));
  const of = (mark: string) => hits.filter((h) => byEvent.get(h.event)?.spec === specs[mark]);
  for (const mark of Object.keys(specs)) assert.equal(of(mark).length, out!.counts.get(mark), `${mark} (${specs[mark]})`);
  assert.equal(hits.length, out!.total, 'nothing else was counted');
  // Each hit names the copy it ran in.
  const sites = (mark: string) => new Set(of(mark).map((h) => `${h.site?.kind} ${h.site?.caller ?? ''}`.trim()));
  assert.deepEqual(
    plainData([...sites('inl')].sort()),
    ['inlined main', 'inlined sum_to'],
    'scaled runs in its copies in main and in sum_to',
  );
  assert.deepEqual(plainData([...sites('cold')]), ['entry'], 'the .cold block is checked’s own code');
  assert.deepEqual(plainData([...sites('clone')]), ['clone'], 'clone_line runs only as its clone');
  assert.deepEqual(plainData([...sites('both')].sort()), ['entry', 'inlined main'], 'both runs out of line and inlined');
  assert.ok(
    of('inl').every((h) => h.site?.file?.endsWith('/lines.c') && h.site.line !== undefined),
    'an inlined hit names its call site',
  );
  // A line's hits carry the line's name wherever they ran, never one copy's point name (its address in it):
  // `lines_L<n>` for a FILE:LINE spec, whichever copy ran.
  const names = (mark: string) => new Set(of(mark).map((h) => h.probe));
  assert.deepEqual([...names('loop')], [`lines_L${marks.get('loop')}`]);
  assert.deepEqual([...names('clone')], [`lines_L${marks.get('clone')}`]);
  for (const mark of Object.keys(specs))
    for (const n of names(mark)) assert.doesNotMatch(n, /_(inlined|clone|part)_[0-9a-f]+$/, `${mark}: hits named ${n}`);
});

// Entry probes on inlined copies whose DWARF entry pc is not where their calls begin (the entries fixture, see
// entries.c): armed through the whole engine on real tracefs, each function's count must equal the program's own,
// or, where a path cannot be proved, be named a lower bound and never exceed it.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { loadIndex } from '../../src/core/index/load';
import { TraceSession } from '../../src/core/session/traceSession';
import { LocalTarget } from '../../src/core/target/local';
import type { Hit } from '../../src/core/tracefs/hitParser';
import { fixtureOrSkip, runFixture } from '../helpers/fixtures';
import { requireTracefs } from '../helpers/tracefs';
import { privateCopy } from './engine-harness';

const SPECS = ['duplicated', 'merged', 'chained'];

test('entries: a duplicated copy is counted on both paths, chained copies once; a merged call is a named lower bound', async (t) => {
  if (!requireTracefs(t)) return;
  const f = await fixtureOrSkip(t, 'entries');
  if (!f) return;
  // A private copy: a uprobe sits on the file's inode, so nobody else's runs hit ours.
  const bin = privateCopy(t, f.path);
  const { index } = await loadIndex(bin, { noCache: true });
  const hits: Hit[] = [];
  const session = await TraceSession.start({ target: new LocalTarget(), index, specs: SPECS, onHit: (h) => hits.push(h) });
  let out: Awaited<ReturnType<typeof runFixture>>;
  let lost = 0;
  try {
    out = await runFixture({ ...f, path: bin }, ['301']);
    // duplicated and chained arrive in full; merged at least on the path its entry pc is on (every other call).
    const expected = out.counts.get('duplicated')! + out.counts.get('chained')! + Math.floor(out.counts.get('merged')! / 2);
    for (let i = 0; i < 200 && hits.length < expected; i++) await new Promise((r) => setTimeout(r, 100));
  } finally {
    lost = (await session.stop()).lost;
  }
  assert.equal(lost, 0, 'no events lost');
  const byEvent = new Map(session.probes.map((p) => [p.event, p]));
  const count = (s: string) => hits.filter((h) => byEvent.get(h.event)?.spec === s).length;
  const counts = out!.counts;
  assert.equal(count('duplicated'), counts.get('duplicated'), 'the tail-duplicated copy, on both paths');
  assert.equal(count('chained'), counts.get('chained'), 'the chained copies, once per call');
  assert.ok(count('merged') <= counts.get('merged')!, 'merged never counts over');
  const warnings = session.probes.filter((p) => p.spec === 'merged').flatMap((p) => p.warnings);
  assert.ok(
    warnings.some((w) => /its count is a lower bound/.test(w)),
    warnings.join('\n'),
  );
  assert.equal(session.probes.filter((p) => p.spec === 'chained').length, 1, 'one event for the chained copies');
  assert.equal(session.probes.filter((p) => p.spec === 'duplicated').length, 2, 'one event per duplicated path');
});

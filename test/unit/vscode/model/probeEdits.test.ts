// The plan that turns a running session's probes into the probe set's entries in place, and which binaries a
// changed file touches: only what differs is touched.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { changedBinaries, parseProbeSet, planEdits } from '../../../../src/vscode/model/probeSet';

const on = (spec: string) => ({ spec, enabled: true });
const off = (spec: string) => ({ spec, enabled: false });

test('adding a spec to a running session adds only it; the armed ones are not touched', () => {
  assert.deepEqual(planEdits([on('a x')], [on('a x'), on('b')]), { add: ['b'], remove: [], enable: [], disable: [] });
});

test('a spec gone from the set is removed alone; a toggled one is enabled or disabled, never re-added', () => {
  assert.deepEqual(planEdits([on('a'), on('b'), off('c')], [on('a'), off('b'), on('c')]), {
    add: [],
    remove: [],
    enable: ['c'],
    disable: ['b'],
  });
  assert.deepEqual(planEdits([on('a'), on('b')], [on('b')]), { add: [], remove: ['a'], enable: [], disable: [] });
});

test('a disabled spec that was never defined stays undefined; a refused one is not retried by unrelated edits', () => {
  assert.deepEqual(planEdits([on('a')], [on('a'), off('d'), on('typo x'), on('e')], new Set(['typo x'])), {
    add: ['e'],
    remove: [],
    enable: [],
    disable: [],
  });
});

test('the same set is no edit at all (our own save echoed back by the file watcher)', () => {
  const live = [on('a'), off('b')];
  assert.deepEqual(planEdits(live, live), { add: [], remove: [], enable: [], disable: [] });
});

test('a hand edit or checkout of the file touches only the binaries whose entries changed', () => {
  const before = parseProbeSet('{"version":1,"binaries":{"build/app":["main","f x"],"lib/l.so":["g"],"other":["h"]}}');
  const after = parseProbeSet(
    '{"version":1,"binaries":{"build/app":["main","f x"],"lib/l.so":[{"spec":"g","enabled":false}],"new/bin":["k"]}}',
  );
  assert.deepEqual(changedBinaries(before, after), ['lib/l.so', 'new/bin', 'other']);
  assert.deepEqual(changedBinaries(before, before), []);
  // Order matters (it is the order probes were added and are listed in).
  assert.deepEqual(changedBinaries(before, parseProbeSet('{"binaries":{"build/app":["f x","main"],"lib/l.so":["g"],"other":["h"]}}')), [
    'build/app',
  ]);
});

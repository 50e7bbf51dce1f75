// Lenses computed from a real binary's index (the calls fixture at -O2): what the editor draws above calls.c.
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { test } from 'node:test';
import { loadIndex } from '../../../../src/core/index/load';
import { lensesForFunctions } from '../../../../src/vscode/model/lenses';
import { fixtureOrSkip } from '../../../helpers/fixtures';

test('calls.c at -O2: Trace/Trace returns/Latency above probe-able functions, the inlined one says why', async (t) => {
  const f = await fixtureOrSkip(t, 'calls-O2');
  if (!f) return;
  const { index } = await loadIndex(f.path, { noCache: true });
  const file = join(f.srcDir, 'calls.c');
  const lenses = lensesForFunctions(index.functionsInFile(file), {
    trace: true,
    returns: true,
    latency: true,
    isGo: false,
    ambiguous: (n) => index.function(n).length > 1,
    src: 'calls.c',
  });
  const add = lenses.filter((l) => l.function === 'add_ints');
  assert.deepEqual(
    add.map((l) => l.title),
    ['Trace', 'Trace returns', 'Latency'],
  );
  assert.equal(add[0].line, index.function('add_ints')[0].line);
  assert.deepEqual(add[0].specs, ['add_ints $params']);
  const clamp = lenses.filter((l) => l.function === 'clamp_inline');
  assert.equal(clamp.length, 1);
  assert.equal(clamp[0].kind, 'unprobeable');
  assert.match(clamp[0].title, /not probe-able \(.*inlined.*\)/);
  // Lines only ever increase: lenses are in source order.
  for (let i = 1; i < lenses.length; i++) assert.ok(lenses[i].line >= lenses[i - 1].line);
});

// Field choices from a real binary's DWARF: account_deposit(struct account *acct, long amount) in calls.c.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { loadIndex } from '../../../../src/core/index/load';
import { resolvePoint } from '../../../../src/core/probes/resolve';
import { parsePoint } from '../../../../src/core/probes/spec';
import { siteContext, variablesAtSite } from '../../../../src/core/probes/variables';
import { fieldChoices } from '../../../../src/vscode/model/structFields';
import { fixtureOrSkip } from '../../../helpers/fixtures';

test('struct pointer parameters offer their fields as p->field with the field types', async (t) => {
  const f = await fixtureOrSkip(t, 'calls-O0');
  if (!f) return;
  const { index } = await loadIndex(f.path, { noCache: true });
  const site = resolvePoint(parsePoint('account_deposit'), index)[0];
  const vars = await variablesAtSite(index, site);
  const { access } = await siteContext(index);
  const choices = fieldChoices(vars, (o) => access.dwarf.typeOf(o));
  assert.deepEqual(
    choices.map((c) => c.arg),
    ['acct->id', 'acct->balance', 'acct->owner', 'acct->flags'],
  );
  assert.equal(choices.find((c) => c.arg === 'acct->owner')?.type, 'const char *');
  // Structs passed by value use '.'.
  const byValue = fieldChoices(await variablesAtSite(index, resolvePoint(parsePoint('point_dist2'), index)[0]), (o) =>
    access.dwarf.typeOf(o),
  );
  assert.deepEqual(
    byValue.map((c) => c.arg),
    ['p.x', 'p.y', 'q.x', 'q.y'],
  );
});

// The editor asks before arming a spec with more sites than the limit, saying what disarming will cost.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { allowedSites, siteQuestion } from '../../../../src/vscode/model/siteLimit';

test('no question at or under the limit; over it, the spec, its size and the teardown time', () => {
  assert.equal(siteQuestion([{ spec: 'f', sites: 128 }]), undefined);
  const q = siteQuestion([
    { spec: 'f', sites: 3 },
    { spec: 'MemoryContextSwitchTo', sites: 1490 },
  ]);
  assert.ok(q);
  assert.deepEqual(
    q.over.map((c) => c.spec),
    ['MemoryContextSwitchTo'],
  );
  assert.equal(
    q.message,
    "'MemoryContextSwitchTo' (1490 sites) would arm 1490 sites, more than 128. Stopping does not wait for them, but the target then spends about 67.1 s disarming them, while the traced program still takes their traps. Arm every site?",
  );
});

test('what was agreed raises the limit for those specs only', () => {
  const agreed = new Map([['MemoryContextSwitchTo', 1490]]);
  assert.equal(allowedSites(['f'], agreed), 128);
  assert.equal(allowedSites(['f', 'MemoryContextSwitchTo'], agreed), 1490);
});

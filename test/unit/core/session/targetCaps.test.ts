import { test } from 'node:test';
import assert from 'node:assert/strict';
import { compileOptionsFor, rememberCaps, someTargetArmsPerSite } from '../../../../src/core/session/targetCaps';
import type { Target } from '../../../../src/core/target/target';

const target = (host: string): Target => ({
  host,
  describe: () => host,
  exec: () => Promise.reject(new Error('not used')),
  close: () => Promise.resolve(),
});

test('the site limit matters only once a target without immediates (one event per site) has been seen', () => {
  assert.equal(someTargetArmsPerSite(), false, 'nothing known yet: sites share events');
  rememberCaps(target('new-kernel'), new Set(['uprobe_events', 'imm']));
  assert.equal(someTargetArmsPerSite(), false);
  assert.deepEqual(compileOptionsFor(new Set(['imm'])), { refCtrOffset: false, immediates: true });
  rememberCaps(target('old-kernel'), new Set(['uprobe_events', 'ref_ctr']));
  assert.equal(someTargetArmsPerSite(), true);
});

// Which hit table a user sees at a given panel width: a side column (~420 px) gets two lines per hit so the
// arguments keep the width; a wider panel one line, with the host column from the widest.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { layoutFor, MEDIUM_BELOW_CH, NARROW_BELOW_CH } from '../../../../webview/table/layout';

test('a 420 px side panel in a 7.8 px font is narrow: two lines per hit, a little less than two line heights', () => {
  assert.deepEqual(layoutFor(420, 7.8, 22), { name: 'narrow', rowHeight: 40 });
});

test('wider panels get one line per hit; the thresholds are in characters, so they follow the font size', () => {
  assert.deepEqual(layoutFor(800, 7.8, 22), { name: 'medium', rowHeight: 22 });
  assert.deepEqual(layoutFor(1200, 7.8, 22), { name: 'wide', rowHeight: 22 });
  // The same 800 px in a font twice as wide holds half the characters: narrow.
  assert.equal(layoutFor(800, 15.6, 22).name, 'narrow');
  // Exactly at the thresholds the wider layout applies.
  assert.equal(layoutFor(NARROW_BELOW_CH * 8, 8, 20).name, 'medium');
  assert.equal(layoutFor(NARROW_BELOW_CH * 8 - 1, 8, 20).name, 'narrow');
  assert.equal(layoutFor(MEDIUM_BELOW_CH * 8, 8, 20).name, 'wide');
  assert.equal(layoutFor(MEDIUM_BELOW_CH * 8 - 1, 8, 20).name, 'medium');
});

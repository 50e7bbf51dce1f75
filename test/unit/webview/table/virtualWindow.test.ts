import { test } from 'node:test';
import assert from 'node:assert/strict';
import { isNavKey, moveSelection, pageRows, scrollToReveal, visibleRange } from '../../../../webview/table/virtualWindow';

test('visibleRange holds the rows in view plus the overscan, clamped to the list', () => {
  // rows of 20px, 100px viewport: at scrollTop 200 rows 10..14 are visible
  assert.deepEqual(visibleRange(200, 100, 20, 1000, 0), { start: 10, end: 15 });
  assert.deepEqual(visibleRange(200, 100, 20, 1000, 3), { start: 7, end: 18 });
  assert.deepEqual(visibleRange(0, 100, 20, 1000, 3), { start: 0, end: 8 });
  assert.deepEqual(visibleRange(210, 100, 20, 1000, 0), { start: 10, end: 16 }, 'a partly visible row counts');
  assert.deepEqual(visibleRange(19_900, 100, 20, 1000, 5), { start: 990, end: 1000 });
  assert.deepEqual(visibleRange(0, 100, 20, 3, 5), { start: 0, end: 3 });
  assert.deepEqual(visibleRange(0, 100, 20, 0, 5), { start: 0, end: 0 });
  assert.deepEqual(visibleRange(0, 0, 20, 10, 5), { start: 0, end: 0 });
  const r = visibleRange(5_000, 100, 20, 100, 2);
  assert.ok(r.start <= r.end && r.end === 100, 'scrolled past the end after rows went away');
});

test('scrollToReveal scrolls the least needed, and not at all when the row is in view', () => {
  assert.equal(scrollToReveal(10, 200, 100, 20), 200);
  assert.equal(scrollToReveal(14, 200, 100, 20), 200);
  assert.equal(scrollToReveal(15, 200, 100, 20), 220);
  assert.equal(scrollToReveal(5, 200, 100, 20), 100);
  assert.equal(scrollToReveal(0, 0, 10, 20), 0);
});

test('keyboard navigation moves and clamps the selection', () => {
  const page = pageRows(100, 20);
  assert.equal(page, 5);
  assert.equal(moveSelection('ArrowDown', 3, 10, page), 4);
  assert.equal(moveSelection('ArrowDown', 9, 10, page), 9);
  assert.equal(moveSelection('ArrowUp', 0, 10, page), 0);
  assert.equal(moveSelection('PageDown', 7, 10, page), 9);
  assert.equal(moveSelection('PageUp', 7, 10, page), 2);
  assert.equal(moveSelection('PageUp', 2, 10, page), 0);
  assert.equal(moveSelection('Home', 7, 10, page), 0);
  assert.equal(moveSelection('End', 0, 10, page), 9);
  assert.equal(moveSelection('ArrowDown', -1, 10, page), 0, 'no selection yet: down starts at the top');
  assert.equal(moveSelection('ArrowUp', -1, 10, page), 9, 'no selection yet: up starts at the bottom');
  assert.equal(moveSelection('End', -1, 0, page), -1);
  assert.equal(pageRows(10, 20), 1);
  assert.equal(isNavKey('PageDown'), true);
  assert.equal(isNavKey('Enter'), false);
});

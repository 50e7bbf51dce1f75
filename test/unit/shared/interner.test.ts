import assert from 'node:assert/strict';
import { test } from 'node:test';
import { Interner } from '../../../src/shared/interner';

test('each distinct string gets the next id, in first-seen order, and the table lists them by id', () => {
  const t = new Interner();
  assert.deepEqual(
    ['main', 'bash', 'main', '', 'bash', 'ß'].map((s) => t.id(s)),
    [0, 1, 0, 2, 1, 3],
  );
  assert.deepEqual(t.strings, ['main', 'bash', '', 'ß']);
  assert.equal(t.size, 4);
});

test('find answers without adding; a table can start from an existing list and keep its ids', () => {
  const t = new Interner(['a.c', 'b.c', 'a.c']);
  assert.equal(t.find('b.c'), 1);
  assert.equal(t.find('a.c'), 0); // a repeated entry keeps its first id
  assert.equal(t.find('c.c'), undefined);
  assert.equal(t.size, 3);
  assert.equal(t.id('c.c'), 3);
  assert.deepEqual(t.strings, ['a.c', 'b.c', 'a.c', 'c.c']);
});

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { batchedOut } from '../../../src/cli/batchedOut';

test('lines of one event-loop turn are written with one write, in order; past the limit at once; flush writes the rest', async () => {
  const writes: string[] = [];
  const o = batchedOut((t) => writes.push(t), 10);
  o.out('a\n');
  o.out('b\n');
  assert.deepEqual(writes, [], 'nothing before the turn ends');
  await new Promise((r) => setImmediate(r));
  assert.deepEqual(writes, ['a\nb\n']);
  o.out('0123456789\n');
  assert.deepEqual(writes, ['a\nb\n', '0123456789\n'], 'past the limit: at once');
  o.out('c\n');
  o.flush();
  assert.deepEqual(writes, ['a\nb\n', '0123456789\n', 'c\n']);
  await new Promise((r) => setImmediate(r));
  assert.equal(writes.length, 3, 'a flushed batch is not written twice');
});

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { batchedOut, utf8Bytes } from '../../../src/cli/batchedOut';

test('lines of one event-loop turn are written with one write, in order; past the limit at once; flush writes the rest', async () => {
  const writes: string[] = [];
  const o = batchedOut((b) => writes.push(Buffer.from(b).toString('utf8')), 10);
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

test('a batch is written as the UTF-8 bytes Buffer.from makes: ASCII, Latin-1, other planes, lone surrogates, empty', () => {
  const texts = [
    '',
    '{"comm":"loop"}\n',
    'caf\u00e9 \u00ff\u0085',
    '\u2028\u4e2d\u6587 \ud83d\ude00',
    'a\ud800b\udc00c\ud83d',
    'x'.repeat(70000) + '\u00e9',
    'y'.repeat((1 << 20) + 1) + '\u00e9',
  ];
  for (const t of texts) assert.deepEqual(Buffer.from(utf8Bytes(t)), Buffer.from(t, 'utf8'), JSON.stringify(t.slice(0, 40)));
  const writes: Uint8Array[] = [];
  const o = batchedOut((b) => writes.push(b));
  for (const t of texts) o.out(t);
  o.flush();
  assert.deepEqual(Buffer.concat(writes), Buffer.from(texts.join(''), 'utf8'));
});

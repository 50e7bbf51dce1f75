import { test } from 'node:test';
import assert from 'node:assert/strict';
import { parseArgs, positiveNumber, UsageError } from '../../../src/cli/args';

const opts = { json: { kind: 'flag' }, host: { kind: 'value', repeat: true }, count: { kind: 'value' } } as const;

test('flags, repeated values, = syntax and -- separator', () => {
  const a = parseArgs(['bin', '--json', '--host', 'a', '--host=b@c:22', '--', '--not-an-option'], opts);
  assert.deepEqual(a.positionals, ['bin', '--not-an-option']);
  assert.ok(a.flags.has('json'));
  assert.deepEqual(a.values.get('host'), ['a', 'b@c:22']);
});

test('unknown, duplicated and malformed options are usage errors', () => {
  assert.throws(() => parseArgs(['--jsn'], opts), /unknown option --jsn/);
  assert.throws(() => parseArgs(['--count', '1', '--count', '2'], opts), /more than once/);
  assert.throws(() => parseArgs(['--count'], opts), /needs a value/);
  assert.throws(() => parseArgs(['--json=1'], opts), /takes no value/);
  assert.throws(() => positiveNumber(parseArgs(['--count', '-3'], opts), 'count', true), UsageError);
  assert.equal(positiveNumber(parseArgs(['--count', '30'], opts), 'count', true), 30);
});

// Fetched values as a user reads them in the CLI's NDJSON and the panel: the JSON number rule of
// docs/contracts.md applied to the text trace_pipe prints for each fetch type.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { parseTypedValue } from '../../../../src/core/tracefs/values';

test('integers are numbers below 2^53 and decimal strings from there', () => {
  assert.equal(parseTypedValue('42', 's32'), 42);
  assert.equal(parseTypedValue('-7', 's64'), -7);
  assert.equal(parseTypedValue('9007199254740991', 'u64'), 9007199254740991);
  assert.equal(parseTypedValue('9007199254740993', 'u64'), '9007199254740993');
  assert.equal(parseTypedValue('18446744073709551615', 'u64'), '18446744073709551615');
});

test('hex types and pointers are lower-case "0x…" strings; strings stay as printed; a fault is null', () => {
  assert.equal(parseTypedValue('0xDEADBEEF', 'x32'), '0xdeadbeef');
  assert.equal(parseTypedValue('0x7FFC0010', 'u64'), '0x7ffc0010');
  assert.equal(parseTypedValue('hello 42', 'string'), 'hello 42');
  assert.equal(parseTypedValue('123', 'ustring'), '123', 'a string of digits stays a string');
  assert.equal(parseTypedValue('main+0x10/0x40', 'symbol'), 'main+0x10/0x40');
  assert.equal(parseTypedValue(null, 's32'), null);
});

test('fixed-size arrays are arrays of their element type', () => {
  assert.deepEqual(parseTypedValue('{1,2,-3,4}', 's8[4]'), [1, 2, -3, 4]);
  assert.deepEqual(parseTypedValue('{0xA,0xff}', 'x8[2]'), ['0xa', '0xff']);
  assert.deepEqual(parseTypedValue('{}', 'u8[0]'), []);
});

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { hexAddress, jsonInteger, toJson } from '../../../../src/core/format/json';

test('integers stay numbers only while exact', () => {
  assert.equal(jsonInteger(-7), -7);
  assert.equal(jsonInteger(2 ** 53 - 1), 2 ** 53 - 1);
  assert.equal(jsonInteger(2n ** 53n), '9007199254740992');
  assert.equal(jsonInteger(18446744073709551615n), '18446744073709551615');
  assert.equal(jsonInteger(-(2n ** 63n)), '-9223372036854775808');
  assert.equal(toJson({ a: 1n, b: 2n ** 64n - 1n }), '{"a":1,"b":"18446744073709551615"}');
});

test('addresses are hex strings', () => {
  assert.equal(hexAddress(0x401136), '0x401136');
  assert.equal(hexAddress(0xffffffffffffffffn), '0xffffffffffffffff');
  assert.throws(() => hexAddress(-1));
});

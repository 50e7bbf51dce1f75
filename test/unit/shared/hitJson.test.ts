import { test } from 'node:test';
import assert from 'node:assert/strict';
import { hexAddress, hitToJson, hitToJsonLine, jsonInteger, toJson } from '../../../src/shared/hitJson';

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

test('NDJSON escapes U+2028, U+2029, U+0085 and the other C1 controls, which JSON.stringify leaves raw', () => {
  const value = { comm: 'a\u2028b\u2029c\u0085d\u009be\u007f', s: 'ok' };
  assert.equal(toJson(value), '{"comm":"a\\u2028b\\u2029c\\u0085d\\u009be\\u007f","s":"ok"}');
  assert.deepEqual(JSON.parse(toJson(value)), value, 'the escapes parse back to the same text');
  const hit = {
    host: 'h',
    probe: 'p',
    kind: 'entry' as const,
    pid: 1,
    tid: 1,
    comm: 'x\u2028y',
    cpu: 0,
    ts: 1,
    args: { s: 'q\u0085r' },
    event: 'p',
  };
  const line = hitToJsonLine(hit);
  assert.equal(
    line,
    '{"host":"h","probe":"p","kind":"entry","pid":1,"tid":1,"comm":"x\\u2028y","cpu":0,"ts":1,"args":{"s":"q\\u0085r"}}\n',
  );
  assert.equal(line.split(/\r\n|[\n\r\u0085\u2028\u2029]/).length, 2, 'a line splitter sees one line');
});

test("a hit's JSON object: fixed key order, values by the number rule, latency and site when known, no event", () => {
  const h = hitToJson({
    host: 'h',
    probe: 'p',
    kind: 'return',
    pid: 1,
    tid: 2,
    comm: 'c',
    cpu: 3,
    ts: 4.5,
    args: { big: 2 ** 60, arr: [1, null], p: '0x10' },
    retval: -1,
    latencyNs: 1000,
    site: { kind: 'clone', address: '0x401200', caller: 'f' },
    event: 'p__return',
  });
  assert.equal(
    toJson(h),
    '{"host":"h","probe":"p","kind":"return","pid":1,"tid":2,"comm":"c","cpu":3,"ts":4.5,"args":{"big":"1152921504606846976","arr":[1,null],"p":"0x10"},"retval":-1,"latencyNs":1000,"site":{"kind":"clone","address":"0x401200","caller":"f"}}',
  );
});

test("a hit's JSON names the arguments unavailable at its site (with why) and those inferred, after the site", () => {
  const h = hitToJson({
    host: 'h',
    probe: 'p',
    kind: 'entry',
    pid: 1,
    tid: 2,
    comm: 'c',
    cpu: 3,
    ts: 4.5,
    args: { v: 2, a: 5 },
    site: { kind: 'entry', address: '0x401200' },
    unavailable: { tag: 'no such parameter' },
    inferred: ['a'],
    event: 'p',
  });
  assert.equal(
    toJson(h),
    '{"host":"h","probe":"p","kind":"entry","pid":1,"tid":2,"comm":"c","cpu":3,"ts":4.5,"args":{"v":2,"a":5},"site":{"kind":"entry","address":"0x401200"},"unavailable":{"tag":"no such parameter"},"inferred":["a"]}',
  );
});

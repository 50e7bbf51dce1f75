import { test } from 'node:test';
import assert from 'node:assert/strict';
import { hexAddress, hitToJson, hitToJsonLine, jsonInteger, secondsText, toJson } from '../../../src/shared/hitJson';
import type { Hit } from '../../../src/shared/hit';

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

test("a kernel entry's caller (counts by caller) follows its site", () => {
  const h = { host: 'h', probe: 'p', kind: 'entry' as const, pid: 1, tid: 1, comm: 'c', cpu: 0, ts: 1, args: {}, event: 'p' };
  assert.equal(
    toJson(hitToJson({ ...h, site: { kind: 'entry', address: '0xffffffff81000000' }, caller: 'do_syscall_64' })),
    '{"host":"h","probe":"p","kind":"entry","pid":1,"tid":1,"comm":"c","cpu":0,"ts":1,"args":{},"site":{"kind":"entry","address":"0xffffffff81000000"},"caller":"do_syscall_64"}',
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

test('an NDJSON hit line is byte for byte the contract object through toJson, whatever the hit holds', () => {
  const base: Hit = {
    host: 'local',
    probe: 'f',
    event: 'e',
    kind: 'entry',
    pid: 7,
    tid: 8,
    comm: 'app',
    cpu: 1,
    ts: 12.000000345,
    args: {},
  };
  const hits: Hit[] = [
    base,
    { ...base, args: { a: 1, b: -2, big: (2n ** 64n) as unknown as number, s: 'x"y\\z\n', arr: [1, 'two', null, [3]], n: null } },
    { ...base, args: { '0': 5, z: 1, a: 2 }, comm: 'name\u2028with\u0085breakers\u007f' },
    { ...base, kind: 'return', retval: -1, latencyNs: 1234 },
    { ...base, nsPid: 1, kind: 'return', retval: 3 },
    { ...base, kind: 'return', retval: 'ok', latencyNs: 0 },
    { ...base, retval: (2n ** 60n) as unknown as number },
    { ...base, site: { kind: 'inlined', address: '0x40', caller: 'main', file: '/src/a.c', line: 3 } },
    { ...base, site: { kind: 'entry', address: '0x10' } },
    { ...base, site: { kind: 'entry', address: '0xffffffff81000000' }, caller: 'do_syscall_64' },
    { ...base, unavailable: { x: 'optimized out' }, inferred: ['y'], cut: ['s'] },
    { ...base, unavailable: {}, inferred: [], cut: [] },
    { ...base, ts: 1e21, pid: Number.NaN, args: { f: 0.5, neg0: -0, unsafe: 2 ** 60 } },
    { ...base, host: 'root@h:22', probe: 'p\u2029', args: { 'k\u2028': 'v' } },
    { ...base, args: { s: 'a\u2028b\u009b', arr: ['c\u0085', 1] }, retval: 'r\u2029' },
    { ...base, site: { kind: 'inlined', address: '0x40', caller: 'm\u2028', file: '/src/\u0085.c', line: 3 } },
  ];
  // Twice: the second time the probe's fields, the site and the comm come from what the first one quoted.
  for (const h of [...hits, ...hits])
    assert.equal(
      hitToJsonLine(h),
      `${toJson(hitToJson(h))}\n`,
      JSON.stringify(h, (_k, v: unknown) => (typeof v === 'bigint' ? `${v}n` : v)),
    );
});

test('a time is written as String writes it: on the ns and µs grids, off them, at the edges, not finite', () => {
  // A seeded generator: the same values every run.
  let seed = 0x2545f491;
  const rand = () => {
    seed ^= seed << 13;
    seed ^= seed >>> 17;
    seed ^= seed << 5;
    return (seed >>> 0) / 2 ** 32;
  };
  const values: number[] = [0, -0, -1.5, 0.5, 1e-7, 1, 1.000000001, 2 ** 53, 1e21, 1e300, NaN, Infinity, -Infinity];
  for (let i = 0; i < 300_000; i++) {
    const sec = Math.floor(rand() * 2 ** 24);
    const ns = Math.floor(rand() * 1e9);
    // The binary stream's time (seconds + ns / 1e9), a correctly rounded one, the text stream's µs, anything at all.
    values.push(
      sec + ns / 1e9,
      (sec * 1e9 + ns) / 1e9,
      Number(`${sec}.${String(Math.floor(ns / 1000)).padStart(6, '0')}`),
      rand() * 2 ** 24,
    );
  }
  for (const p of [1, 10, 100, 1000, 1e4, 1e5, 1e6, 2 ** 21, 2 ** 22, 2 ** 23, 8388607, 2 ** 24])
    for (let d = -2000; d <= 2000; d++) values.push(p + d / 1e9, p + d * Number.EPSILON * p, p + d / 1e6);
  let checked = 0;
  for (const x of values) {
    const want = Number.isFinite(x) ? String(x) : 'null';
    if (secondsText(x) !== want) assert.fail(`secondsText(${String(x)}) = ${secondsText(x)}, String gives ${want}`);
    checked++;
  }
  assert.ok(checked > 1_000_000);
});

test('hits that differ from the one before only in host, probe or kind each get their own head', () => {
  const base: Hit = { host: 'a', probe: 'p', kind: 'entry', pid: 1, tid: 1, comm: 'c', cpu: 0, ts: 1.5, args: {}, event: 'p' };
  const hits: Hit[] = [
    base,
    { ...base, host: 'b' },
    { ...base, host: 'b', kind: 'return' },
    { ...base, probe: 'q' },
    base,
    { ...base, host: '' },
    { ...base, probe: '' },
  ];
  for (const h of [...hits, ...hits.reverse()]) assert.equal(hitToJsonLine(h), `${toJson(hitToJson(h))}\n`);
});

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { isNameRecord, nameRecord, namesAsData, own, parseJsonNames } from '../../../src/shared/names';

const HOSTILE = ['__proto__', 'constructor', 'toString', 'valueOf', 'hasOwnProperty'];

test('a name record keeps every hostile name as data and lacks the names it was not given', () => {
  const r = nameRecord<number>();
  for (const [i, n] of HOSTILE.entries()) {
    assert.equal(r[n], undefined, `${n} before it is set`);
    r[n] = i;
  }
  assert.deepEqual(Object.keys(r), HOSTILE);
  assert.equal(r.__proto__, 0);
  for (const m of ['toString', 'valueOf', 'hasOwnProperty', 'isPrototypeOf'])
    assert.equal(new Map(Object.entries(r)).has(m), m !== 'isPrototypeOf' && HOSTILE.includes(m));
  assert.equal('isPrototypeOf' in r, false, 'nothing is inherited');
  assert.equal(isNameRecord(r), true);
  assert.equal(JSON.stringify(r), '{"__proto__":0,"constructor":1,"toString":2,"valueOf":3,"hasOwnProperty":4}');
  assert.deepEqual(Object.keys(nameRecord(Object.entries(r))), HOSTILE, 'from entries');
  assert.deepEqual(Object.keys(nameRecord(r)), HOSTILE, 'from a record');
});

test('own reads only own keys, from a record JSON made', () => {
  const parsed = JSON.parse('{"a":1,"__proto__":2}') as Record<string, number>;
  assert.equal(own(parsed, 'a'), 1);
  assert.equal(own(parsed, '__proto__'), 2);
  assert.equal(own(parsed, 'constructor'), undefined, "Object.prototype's members are not keys");
  assert.equal(own(undefined, 'a'), undefined);
});

test('data from JSON or a clone reads as maps at every depth, arrays and class instances left as they are', () => {
  const v = parseJsonNames('{"hits":{"__proto__":3,"f":1},"list":[{"constructor":2}],"n":1}') as {
    hits: Record<string, number>;
    list: Array<Record<string, number>>;
    n: number;
  };
  assert.equal(v.hits.__proto__, 3);
  assert.equal(v.hits.toString, undefined);
  assert.equal(v.list[0].constructor, 2);
  assert.equal(v.list[0].valueOf, undefined);
  assert.equal('hasOwnProperty' in v, false);
  const m = new Map([['a', 1]]);
  const cloned = namesAsData(structuredClone({ m, d: new Date(0) }));
  assert.equal(cloned.m instanceof Map, true);
  assert.equal(cloned.d instanceof Date, true);
});

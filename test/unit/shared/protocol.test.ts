import { test } from 'node:test';
import assert from 'node:assert/strict';
import { log2Bucket, type Hit } from '../../../src/shared/hit';
import { RequestTracker, decodeHits, encodeHits, type FromWebview } from '../../../src/shared/protocol';
import { plainData } from '../../helpers/plain';

const site = { kind: 'clone' as const, address: '0x401200', caller: 'add' };
const hits: Hit[] = [
  {
    host: 'local',
    probe: 'add',
    kind: 'entry',
    pid: 10,
    tid: 11,
    comm: 'calc',
    cpu: 0,
    ts: 1.5,
    args: { a: 3, b: -7 },
    event: 'add',
    site,
  },
  {
    host: 'web1',
    probe: 'add',
    kind: 'return',
    pid: 10,
    tid: 12,
    comm: 'calc',
    cpu: 1,
    ts: 1.75,
    args: {},
    retval: '18446744073709551615',
    latencyNs: 2100,
    event: 'add__return',
    site,
  },
  {
    host: 'local',
    probe: 'greet',
    kind: 'line',
    pid: 20,
    tid: 20,
    comm: 'calc',
    cpu: 1,
    ts: 2,
    args: { name: 'a "b",\nc', p: '0x7ffd1234', f: null, bytes: [1, [2, null]] },
    retval: null,
    event: 'greet',
  },
  { host: 'local', probe: 'add', kind: 'usdt', pid: 10, tid: 11, comm: 'calc', cpu: 0, ts: 3, args: { a: 0, b: 1 }, event: 'add' },
];

test('a hit batch decodes to exactly the hits encoded (u64 strings, hex, quotes, kinds, null, arrays, sites, missing fields)', () => {
  assert.deepEqual(plainData(decodeHits(encodeHits(hits))), hits);
  assert.equal(decodeHits(encodeHits(hits))[2].retval, null, 'a faulted return value stays null, not absent');
});

test('a batch interns repeated strings and arg-name lists once', () => {
  const b = encodeHits(hits);
  assert.equal(b.n, 4);
  assert.equal(b.strings.filter((s) => s === 'calc').length, 1);
  assert.equal(b.strings.filter((s) => s === 'add').length, 1);
  assert.equal(b.shapes.length, 3, 'shapes: (a,b), (), (name,p)');
  assert.deepEqual(plainData([...b.latencyNs]), [-1, 2100, -1, -1]);
  assert.ok(b.ts instanceof Float64Array && b.pid instanceof Int32Array, 'numeric columns are typed arrays');
});

test('an empty batch round-trips', () => {
  assert.deepEqual(plainData(decodeHits(encodeHits([]))), []);
});

test('log2Bucket puts each latency in [2^i, 2^(i+1))', () => {
  assert.equal(log2Bucket(0), 0);
  assert.equal(log2Bucket(1), 0);
  assert.equal(log2Bucket(2), 1);
  assert.equal(log2Bucket(3), 1);
  assert.equal(log2Bucket(1024), 10);
  assert.equal(log2Bucket(1023), 9);
  assert.equal(log2Bucket(2 ** 49), 49);
  assert.equal(log2Bucket(2 ** 49 - 1), 48);
});

test('RequestTracker matches responses to requests by id and rejects the rest on dispose', async () => {
  const sent: FromWebview[] = [];
  const tr = new RequestTracker();
  const a = tr.request(
    (m) => sent.push(m),
    (requestId) => ({ type: 'export', requestId, format: 'json', filter: '' }),
  );
  const b = tr.request(
    (m) => sent.push(m),
    (requestId) => ({ type: 'export', requestId, format: 'csv', filter: 'x' }),
  );
  const c = tr.request(
    (m) => sent.push(m),
    (requestId) => ({ type: 'export', requestId, format: 'csv', filter: '' }),
  );
  const ids = sent.map((m) => (m.type === 'export' ? m.requestId : -1));
  assert.equal(new Set(ids).size, 3);
  assert.equal(tr.settle({ type: 'response', requestId: ids[1], ok: false, error: 'disk full' }), true);
  assert.equal(tr.settle({ type: 'response', requestId: ids[0], ok: true, result: '/tmp/x.json' }), true);
  assert.equal(tr.settle({ type: 'response', requestId: ids[0], ok: true, result: 'again' }), false, 'a duplicate is ignored');
  assert.equal(tr.settle({ type: 'response', requestId: 999, ok: true, result: '' }), false);
  assert.equal(await a, '/tmp/x.json');
  await assert.rejects(b, /disk full/);
  assert.equal(tr.outstanding, 1);
  tr.dispose();
  await assert.rejects(c, /closed/);
});

test('a batch carries what a hit says about its arguments: unavailable at this site, inferred from the ABI', () => {
  const notes = { unavailable: { ptr: "createStringObject (hiredis.c:124) entry has no parameter or variable 'ptr'" } };
  const inferred = ['x'];
  const noted: Hit[] = [
    { ...hits[0], args: { len: 4 }, ...notes },
    { ...hits[0], args: { len: 5 }, ...notes },
    { ...hits[0], args: { x: 5 }, inferred },
    hits[3],
  ];
  const b = encodeHits(noted);
  assert.equal(b.notes.length, 2, 'one note per probe, interned');
  assert.deepEqual(plainData(decodeHits(b)), noted);
});

test('an entry decodes without a return value even when the batch went as JSON (undefined becomes null there)', () => {
  const sent = encodeHits(hits);
  const b = { ...sent, retval: JSON.parse(JSON.stringify(sent.retval)) as typeof sent.retval };
  assert.deepEqual(plainData(decodeHits(b)), hits);
});

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { csvField, hitsToCsv, hitsToJson, jsonValue, type ExportHit } from '../../../../src/core/session/export';

const hits: ExportHit[] = [
  {
    host: 'local',
    probe: 'greet',
    kind: 'entry',
    pid: 1,
    tid: 2,
    comm: 'a,b',
    cpu: 0,
    ts: 12.000001,
    args: { name: 'say "hi",\r\nbye', n: -3 },
  },
  {
    host: 'local',
    probe: 'greet',
    kind: 'return',
    pid: 1,
    tid: 2,
    comm: 'a,b',
    cpu: 0,
    ts: 12.5,
    args: {},
    retval: 18446744073709551615n,
    latencyNs: 4096,
  },
];

test('JSON export is one array of contracts-shaped hits that parses back', () => {
  const text = hitsToJson(hits);
  const parsed = JSON.parse(text) as Record<string, unknown>[];
  assert.equal(parsed.length, 2);
  assert.deepEqual(Object.keys(parsed[0]), ['host', 'probe', 'kind', 'pid', 'tid', 'comm', 'cpu', 'ts', 'args']);
  assert.deepEqual(parsed[0].args, { name: 'say "hi",\r\nbye', n: -3 });
  assert.equal(parsed[1].retval, '18446744073709551615', 'u64 beyond 2^53 is a decimal string');
  assert.equal('latencyNs' in parsed[1], false, 'JSON keeps to the contract');
  assert.equal(hitsToJson([]), '[]\n');
  assert.equal(text.split('\n').length, 5, 'one hit per line between the brackets');
});

test('jsonValue keeps safe integers as numbers and big ones as strings', () => {
  assert.equal(jsonValue(2n ** 53n - 1n), 2 ** 53 - 1);
  assert.equal(jsonValue(-(2n ** 60n)), '-1152921504606846976');
  assert.equal(jsonValue(2 ** 60), '1152921504606846976');
  assert.equal(jsonValue('0xdead'), '0xdead');
  assert.equal(jsonValue(1.5), 1.5);
});

test('csvField quotes commas, quotes, CR and LF per RFC 4180 and nothing else', () => {
  assert.equal(csvField('plain'), 'plain');
  assert.equal(csvField('a,b'), '"a,b"');
  assert.equal(csvField('say "hi"'), '"say ""hi"""');
  assert.equal(csvField('x\ny'), '"x\ny"');
  assert.equal(csvField('x\ry'), '"x\ry"');
  assert.equal(csvField(-3), '-3');
  assert.equal(csvField(undefined), '');
});

/** A small RFC 4180 reader, to prove the export is readable, not just to compare strings. */
function parseCsv(text: string): string[][] {
  const rows: string[][] = [];
  let row: string[] = [];
  let field = '';
  let i = 0;
  let quoted = false;
  while (i < text.length) {
    const c = text[i];
    if (quoted) {
      if (c === '"' && text[i + 1] === '"') {
        field += '"';
        i += 2;
        continue;
      }
      if (c === '"') {
        quoted = false;
        i++;
        continue;
      }
      field += c;
      i++;
      continue;
    }
    if (c === '"') {
      quoted = true;
      i++;
      continue;
    }
    if (c === ',') {
      row.push(field);
      field = '';
      i++;
      continue;
    }
    if (c === '\r' && text[i + 1] === '\n') {
      row.push(field);
      rows.push(row);
      row = [];
      field = '';
      i += 2;
      continue;
    }
    field += c;
    i++;
  }
  assert.equal(field, '', 'the file ends with CRLF');
  return rows;
}

test('CSV export has a header, one record per hit, a column per argument, and survives hostile text', () => {
  const rows = parseCsv(hitsToCsv(hits));
  assert.deepEqual(rows[0], ['ts', 'host', 'probe', 'kind', 'pid', 'tid', 'comm', 'cpu', 'retval', 'latency_ns', 'args.name', 'args.n']);
  assert.equal(rows.length, 3);
  assert.deepEqual(rows[1], ['12.000001', 'local', 'greet', 'entry', '1', '2', 'a,b', '0', '', '', 'say "hi",\r\nbye', '-3']);
  assert.deepEqual(rows[2], ['12.5', 'local', 'greet', 'return', '1', '2', 'a,b', '0', '18446744073709551615', '4096', '', '']);
});

test('CSV export of no hits is the header alone', () => {
  assert.equal(hitsToCsv([]), 'ts,host,probe,kind,pid,tid,comm,cpu,retval,latency_ns\r\n');
});

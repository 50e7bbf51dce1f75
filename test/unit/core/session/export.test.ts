import { test } from 'node:test';
import assert from 'node:assert/strict';
import { csvField, hitsToCsv, hitsToJson } from '../../../../src/core/session/export';
import type { Hit } from '../../../../src/shared/hit';

const hits: Hit[] = [
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
    event: 'greet',
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
    retval: '18446744073709551615',
    latencyNs: 4096,
    event: 'greet',
  },
];

test('JSON export is one array of contract hit objects that parses back', () => {
  const text = hitsToJson(hits);
  const parsed = JSON.parse(text) as Record<string, unknown>[];
  assert.equal(parsed.length, 2);
  assert.deepEqual(Object.keys(parsed[0]), ['host', 'probe', 'kind', 'pid', 'tid', 'comm', 'cpu', 'ts', 'args']);
  assert.deepEqual(parsed[0].args, { name: 'say "hi",\r\nbye', n: -3 });
  assert.equal(parsed[1].retval, '18446744073709551615', 'u64 beyond 2^53 is a decimal string');
  assert.equal(parsed[1].latencyNs, 4096, 'a paired return carries its latency');
  assert.equal('event' in parsed[1], false, 'the tracefs event name stays inside the engine');
  assert.equal(hitsToJson([]), '[]\n');
  assert.equal(text.split('\n').length, 5, 'one hit per line between the brackets');
});

test('JSON export writes a faulted fetch as null and an array fetch as an array, not as their text', () => {
  const h: Hit = { ...hits[0], args: { p: null, bytes: [1, 2], big: 2 ** 60 } };
  assert.equal(
    hitsToJson([h]).split('\n')[1],
    JSON.stringify({ ...h, args: { p: null, bytes: [1, 2], big: '1152921504606846976' }, event: undefined }),
  );
});

test('csvField quotes commas, quotes, CR and LF per RFC 4180 and nothing else', () => {
  assert.equal(csvField('plain'), 'plain');
  assert.equal(csvField('a,b'), '"a,b"');
  assert.equal(csvField('say "hi"'), '"say ""hi"""');
  assert.equal(csvField('x\ny'), '"x\ny"');
  assert.equal(csvField('x\ry'), '"x\ry"');
  assert.equal(csvField(-3), '-3');
  assert.equal(csvField(undefined), '');
  assert.equal(csvField(null), 'null');
  assert.equal(csvField([1, 2]), '"[1,2]"');
});

test('CSV cells that a spreadsheet would run as a formula start with a quote; numbers stay numbers', () => {
  assert.equal(csvField('=HYPERLINK("http://x","y")'), '"\'=HYPERLINK(""http://x"",""y"")"');
  assert.equal(csvField('+1+cmd|x'), "'+1+cmd|x");
  assert.equal(csvField('-2+3'), "'-2+3");
  assert.equal(csvField('@SUM(A1)'), "'@SUM(A1)");
  assert.equal(csvField('\t=1'), "'\t=1");
  assert.equal(csvField('\r=1'), '"\'\r=1"');
  assert.equal(csvField(-5), '-5', 'a negative number is not a formula');
  assert.equal(csvField('-5'), '-5', 'nor is a negative integer past 2^53 written as a decimal string');
  assert.equal(csvField('-18446744073709551615'), '-18446744073709551615');
  assert.equal(csvField('a=b'), 'a=b', 'only the first character counts');
  const rows = hitsToCsv([{ ...hits[0], comm: '=cmd', args: { s: '@x', n: -5 } }]).split('\r\n');
  assert.equal(rows[1], "12.000001,local,greet,entry,1,2,'=cmd,0,,,'@x,-5");
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

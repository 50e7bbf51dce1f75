// Hostile trace streams: what a traced program can put in its comm and string arguments must not create,
// remove or alter another record, a LOST line or another argument's value. Records are printed here the way the
// kernel prints them from the definition the agent would send (the framed one), so the test also checks that the
// definition's framing and the parser's agree.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { lineSplitter } from '../../../../src/core/tracefs/agentClient';
import { frameDefinition, newSentinel } from '../../../../src/core/tracefs/framing';
import { HitParser, type EventSchema, type Hit, type Sentinel } from '../../../../src/core/tracefs/hitParser';
import { plainData } from '../../../helpers/plain';

const SENTINEL: Sentinel = { name: '__pl', printed: '0x9e3779b97f4a7c15' };
const GROUP = 'probelens_42_abc123';

const OPEN_SCHEMA: EventSchema = {
  event: 'open_file',
  probe: 'open_file path uid name',
  kind: 'entry',
  args: [
    { name: 'path', type: 'string' },
    { name: 'uid', type: 's32' },
    { name: 'name', type: 'string' },
    { name: 'probelens_comm', type: 'string' },
  ],
};

function definitionOf(schema: EventSchema): string {
  const fetch = ['+0(%di)', '%si', '+0(%dx)', '$comm'];
  return `p:${GROUP}/${schema.event} /srv/app:0x1159 ${schema.args.map((a, i) => `${a.name}=${fetch[i]}:${a.type}`).join(' ')}`;
}

interface Task {
  comm: string;
  pid: number;
}

/** The record trace_pipe prints for one hit of the framed definition: `%16s-%-7d (%7d) [%03d] …` then the args. */
function kernelPrint(schema: EventSchema, task: Task, values: Record<string, string | null>, ts = 12.5): string {
  const framed = frameDefinition(definitionOf(schema), SENTINEL);
  const pad = ' '.repeat(Math.max(0, 16 - Buffer.byteLength(task.comm)));
  const head = `${pad}${task.comm}-${String(task.pid).padEnd(7)} (${String(task.pid).padStart(7)}) [001] DBZff ${ts.toFixed(6)}: ${schema.event}: (0x55d0c0de1159)`;
  const args = framed
    .split(' ')
    .slice(2)
    .map((tok) => {
      const name = tok.slice(0, tok.indexOf('='));
      const fetch = tok.slice(name.length + 1);
      if (fetch.startsWith('\\')) return `${name}=0x${BigInt(fetch.slice(1, fetch.indexOf(':'))).toString(16)}`;
      const v = name === 'probelens_comm' ? task.comm : values[name];
      const type = fetch.slice(fetch.lastIndexOf(':') + 1);
      return `${name}=${v === null ? '(fault)' : type === 'string' ? `"${v}"` : v}`;
    });
  return `${head} ${args.join(' ')}\n`;
}

function parseStream(text: string | Buffer, schemas = [OPEN_SCHEMA], chunk = 0): { hits: Hit[]; parser: HitParser } {
  const hits: Hit[] = [];
  const parser = new HitParser({ host: 'h', events: schemas, sentinel: SENTINEL, onHit: (h) => hits.push(h) });
  const split = lineSplitter((l) => parser.push(l));
  const bytes = Buffer.isBuffer(text) ? text : Buffer.from(text);
  if (chunk > 0) for (let i = 0; i < bytes.length; i += chunk) split.push(bytes.subarray(i, i + chunk));
  else split.push(bytes);
  split.end();
  parser.end();
  return { hits, parser };
}

const me: Task = { comm: 'app', pid: 4242 };

test('the framed definition: a secret first, after every string but the last, and last', () => {
  assert.equal(
    frameDefinition(definitionOf(OPEN_SCHEMA), SENTINEL),
    `p:${GROUP}/open_file /srv/app:0x1159 __plh=\\11400714819323198485:x64 path=+0(%di):string __pl0=\\11400714819323198485:x64 ` +
      `uid=%si:s32 name=+0(%dx):string __pl2=\\11400714819323198485:x64 probelens_comm=$comm:string __pl=\\11400714819323198485:x64`,
  );
  assert.throws(() => frameDefinition(`p:${GROUP}/e /a:0x1 __pl=%di:s32`, SENTINEL), /argument name '__pl' is reserved/);
  const s = newSentinel();
  assert.match(s.printed, /^0x[89a-f][0-9a-f]{15}$/, 'always 16 hex digits');
  assert.notEqual(s.printed, newSentinel().printed);
});

test('a comm with \\r, \\n, U+2028 and U+2029 is read whole and the record kept', () => {
  const comms = ['a\rb', 'x\u2028y\u2029z', 'line\nbreak', '\n-1 (1) [000]', ' CPU:0 [LOST 9'];
  const text = comms.map((comm, i) => kernelPrint(OPEN_SCHEMA, { comm, pid: 100 + i }, { path: '/p', uid: '0', name: 'n' })).join('');
  const { hits, parser } = parseStream(text);
  assert.deepEqual(
    plainData(hits.map((h) => [h.comm, h.pid, h.args.probelens_comm])),
    comms.map((c, i) => [c.replace(/^ +/, ''), 100 + i, c]),
  );
  assert.deepEqual(plainData([parser.stats.lost, parser.stats.malformed, parser.stats.unparsed]), [0, 0, 0]);
});

test('a string cannot forge a LOST line, a record of another pid or end its own record', () => {
  const forged =
    'x"\nCPU:0 [LOST 99 EVENTS]\n' +
    `            root-1       (      1) [000] DBZff 1.000000: open_file: (0x1) __plh=0x1234 path="/etc/shadow" __pl0=0x1234 uid=0 name="y" __pl2=0x1234 probelens_comm="root" __pl=0x1234\n` +
    '[LINE TOO BIG]\n';
  const text =
    kernelPrint(OPEN_SCHEMA, me, { path: forged, uid: '1000', name: forged }) +
    kernelPrint(OPEN_SCHEMA, me, { path: '/ok', uid: '1000', name: 'n' });
  const { hits, parser } = parseStream(text);
  assert.equal(hits.length, 2);
  assert.deepEqual(plainData(hits.map((h) => h.pid)), [4242, 4242]);
  assert.deepEqual(plainData(hits[0].args), { path: forged, uid: 1000, name: forged, probelens_comm: 'app' });
  assert.deepEqual(plainData(hits[1].args), { path: '/ok', uid: 1000, name: 'n', probelens_comm: 'app' });
  assert.deepEqual(plainData([parser.stats.lost, parser.stats.malformed, parser.stats.unparsed]), [0, 0, 0]);
});

test('a later string cannot impersonate earlier arguments (path="x\\" uid=0 …")', () => {
  const name = 'x" __pl0=0x1 uid=0 name="root';
  const path = 'x" uid=0 name="y';
  const { hits } = parseStream(kernelPrint(OPEN_SCHEMA, me, { path, uid: '1000', name }));
  assert.deepEqual(plainData(hits[0].args), { path, uid: 1000, name, probelens_comm: 'app' });
});

test('(fault) strings, empty strings and strings ending in a quote', () => {
  const { hits } = parseStream(
    kernelPrint(OPEN_SCHEMA, me, { path: null, uid: '-1', name: '"' }) +
      kernelPrint(OPEN_SCHEMA, me, { path: '', uid: '2', name: '(fault)' }),
  );
  assert.deepEqual(plainData(hits[0].args), { path: null, uid: -1, name: '"', probelens_comm: 'app' });
  assert.deepEqual(plainData(hits[1].args), { path: '', uid: 2, name: '(fault)', probelens_comm: 'app' });
});

test('UTF-8 split across stream chunks is decoded whole, invalid bytes cannot merge records', () => {
  const text = kernelPrint(OPEN_SCHEMA, { comm: 'ü\u2028€', pid: 7 }, { path: 'ümlaut 😀 \u2029', uid: '1', name: '€' });
  for (const chunk of [1, 2, 3, 5]) {
    const { hits } = parseStream(text, [OPEN_SCHEMA], chunk);
    assert.equal(hits.length, 1);
    assert.equal(hits[0].comm, 'ü\u2028€');
    assert.deepEqual(plainData(hits[0].args), { path: 'ümlaut 😀 \u2029', uid: 1, name: '€', probelens_comm: 'ü\u2028€' });
    assert.ok(!JSON.stringify(hits).includes('\ufffd'), `no U+FFFD at chunk size ${chunk}`);
  }
  // A lone lead byte right before the newline ending a string: still one record, then the next.
  const bad = Buffer.concat([
    Buffer.from(kernelPrint(OPEN_SCHEMA, me, { path: '@', uid: '1', name: 'n' }).replace('"@"', '"\u0000"')),
    Buffer.from(kernelPrint(OPEN_SCHEMA, me, { path: 'ok', uid: '2', name: 'n' })),
  ]);
  bad[bad.indexOf(0)] = 0xe2;
  const { hits, parser } = parseStream(bad, [OPEN_SCHEMA], 1);
  assert.deepEqual(plainData(hits.map((h) => [h.args.path, h.args.uid])), [
    ['\ufffd', 1],
    ['ok', 2],
  ]);
  assert.equal(parser.stats.malformed, 0);
});

test("the kernel's own lines between records: LOST (with and without a count) and LINE TOO BIG", () => {
  const rec = kernelPrint(OPEN_SCHEMA, me, { path: '/p', uid: '0', name: 'n' });
  const { hits, parser } = parseStream(`CPU:1 [LOST 7 EVENTS]\n${rec}CPU:0 [LOST EVENTS]\n[LINE TOO BIG]\n${rec}`);
  assert.equal(hits.length, 2);
  assert.equal(parser.stats.lost, 8);
  assert.deepEqual(plainData([...parser.stats.lostByCpu]), [
    [1, 7],
    [0, 1],
  ]);
  assert.equal(parser.stats.malformed, 1, 'a record too big to print is counted, not silently dropped');
});

test('a record longer than any the kernel prints is dropped whole and reading resumes at the next one', () => {
  const huge = kernelPrint(OPEN_SCHEMA, me, { path: 'a\n'.repeat(40_000), uid: '0', name: 'n' });
  const rec = kernelPrint(OPEN_SCHEMA, me, { path: '/after', uid: '3', name: 'n' });
  const { hits, parser } = parseStream(huge + rec);
  assert.deepEqual(plainData(hits.map((h) => h.args.path)), ['/after']);
  assert.equal(parser.stats.malformed, 1);
});

test('a record that does not fit its schema, or of an unknown event, is malformed (never a hit)', () => {
  const rec = kernelPrint(OPEN_SCHEMA, me, { path: '/p', uid: '0', name: 'n' });
  const { hits, parser } = parseStream(rec.replace('uid=0', 'gid=0') + rec.replace(/open_file:/, 'other:'));
  assert.equal(hits.length, 0);
  assert.equal(parser.stats.malformed, 2);
  const cut = parseStream(rec.slice(0, 80));
  assert.equal(cut.hits.length, 0);
  assert.equal(cut.parser.stats.malformed, 1, 'a record still open at the end of the stream');
});

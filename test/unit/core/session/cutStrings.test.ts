// A string read only in part (longer than the kernel reads) is marked cut in every output: the CLI's text line,
// the NDJSON hit, the panel's column batches (and so its rows and export), the editor's decoration and hover.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { withStringHeads, STRING_HEAD_BYTES } from '../../../../src/core/probes/args';
import { Aggregates } from '../../../../src/core/session/aggregates';
import { hitsToCsv } from '../../../../src/core/session/export';
import { stringHead } from '../../../../src/core/session/cutStrings';
import type { Hit } from '../../../../src/shared/hit';
import { hitToJson } from '../../../../src/shared/hitJson';
import { formatHitLine } from '../../../../src/shared/hitText';
import { decodeHits, encodeHits } from '../../../../src/shared/protocol';
import { decorationText, hoverMarkdown } from '../../../../src/vscode/model/format';
import { statsForSpec } from '../../../../src/vscode/model/stats';

const head = 'abcdefghijklmnopqrstuvwxyzabcdefghijklmnopqrstuvwxyzabcdefghijkl';
const hit = (cut?: string[]): Hit => ({
  host: 'local',
  probe: 'take_str',
  kind: 'entry',
  pid: 7,
  tid: 7,
  comm: 'longstr',
  cpu: 0,
  ts: 1.5,
  args: { s: head, len: 5000 },
  event: 'take_str',
  ...(cut ? { cut } : {}),
});

test('a string read through a pointer gets a hidden head of raw words; $comm and numbers do not', () => {
  const out = withStringHeads([
    { name: 's', fetch: '+0(%di)', type: 'string', display: 'string' },
    { name: 'u', fetch: '+u8(%si)', type: 'ustring', display: 'string' },
    { name: 'c', fetch: '$comm', type: 'string', display: 'string' },
    { name: 'n', fetch: '%dx', type: 's32', display: 'signed' },
  ]);
  assert.deepEqual(
    out.map((a) => [a.name, a.fetch, a.type, a.hidden ?? false, a.headArg]),
    [
      ['s', '+0(%di)', 'string', false, 's__head'],
      ['s__head', '+0(%di)', `x64[${STRING_HEAD_BYTES / 8}]`, true, undefined],
      ['u', '+u8(%si)', 'ustring', false, 'u__head'],
      ['u__head', '+u8(%si)', 'x64[8]', true, undefined],
      ['c', '$comm', 'string', false, undefined],
      ['n', '%dx', 's32', false, undefined],
    ],
  );
});

test('the head words give the string’s beginning only when they hold no NUL, in whole UTF-8 characters', () => {
  const words = (b: Buffer) => Array.from({ length: b.length / 8 }, (_, i) => `0x${b.readBigUInt64LE(i * 8).toString(16)}`);
  assert.equal(stringHead(words(Buffer.from(head))), head);
  const short = Buffer.alloc(64);
  short.write('abc');
  assert.equal(stringHead(words(short)), undefined, 'a NUL inside: a short string, not a long one');
  assert.equal(stringHead(null), undefined, 'the words faulted too');
  // 62 ASCII bytes then the first two of a 3-byte character: the broken character is left out.
  const utf = Buffer.concat([Buffer.from('x'.repeat(62)), Buffer.from('€').subarray(0, 2)]);
  assert.equal(stringHead(words(utf)), 'x'.repeat(62));
});

test('cut is marked in the text line, the JSON hit and the panel batches; an uncut hit carries no mark', () => {
  assert.match(formatHitLine(hit(['s'])), / s="abcdefghijklmnopqrstuvwxyzabcdefghijklmnopqrstuvwxyzabcdefghijkl"…\(cut\) len=5000\n$/);
  assert.doesNotMatch(formatHitLine(hit()), /cut/);
  assert.deepEqual(hitToJson(hit(['s'])).cut, ['s']);
  assert.equal('cut' in hitToJson(hit()), false);
  const cut = ['s'];
  const back = decodeHits(encodeHits([hit(cut), hit(), hit(cut)]));
  assert.deepEqual(
    back.map((h) => h.cut),
    [['s'], undefined, ['s']],
  );
});

test('the editor’s decoration and hover mark the last value cut', () => {
  const agg = new Aggregates();
  agg.add(hit(['s']));
  const st = statsForSpec('take_str s len', [
    { host: 'local', events: [{ event: 'take_str', probe: 'take_str', spec: 'take_str s len' }], snapshot: agg.snapshot() },
  ]);
  assert.match(decorationText(st, 'armed'), /…\(cut\)/);
  assert.match(hoverMarkdown('take_str s len', st, 'armed'), /…\(cut\)/);
});

test('the panel’s CSV export has a cut column when a hit has a cut string, and none otherwise', () => {
  const withCut = hitsToCsv([hit(['s']), hit()]).split('\r\n');
  assert.match(withCut[0], /,args\.s,args\.len,cut$/);
  assert.match(withCut[1], /,5000,s$/);
  assert.match(withCut[2], /,5000,$/);
  assert.doesNotMatch(hitsToCsv([hit()]).split('\r\n')[0], /cut/);
});

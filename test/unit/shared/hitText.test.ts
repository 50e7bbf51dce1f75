import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { Hit } from '../../../src/shared/hit';
import { escapeText, formatArgs, formatDuration, describeSite, formatHitLine, formatValue, quoteText } from '../../../src/shared/hitText';

const base: Hit = {
  host: 'local',
  probe: 'handle',
  kind: 'entry',
  pid: 42,
  tid: 43,
  comm: 'srv',
  cpu: 1,
  ts: 12.5,
  args: {},
  event: 'handle',
};

test('bare text (a comm) shows every control character escaped, and its backslashes doubled', () => {
  assert.equal(escapeText('a\rb'), 'a\\rb');
  assert.equal(escapeText('x\ny\tz'), 'x\\ny\\tz');
  assert.equal(escapeText('\x1b[2J\x07'), '\\x1b[2J\\x07');
  assert.equal(escapeText('del\x7f csi\u009b nel\u0085'), 'del\\x7f csi\\x9b nel\\x85');
  assert.equal(escapeText('ls\u2028ps\u2029'), 'ls\\u2028ps\\u2029');
  assert.equal(escapeText('abc\u202etxt.exe'), 'abc\\u202etxt.exe', 'a bidi override cannot reorder what follows');
  assert.equal(escapeText('a\\nb'), 'a\\\\nb', 'a literal backslash-n is told apart from a newline');
  assert.equal(escapeText('héllo wörld ✓'), 'héllo wörld ✓', 'printable Unicode stays as it is');
});

test('quoted text escapes its quotes and backslashes, so a value cannot impersonate the next argument', () => {
  assert.equal(quoteText('x" uid=0 y="'), '"x\\" uid=0 y=\\""');
  assert.equal(quoteText('a\\b'), '"a\\\\b"');
  assert.equal(quoteText('line1\nline2\r\x1b]0;title\x07'), '"line1\\nline2\\r\\x1b]0;title\\x07"');
});

test('values: numbers and addresses bare, any other string quoted (even one that starts with 0x), null, arrays', () => {
  assert.equal(formatValue(-7), '-7');
  assert.equal(formatValue('18446744073709551615'), '18446744073709551615');
  assert.equal(formatValue('0x7ffd1234'), '0x7ffd1234');
  assert.equal(formatValue('0x41\x1b[31mred'), '"0x41\\x1b[31mred"');
  assert.equal(formatValue('hello'), '"hello"');
  assert.equal(formatValue(null), 'null');
  assert.equal(formatValue([1, 'a\n', null]), '[1,"a\\n",null]');
  assert.equal(formatValue('abcdefghijklmnopqrstuvwxyz', 10), '"abcdefgh…');
  assert.equal(formatArgs(['a', 'b\x1b'], [3, 'x']), 'a=3 b\\x1b="x"');
});

test("the CLI's text line shows comm and strings escaped: no terminal escape reaches the terminal", () => {
  const hostile: Hit = { ...base, comm: 'a\rb\u2028', args: { path: '0x\x1b[2J', name: 'evil\n12.0 local srv-1/1 handle' } };
  assert.equal(
    formatHitLine(hostile),
    '12.500000 local a\\rb\\u2028-42/43 handle path="0x\\x1b[2J" name="evil\\n12.0 local srv-1/1 handle"\n',
  );
  const line = formatHitLine(hostile);
  assert.equal(line.indexOf('\n'), line.length - 1, 'one hit, one line');
  // eslint-disable-next-line no-control-regex -- no control character may remain
  assert.doesNotMatch(line.slice(0, -1), /[\u0000-\u001f\u007f-\u009f\u2028\u2029]/);
});

test("the CLI's text line of a return shows its value, latency and a non-entry site", () => {
  const ret: Hit = {
    ...base,
    kind: 'return',
    probe: 'handle__return',
    retval: null,
    latencyNs: 2100,
    site: { kind: 'inlined', address: '0x401136', caller: 'main', file: 'srv.c', line: 12 },
  };
  assert.equal(formatHitLine(ret), '12.500000 local srv-42/43 handle__return → null (2.1µs) [inlined into main at srv.c:12 (0x401136)]\n');
  assert.equal(formatHitLine({ ...base, site: { kind: 'entry', address: '0x401000' } }), '12.500000 local srv-42/43 handle\n');
  assert.equal(describeSite({ kind: 'part', address: '0x4011f0', caller: 'handle' }), 'part of handle (0x4011f0)');
});

test('one describer says where a site is: in full, or only the place under a row that names kind and address', () => {
  const inl = { kind: 'inlined', address: '0x401136', caller: 'main', file: '/src/srv.c', line: 12 } as const;
  assert.equal(describeSite(inl), 'inlined into main at /src/srv.c:12 (0x401136)');
  assert.equal(describeSite(inl, 'place'), 'into main at srv.c:12');
  assert.equal(describeSite({ kind: 'entry', address: '0x401000' }), 'entry (0x401000)');
  assert.equal(describeSite({ kind: 'entry', address: '0x401000' }, 'place'), '');
  assert.equal(describeSite({ kind: 'clone', address: '0x4010a0', file: 'a.c' }, 'place'), 'at a.c');
  // A traced binary's names are attacker text: escaped like every value.
  assert.equal(describeSite({ kind: 'inlined', address: '0x1', caller: 'f\nx' }), 'inlined into f\\nx (0x1)');
});

test('durations keep two significant digits', () => {
  assert.equal(formatDuration(850), '850ns');
  assert.equal(formatDuration(2100), '2.1µs');
  assert.equal(formatDuration(15_400_000), '15ms');
  assert.equal(formatDuration(-1), '');
});

test('an inferred value reads ≈, an argument unavailable at the site says why, escaped', () => {
  const h: Hit = {
    ...base,
    args: { a: 5, b: 7 },
    inferred: ['a'],
    unavailable: { tag: "same_name (o.c:5) entry has no parameter or variable 'tag'\n(it has: v)" },
  };
  assert.equal(
    formatHitLine(h),
    "12.500000 local srv-42/43 handle a≈5 b=7 tag=(unavailable: same_name (o.c:5) entry has no parameter or variable 'tag'\\n(it has: v))\n",
  );
});

test("the CLI's text line of a container's process shows its PID in its namespace beside the host's", () => {
  assert.equal(formatHitLine({ ...base, args: {}, nsPid: 1 }), '12.500000 local srv-42[1]/43 handle\n');
});

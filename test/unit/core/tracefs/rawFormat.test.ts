import { test } from 'node:test';
import assert from 'node:assert/strict';
import { checkHeaderEvent, FormatError, parseEventFormat, parseHeaderPage, probeConversions } from '../../../../src/core/tracefs/rawFormat';
import { HEADER_EVENT_TEXT, HEADER_PAGE_TEXT } from '../../../helpers/rawPageBuilder';

// As this kernel (6.18) prints them for `p:g/take BIN:OFF n=%di:s64 s=+0(%si):string u=%di:u32 x=%di:x16
// a=+0(%si):u8[4] c=$comm us=+0(%si):ustring b=%di:x8` and for a return probe and sched_switch.
const TAKE = `name: take
ID: 2326
format:
\tfield:unsigned short common_type;\toffset:0;\tsize:2;\tsigned:0;
\tfield:unsigned char common_flags;\toffset:2;\tsize:1;\tsigned:0;
\tfield:unsigned char common_preempt_count;\toffset:3;\tsize:1;\tsigned:0;
\tfield:int common_pid;\toffset:4;\tsize:4;\tsigned:1;

\tfield:unsigned long __probe_ip;\toffset:8;\tsize:8;\tsigned:0;
\tfield:s64 n;\toffset:16;\tsize:8;\tsigned:1;
\tfield:__data_loc char[] s;\toffset:24;\tsize:4;\tsigned:1;
\tfield:u32 u;\toffset:28;\tsize:4;\tsigned:0;
\tfield:u16 x;\toffset:32;\tsize:2;\tsigned:0;
\tfield:u8 a[];\toffset:34;\tsize:4;\tsigned:0;
\tfield:__data_loc char[] c;\toffset:38;\tsize:4;\tsigned:1;
\tfield:__data_loc char[] us;\toffset:42;\tsize:4;\tsigned:1;
\tfield:u8 b;\toffset:46;\tsize:1;\tsigned:0;

print fmt: "(%lx) n=%Ld s=\\"%s\\" u=%u x=0x%x a={%u,%u,%u,%u} c=\\"%s\\" us=\\"%s\\" b=0x%x", REC->__probe_ip, REC->n, __get_str(s), REC->u, REC->x, REC->a[0], REC->a[1], REC->a[2], REC->a[3], __get_str(c), __get_str(us), REC->b
`;

const T2 = `name: t2
ID: 2327
format:
\tfield:unsigned short common_type;\toffset:0;\tsize:2;\tsigned:0;
\tfield:unsigned char common_flags;\toffset:2;\tsize:1;\tsigned:0;
\tfield:unsigned char common_preempt_count;\toffset:3;\tsize:1;\tsigned:0;
\tfield:int common_pid;\toffset:4;\tsize:4;\tsigned:1;

\tfield:unsigned long __probe_ip;\toffset:8;\tsize:8;\tsigned:0;
\tfield:u64 d;\toffset:16;\tsize:8;\tsigned:0;
\tfield:u32 bf;\toffset:24;\tsize:4;\tsigned:0;
\tfield:u8 ch;\toffset:28;\tsize:1;\tsigned:0;
\tfield:s16 sa[];\toffset:29;\tsize:4;\tsigned:1;
\tfield:u8 xa[];\toffset:33;\tsize:2;\tsigned:0;
\tfield:__data_loc char[][2] st;\toffset:35;\tsize:8;\tsigned:1;

print fmt: "(%lx) d=0x%Lx bf=%u ch='%c' sa={%d,%d} xa={0x%x,0x%x} st={\\"%s\\",\\"%s\\"}", REC->__probe_ip, REC->d, REC->bf, REC->ch, REC->sa[0], REC->sa[1], REC->xa[0], REC->xa[1], __get_str(st[0]), __get_str(st[1])
`;

const SCHED = `name: sched_switch
ID: 372
format:
\tfield:unsigned short common_type;\toffset:0;\tsize:2;\tsigned:0;
\tfield:unsigned char common_flags;\toffset:2;\tsize:1;\tsigned:0;
\tfield:unsigned char common_preempt_count;\toffset:3;\tsize:1;\tsigned:0;
\tfield:int common_pid;\toffset:4;\tsize:4;\tsigned:1;

\tfield:char prev_comm[16];\toffset:8;\tsize:16;\tsigned:0;
\tfield:pid_t prev_pid;\toffset:24;\tsize:4;\tsigned:1;
\tfield:__rel_loc char[] msg;\toffset:28;\tsize:4;\tsigned:0;

print fmt: "prev_comm=%s prev_pid=%d", REC->prev_comm, REC->prev_pid
`;

test('header_page: timestamp, commit and data offsets; the page size is data offset + data size', () => {
  assert.deepEqual(parseHeaderPage(HEADER_PAGE_TEXT), {
    timestampOffset: 0,
    commitOffset: 8,
    commitSize: 8,
    dataOffset: 16,
    dataSize: 4080,
    pageSize: 4096,
  });
  // An instance with buffer_subbuf_size_kb 8 prints its own.
  assert.equal(parseHeaderPage(HEADER_PAGE_TEXT.replace('size:4080', 'size:8176')).pageSize, 8192);
  // A 32-bit kernel: a 4-byte commit and the data at 12.
  const k32 = HEADER_PAGE_TEXT.replace('commit;\toffset:8;\tsize:8', 'commit;\toffset:8;\tsize:4').replace(
    'offset:16;\tsize:4080',
    'offset:12;\tsize:4084',
  );
  assert.deepEqual(parseHeaderPage(k32), {
    timestampOffset: 0,
    commitOffset: 8,
    commitSize: 4,
    dataOffset: 12,
    dataSize: 4084,
    pageSize: 4096,
  });
});

test('header_page: a missing field, a wrong size, overlap or an unreadable line is an error that says so', () => {
  const bad: Array<[string, RegExp]> = [
    [HEADER_PAGE_TEXT.replace(/.*char data.*\n/, ''), /no 'data' field/],
    [HEADER_PAGE_TEXT.replace('timestamp;\toffset:0;\tsize:8', 'timestamp;\toffset:0;\tsize:4'), /timestamp is 4 bytes/],
    [HEADER_PAGE_TEXT.replace('commit;\toffset:8;\tsize:8', 'commit;\toffset:8;\tsize:2'), /commit is 2 bytes/],
    [HEADER_PAGE_TEXT.replace('data;\toffset:16', 'data;\toffset:12'), /overlap/],
    [HEADER_PAGE_TEXT + 'field: something odd\n', /line 5 is not a field description/],
    [HEADER_PAGE_TEXT.replace('size:4080', 'size:2147483648'), /out of range/],
  ];
  for (const [text, re] of bad)
    assert.throws(
      () => parseHeaderPage(text),
      (e: Error) => e instanceof FormatError && re.test(e.message),
      re.source,
    );
});

test('header_event: the layout decoded here passes; any other is refused', () => {
  checkHeaderEvent(HEADER_EVENT_TEXT);
  assert.throws(() => checkHeaderEvent(HEADER_EVENT_TEXT.replace('5 bits', '6 bits')), /type_len +: +5 bits/);
  assert.throws(() => checkHeaderEvent(HEADER_EVENT_TEXT.replace('type == 30', 'type == 29')), /time_extend : type == 30/);
});

test('an event format: id, common fields, ints, __data_loc strings, u8[] counted by size, char[16] text, __rel_loc, string arrays', () => {
  const f = parseEventFormat(TAKE);
  assert.equal(f.name, 'take');
  assert.equal(f.id, 2326);
  const pick = (name: string) => {
    const x = f.byName.get(name)!;
    return { kind: x.kind, offset: x.offset, size: x.size, signed: x.signed, elemSize: x.elemSize, count: x.count, text: x.text };
  };
  assert.deepEqual(pick('common_pid'), { kind: 'int', offset: 4, size: 4, signed: true, elemSize: 4, count: 1, text: false });
  assert.deepEqual(pick('__probe_ip'), { kind: 'int', offset: 8, size: 8, signed: false, elemSize: 8, count: 1, text: false });
  assert.deepEqual(pick('n'), { kind: 'int', offset: 16, size: 8, signed: true, elemSize: 8, count: 1, text: false });
  assert.deepEqual(pick('s'), { kind: 'dataLoc', offset: 24, size: 4, signed: true, elemSize: 1, count: 1, text: true });
  assert.deepEqual(pick('a'), { kind: 'array', offset: 34, size: 4, signed: false, elemSize: 1, count: 4, text: false });
  assert.equal(f.minSize, 47);
  assert.equal(f.printFmt.slice(0, 12), '"(%lx) n=%Ld');

  const t2 = parseEventFormat(T2);
  assert.equal(t2.byName.get('sa')!.count, 2);
  assert.equal(t2.byName.get('sa')!.elemSize, 2);
  assert.equal(t2.byName.get('st')!.nested, true);
  const sched = parseEventFormat(SCHED);
  assert.deepEqual(
    [sched.byName.get('prev_comm')!.kind, sched.byName.get('prev_comm')!.count, sched.byName.get('prev_comm')!.text],
    ['array', 16, true],
  );
  assert.equal(sched.byName.get('msg')!.kind, 'relLoc');
});

test('an event format that is unknown or inconsistent is refused with the line that is wrong', () => {
  const bad: Array<[string, RegExp]> = [
    [TAKE.replace('ID: 2326\n', ''), /no ID line/],
    [TAKE.replace('ID: 2326', 'ID: 99999'), /does not fit common_type/],
    [TAKE.replace('ID: 2326', 'ID: 12x'), /bad ID line/],
    [TAKE.replace(/print fmt.*\n/, ''), /no print fmt line/],
    [TAKE.replace('field:u32 u;\toffset:28', 'field:u32 u;\toffset:26'), /'s' and 'u' overlap/],
    [TAKE.replace('field:u8 a[];\toffset:34;\tsize:4', 'field:u16 a[];\toffset:34;\tsize:3'), /line 14 \(a\): 3 bytes do not hold/],
    [
      TAKE.replace('__data_loc char[] s;\toffset:24;\tsize:4', '__data_loc char[] s;\toffset:24;\tsize:2'),
      /line 11 \(s\): a __data_loc field of 2 bytes/,
    ],
    [TAKE.replace('field:u8 a[]', 'field:struct foo a[]'), /array of unknown type 'struct foo' without a count/],
    [TAKE.replace('field:u16 x;\toffset:32;\tsize:2', 'field:u16 x;\toffset:32;\tsize:3'), /a scalar of 3 bytes/],
    [TAKE.replace('field:u32 u;\toffset:28;\tsize:4', 'field:u32 u;\toffset:28;\tsize:8'), /'u32' of 8 bytes/],
    [
      TAKE.replace('field:unsigned short common_type', 'field:short common_type').replace(
        'common_type;\toffset:0;\tsize:2;\tsigned:0',
        'common_type;\toffset:0;\tsize:2;\tsigned:1',
      ),
      /common_type/,
    ],
    [TAKE.replace('\tfield:int common_pid;\toffset:4;\tsize:4;\tsigned:1;\n', ''), /common_pid/],
    [TAKE.replace('\tfield:s64 n;', '\tfield s64 n;'), /line 10 is not a field description/],
  ];
  for (const [text, re] of bad)
    assert.throws(
      () => parseEventFormat(text, 'events/g/take/format'),
      (e: Error) => e instanceof FormatError && re.test(e.message) && e.message.startsWith('events/g/take/format: '),
      re.source,
    );
  // What follows the print format is not read.
  assert.equal(parseEventFormat(TAKE + 'junk\n').id, 2326);
});

test('probe print formats: signed, unsigned, hex, char, string and arrays, read per argument', () => {
  const take = parseEventFormat(TAKE);
  const c = probeConversions(take, ['n', 's', 'u', 'x', 'a', 'c', 'us', 'b']);
  assert.deepEqual(Object.fromEntries(c), {
    n: { kind: 'signed' },
    s: { kind: 'string' },
    u: { kind: 'unsigned' },
    x: { kind: 'hex' },
    a: { kind: 'array', elem: 'unsigned', count: 4 },
    c: { kind: 'string' },
    us: { kind: 'string' },
    b: { kind: 'hex' },
  });
  const t2 = parseEventFormat(T2);
  assert.deepEqual(Object.fromEntries(probeConversions(t2, ['d', 'bf', 'ch', 'sa', 'xa'])), {
    d: { kind: 'hex' },
    bf: { kind: 'unsigned' },
    ch: { kind: 'char' },
    sa: { kind: 'array', elem: 'signed', count: 2 },
    xa: { kind: 'array', elem: 'hex', count: 2 },
  });
  assert.throws(() => probeConversions(t2, ['st']), /'st' prints as '\{"%s","%s"\}', which is not decoded here/);
  assert.throws(() => probeConversions(take, ['zz']), /no 'zz='/);
  const odd = parseEventFormat(TAKE.replace('u=%u', 'u=%pS'));
  assert.throws(() => probeConversions(odd, ['u']), /'u' prints as '%pS'/);
  const unterminated = parseEventFormat(TAKE.replace(/print fmt: .*/, 'print fmt: "(%lx) n=%Ld'));
  assert.throws(() => probeConversions(unterminated, ['n']), /does not end/);
});

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { HitParser, type EventSchema, type Hit } from '../../../../src/core/tracefs/hitParser';
import { FormatError, parseEventFormat, parseHeaderPage, type EventFormat } from '../../../../src/core/tracefs/rawFormat';
import { RawHitDecoder } from '../../../../src/core/tracefs/rawHits';
import { RawDecodeError, timestampText } from '../../../../src/core/tracefs/rawPages';
import { HEADER_PAGE_TEXT, PageBuilder, probeFormatText, recordBytes, type FieldInput } from '../../../helpers/rawPageBuilder';
import { plainData } from '../../../helpers/plain';

const header = parseHeaderPage(HEADER_PAGE_TEXT);

/** One argument: schema type, the field the kernel makes of it (type, size) and how it prints it. */
interface ArgSpec {
  name: string;
  type: string;
  field: string;
  size: number;
  conv: string;
}
const ARGS: ArgSpec[] = [
  { name: 'a8', type: 's8', field: 's8', size: 1, conv: '%d' },
  { name: 'a16', type: 's16', field: 's16', size: 2, conv: '%d' },
  { name: 'a32', type: 's32', field: 's32', size: 4, conv: '%d' },
  { name: 'a64', type: 's64', field: 's64', size: 8, conv: '%Ld' },
  { name: 'u8', type: 'u8', field: 'u8', size: 1, conv: '%u' },
  { name: 'u16', type: 'u16', field: 'u16', size: 2, conv: '%u' },
  { name: 'u32', type: 'u32', field: 'u32', size: 4, conv: '%u' },
  { name: 'u64', type: 'u64', field: 'u64', size: 8, conv: '%Lu' },
  { name: 'x8', type: 'x8', field: 'u8', size: 1, conv: '0x%x' },
  { name: 'x16', type: 'x16', field: 'u16', size: 2, conv: '0x%x' },
  { name: 'x32', type: 'x32', field: 'u32', size: 4, conv: '0x%x' },
  { name: 'x64', type: 'x64', field: 'u64', size: 8, conv: '0x%Lx' },
  { name: 'def', type: '', field: 'u64', size: 8, conv: '0x%Lx' },
  { name: 'bf', type: 'b4@2/32', field: 'u32', size: 4, conv: '%u' },
  { name: 'ch', type: 'char', field: 'u8', size: 1, conv: "'%c'" },
  { name: 's', type: 'string', field: '__data_loc char[]', size: 4, conv: '"%s"' },
  { name: 'arr', type: 'u8[4]', field: 'u8 arr[]', size: 4, conv: '{%u,%u,%u,%u}' },
  { name: 'xs', type: 'x16[2]', field: 'u16 xs[]', size: 4, conv: '{0x%x,0x%x}' },
  { name: 'ss', type: 's16[2]', field: 's16 ss[]', size: 4, conv: '{%d,%d}' },
  { name: 'us', type: 'ustring', field: '__data_loc char[]', size: 4, conv: '"%s"' },
];

function formatOf(args: ArgSpec[], id = 2400, name = 'take', ret = false): EventFormat {
  const fields = args.map((a): [string, string, number, number] => {
    const arr = a.field.startsWith('__data_loc') ? null : /^(\S+) (\w+)\[\]$/.exec(a.field);
    if (arr) return [arr[1], `${arr[2]}[]`, a.size, arr[1].startsWith('s') ? 1 : 0];
    return [a.field, a.name, a.size, a.field.startsWith('s') || a.field.startsWith('__data_loc') ? 1 : 0];
  });
  return parseEventFormat(probeFormatText(name, id, fields, args.map((a) => `${a.name}=${a.conv}`).join(' '), ret));
}

/** What trace_pipe prints for a value under a conversion (printf of the field's C value). */
function printed(conv: string, v: FieldInput): string {
  if (conv.startsWith('{')) {
    const elems = conv.slice(1, -1).split(',');
    return `{${(v as number[]).map((e, k) => printed(elems[k], e)).join(',')}}`;
  }
  if (conv === '"%s"') return v === null ? '(fault)' : `"${String(v)}"`;
  if (conv === "'%c'") return `'${String.fromCharCode(Number(v))}'`;
  if (conv.startsWith('0x')) return `0x${BigInt.asUintN(64, BigInt(v as number)).toString(16)}`;
  return BigInt(v as number).toString();
}

const schemaOf = (args: ArgSpec[], extra: Partial<EventSchema> = {}): EventSchema => ({
  event: 'take',
  probe: 'take',
  kind: 'entry',
  args: args.map((a) => ({ name: a.name, type: a.type })),
  ...extra,
});

function decodeOne(format: EventFormat, schema: EventSchema, pages: Buffer[], cpu = 3) {
  const hits: Hit[] = [];
  const lost: Array<[number, number]> = [];
  const order: string[] = [];
  const d = new RawHitDecoder({
    host: 'h',
    header,
    events: [schema],
    formats: [format],
    onHit: (h) => (hits.push(h), order.push('hit')),
    onLost: (c, n) => (lost.push([c, n]), order.push(`lost ${n}`)),
    task: (tid) => (tid === 77 ? { comm: 'rawfix', pid: 70 } : undefined),
  });
  for (const p of pages) d.push(p, cpu);
  return { hits, lost, order, stats: d.stats };
}

test('every argument type decodes to what the text parser makes of the same record printed by trace_pipe', () => {
  const format = formatOf(ARGS);
  const rows: Array<Record<string, FieldInput>> = [
    {
      a8: -128,
      a16: -32768,
      a32: -2147483648,
      a64: -(2n ** 63n),
      u8: 255,
      u16: 65535,
      u32: 4294967295,
      u64: 2n ** 64n - 1n,
      x8: 0xab,
      x16: 0xbeef,
      x32: 0xdeadbeef,
      x64: 2n ** 64n - 1n,
      def: 0x7fff12345678n,
      bf: 9,
      ch: 65,
      s: 'hello world',
      arr: [0, 1, 127, 255],
      xs: [0xa, 0xffff],
      ss: [-1, 32767],
      us: 'u',
    },
    {
      a8: 127,
      a16: 32767,
      a32: 2147483647,
      a64: 2n ** 63n - 1n,
      u8: 0,
      u16: 0,
      u32: 0,
      u64: 2n ** 53n,
      x8: 0,
      x16: 0,
      x32: 0,
      x64: 0,
      def: 0,
      bf: 0,
      ch: 126,
      s: '',
      arr: [9, 9, 9, 9],
      xs: [0, 0],
      ss: [-32768, 0],
      us: null,
    },
    {
      a8: -1,
      a16: -1,
      a32: -1,
      a64: -(2n ** 53n),
      u8: 1,
      u16: 1,
      u32: 1,
      u64: 2n ** 53n - 1n,
      x8: 1,
      x16: 1,
      x32: 1,
      x64: 2n ** 32n,
      def: 1,
      bf: 15,
      ch: 33,
      s: 'a "quoted" = text',
      arr: [1, 2, 3, 4],
      xs: [1, 2],
      ss: [1, 2],
      us: 'x y',
    },
    {
      a8: 0,
      a16: 0,
      a32: 0,
      a64: -(2n ** 53n) + 1n,
      u8: 0,
      u16: 0,
      u32: 0,
      u64: 2n ** 53n + 1n,
      x8: 0,
      x16: 0,
      x32: 0,
      x64: 0xfffffffffn,
      def: 0,
      bf: 0,
      ch: 48,
      s: 'h\u00e9llo \u2713',
      arr: [0, 0, 0, 0],
      xs: [0, 0],
      ss: [0, 0],
      us: '',
    },
  ];
  const b = new PageBuilder(100_000_000_000n);
  rows.forEach((r) => b.data(recordBytes(format, 77, r), 1500));
  const { hits, stats } = decodeOne(format, schemaOf(ARGS), [b.build()]);
  assert.equal(stats.hits, rows.length);

  const textHits: Hit[] = [];
  const parser = new HitParser({ host: 'h', events: [schemaOf(ARGS)], onHit: (h) => textHits.push(h) });
  rows.forEach((r, k) => {
    const ts = timestampText(100, 1500 * (k + 1));
    parser.push(
      `          rawfix-77      [003] ..... ${ts}: take: (0x401136) ${ARGS.map((a) => `${a.name}=${printed(a.conv, r[a.name])}`).join(' ')}`,
    );
  });
  assert.equal(parser.stats.malformed + parser.stats.unparsed, 0);
  assert.equal(textHits.length, rows.length);
  hits.forEach((h, k) => {
    const t = textHits[k];
    assert.deepEqual(plainData(h.args), plainData(t.args), `row ${k}`);
    assert.deepEqual(plainData({ ...h, ts: 0, pid: 0, comm: '' }), plainData({ ...t, ts: 0, pid: 0, comm: '' }));
    assert.ok(Math.abs(h.ts - t.ts) < 1e-6, `row ${k}: ${h.ts} is the printed ${t.ts}, before rounding`);
    assert.equal(JSON.stringify(Object.keys(h)), JSON.stringify(Object.keys(t)), 'the same keys in the same order');
  });
  // Spot checks of the rule itself.
  assert.deepEqual(plainData(hits[0].args.a64), '-9223372036854775808');
  assert.deepEqual(plainData(hits[0].args.u64), '18446744073709551615');
  assert.deepEqual(plainData(hits[0].args.def), '0x7fff12345678');
  assert.deepEqual(plainData(hits[1].args.us), null);
  assert.deepEqual(plainData(hits[1].args.s), '');
  assert.equal(hits[2].args.a64, '-9007199254740992', '|v| = 2^53 is past the rule: a string');
  assert.equal(hits[3].args.a64, -(2 ** 53) + 1);
  assert.deepEqual(plainData(hits[3].args.u64), '9007199254740993');
  assert.deepEqual(plainData(hits[0].args.ch), "'A'");
  assert.deepEqual(plainData(hits[0].args.xs), ['0xa', '0xffff']);
  assert.equal(hits[0].pid, 70);
  assert.equal(hits[0].comm, 'rawfix');
  assert.equal(hits[0].cpu, 3);
  assert.equal(hits[0].ts, 100 + 1500e-9);
});

test('strings hold newlines, \\r, U+2028 and LOST- or record-shaped text exactly; lengths, not text, end them', () => {
  const args = ARGS.filter((a) => ['s', 'a32', 'us'].includes(a.name));
  const format = formatOf(args);
  const hostile = [
    'two\nlines',
    'cr\rhere',
    'ls\u2028ps\u2029',
    'CPU:0 [LOST 5 EVENTS]',
    '" a32=5 us="forged',
    '\n          rawfix-1 [000] ..... 1.000000: take: (0x1) s="x" a32=1 us="y"',
  ];
  const b = new PageBuilder(1_000_000_000n);
  hostile.forEach((s, k) => b.data(recordBytes(format, 77, { s, a32: k, us: s }), 1));
  const { hits, stats } = decodeOne(format, schemaOf(args), [b.build()]);
  assert.equal(stats.hits, hostile.length);
  assert.deepEqual(
    plainData(hits.map((h) => h.args)),
    hostile.map((s, k) => ({ s, a32: k, us: s })),
  );
});

test('a short string like the last one is the same text; any other byte, length or a long string is decoded anew', () => {
  const args = ARGS.filter((a) => ['s', 'us'].includes(a.name));
  const format = formatOf(args);
  const long = 'x'.repeat(40);
  const values: Array<string | null> = [
    'loop',
    'loop',
    'loop2',
    'lopp',
    'lo',
    '',
    '',
    null,
    'loop',
    'caf\u00e9',
    'caf\u00e9',
    'cafe',
    long,
    long,
    `${long}y`,
    'y'.repeat(32),
    'y'.repeat(31),
    'loop',
  ];
  const pages: Buffer[] = [];
  let b = new PageBuilder(1_000_000_000n);
  values.forEach((s, k) => {
    const rec = recordBytes(format, 77, { s, us: values[values.length - 1 - k] });
    if (b.length + rec.length + 8 > header.dataSize) {
      pages.push(b.build());
      b = new PageBuilder(1_000_000_000n);
    }
    b.data(rec, 1);
  });
  pages.push(b.build());
  const { hits } = decodeOne(format, schemaOf(args), pages);
  assert.deepEqual(
    plainData(hits.map((h) => h.args)),
    values.map((s, k) => ({ s, us: values[values.length - 1 - k] })),
  );
});

test('return probes: the retval argument is the hit’s retval, not an argument', () => {
  const args: ArgSpec[] = [
    { name: 'retval', type: 's32', field: 's32', size: 4, conv: '%d' },
    { name: 'p', type: 'x64', field: 'u64', size: 8, conv: '0x%Lx' },
  ];
  const format = formatOf(args, 2500, 'take__return', true);
  const page = new PageBuilder(5n).data(recordBytes(format, 12, { retval: -7, p: 0x1000 }), 0).build();
  const { hits } = decodeOne(format, { ...schemaOf(args, { kind: 'return' }), event: 'take__return' }, [page]);
  assert.deepEqual(plainData(hits.map((h) => [h.kind, h.retval, h.args, h.pid, h.tid, h.comm])), [
    ['return', -7, { p: '0x1000' }, 12, 12, '<...>'],
  ]);
  const named = decodeOne(format, { ...schemaOf(args, { retvalArg: 'p' }), event: 'take__return' }, [page]).hits[0];
  assert.deepEqual(plainData([named.retval, named.args]), ['0x1000', { retval: -7 }]);
});

test('lost events: a stored count is added as is; a page that lost an unknown number counts one and says so', () => {
  const args = ARGS.filter((a) => a.name === 'a32');
  const format = formatOf(args);
  const rec = recordBytes(format, 77, { a32: 1 });
  const pages = [
    new PageBuilder(1n).data(rec, 0).build({ lost: 7 }),
    new PageBuilder(2n).data(rec, 0).build({ missed: true }),
    new PageBuilder(3n).data(rec, 0).build(),
  ];
  const { hits, lost, order, stats } = decodeOne(format, schemaOf(args), pages, 1);
  assert.equal(hits.length, 3);
  assert.deepEqual(plainData(order), ['lost 7', 'hit', 'lost 1', 'hit', 'hit'], 'a loss is reported before the page after it');
  // A schema without arguments still needs the record's thread id: a record shorter than that is refused.
  const bare = decodeOne(format, { ...schemaOf([]) }, [new PageBuilder(1n).data(recordBytes(format, 77, { a32: 1 }), 0).build()]);
  assert.deepEqual(plainData([bare.hits[0].tid, bare.hits[0].args]), [77, {}]);
  const tiny = Buffer.alloc(4);
  tiny.writeUInt16LE(format.id, 0);
  assert.throws(
    () => decodeOne(format, schemaOf([]), [new PageBuilder(1n).data(tiny, 0).build()]),
    /a 4-byte record of 'take', whose fields need 8/,
  );
  assert.deepEqual(plainData(lost), [
    [1, 7],
    [1, 1],
  ]);
  assert.deepEqual(plainData([stats.lost, stats.lostUncounted, stats.pages, [...stats.lostByCpu]]), [8, 1, 3, [[1, 8]]]);
});

test('records of other events are counted, not decoded; a record too short for its event is an error naming it', () => {
  const args = ARGS.filter((a) => a.name === 'a64');
  const format = formatOf(args);
  const other = Buffer.alloc(12);
  other.writeUInt16LE(5, 0); // a trace_marker write, say
  const short = recordBytes(format, 77, { a64: 1 }).subarray(0, 20);
  const { hits, stats } = decodeOne(format, schemaOf(args), [
    new PageBuilder(1n)
      .data(other, 0)
      .data(recordBytes(format, 77, { a64: 2 }), 0)
      .build(),
  ]);
  assert.deepEqual(plainData([hits.length, stats.unknown]), [1, 1]);
  assert.throws(
    () => decodeOne(format, schemaOf(args), [new PageBuilder(1n).data(short, 0).build()]),
    (e: Error) => e instanceof RawDecodeError && e.offset === 20 && /a 20-byte record of 'take', whose fields need 24/.test(e.message),
  );
  // A string whose location word points past its record.
  const sArgs = ARGS.filter((a) => a.name === 's');
  const sFormat = formatOf(sArgs);
  const bad = recordBytes(sFormat, 77, { s: 'abc' });
  bad.writeUInt32LE(((200 << 16) | 20) >>> 0, 16);
  assert.throws(
    () => decodeOne(sFormat, schemaOf(sArgs), [new PageBuilder(1n).data(bad, 0).build()]),
    (e: Error) =>
      e instanceof RawDecodeError && e.offset === 36 && /string 's' points at 200 bytes outside its 24-byte record/.test(e.message),
  );
});

test('a schema the kernel’s format does not match is refused when the decoder is made', () => {
  const pick = (...names: string[]) => ARGS.filter((a) => names.includes(a.name));
  const cases: Array<[ArgSpec[], EventSchema, RegExp]> = [
    [pick('a32'), { ...schemaOf(pick('a32')), args: [{ name: 'zz', type: 's32' }] }, /no 'zz='|no field 'zz'/],
    [
      pick('u64'),
      { ...schemaOf(pick('u64')), args: [{ name: 'u64', type: 'string' }] },
      /argument 'u64' of type 'string': the kernel prints it as unsigned/,
    ],
    [
      pick('s'),
      { ...schemaOf(pick('s')), args: [{ name: 's', type: 'u32' }] },
      /argument 's' of type 'u32': the kernel prints it as a string/,
    ],
    [pick('u32'), { ...schemaOf(pick('u32')), args: [{ name: 'u32', type: 'x32' }] }, /the kernel prints it as unsigned, not as hex/],
    [pick('arr'), { ...schemaOf(pick('arr')), args: [{ name: 'arr', type: 'u8[8]' }] }, /of 4 elements and prints 4/],
    [pick('arr'), { ...schemaOf(pick('arr')), args: [{ name: 'arr', type: 'u32' }] }, /disagree on it being an array/],
    [
      [{ name: 'm', type: 's32', field: 'u32', size: 4, conv: '%d' }],
      schemaOf([{ name: 'm', type: 's32', field: 'u32', size: 4, conv: '%d' }]),
      /an unsigned field printed as signed/,
    ],
    [
      [{ name: 'q', type: 's32', field: 's32', size: 4, conv: '%pS' }],
      schemaOf([{ name: 'q', type: 's32', field: 's32', size: 4, conv: '%pS' }]),
      /'q' prints as '%pS'/,
    ],
  ];
  for (const [args, schema, re] of cases) {
    const format = formatOf(args);
    assert.throws(
      () => new RawHitDecoder({ host: 'h', header, events: [schema], formats: [format], onHit: () => {} }),
      (e: Error) => e instanceof FormatError && re.test(e.message),
      re.source,
    );
  }
  assert.throws(
    () => new RawHitDecoder({ host: 'h', header, events: [schemaOf(pick('a8'))], formats: [], onHit: () => {} }),
    /event take: no format given for it/,
  );
});

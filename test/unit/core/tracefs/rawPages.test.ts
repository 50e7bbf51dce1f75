import { test } from 'node:test';
import assert from 'node:assert/strict';
import { parseEventFormat, parseHeaderPage } from '../../../../src/core/tracefs/rawFormat';
import { decodeFields, decodePage, RawDecodeError, timestampText, type RawRecord } from '../../../../src/core/tracefs/rawPages';
import { HEADER_PAGE_TEXT, PageBuilder, probeFormatText, recordBytes } from '../../../helpers/rawPageBuilder';
import { plainData } from '../../../helpers/plain';

const header = parseHeaderPage(HEADER_PAGE_TEXT);
const format = parseEventFormat(
  probeFormatText(
    'take',
    1234,
    [
      ['s64', 'n', 8],
      ['__data_loc char[]', 's', 4],
      ['u8', 'a[]', 4],
      ['char', 'comm[16]', 16],
      ['s16', 'v[]', 4],
    ],
    'n=%Ld s="%s" a={%u,%u,%u,%u} comm=%s v={%d,%d}',
  ),
);
const rec = (n: number | bigint, s: string | null = 'x', pid = 77) =>
  recordBytes(format, pid, { n, s, a: [1, 2, 3, 4], comm: 'worker', v: [-2, 3] });
const T0 = 23245_689769944n;
const at = (ns: bigint) => ({ sec: Number(ns / 1_000_000_000n), nsec: Number(ns % 1_000_000_000n) });
const times = (rs: RawRecord[]) => rs.map((r) => ({ sec: r.sec, nsec: r.nsec }));

/** Asserts `fn` throws a RawDecodeError at `offset` whose message matches. */
function throwsAt(fn: () => unknown, offset: number, re: RegExp): void {
  assert.throws(fn, (e: Error) => {
    assert.ok(e instanceof RawDecodeError, `a RawDecodeError, not ${e.name}: ${e.message}`);
    assert.equal(e.offset, offset, e.message);
    assert.match(e.message, re);
    assert.match(e.message, new RegExp(`byte ${offset}:`));
    return true;
  });
}

test('data records with type_len 1–28 and with a length word, time deltas summed from the page timestamp', () => {
  const small = Buffer.alloc(4, 0);
  small.writeUInt16LE(1234, 0);
  const max = Buffer.concat([rec(1), Buffer.alloc(112)]).subarray(0, 112); // 28 words: the largest type_len
  const long = Buffer.concat([rec(2, 'y'.repeat(300))]); // past 112 bytes: a length word
  const page = new PageBuilder(T0)
    .data(rec(0), 0)
    .data(small, 5)
    .data(max, 1000)
    .data(long, 134217727) // the largest 27-bit delta
    .data(rec(3), 7, true) // a short record written with a length word (8-byte aligned kernels do)
    .build();
  const p = decodePage(page, header);
  assert.equal(p.missed, false);
  assert.equal(p.lost, undefined);
  assert.deepEqual(plainData(at(T0)), { sec: p.sec, nsec: p.nsec });
  assert.deepEqual(plainData(p.records.map((r) => [r.id, r.offset, r.length])), [
    [1234, 20, 56],
    [1234, 80, 4],
    [1234, 88, 112],
    [1234, 208, Math.ceil(long.length / 4) * 4],
    [1234, 216 + Math.ceil(long.length / 4) * 4, 56],
  ]);
  assert.deepEqual(plainData(times(p.records)), [T0, T0 + 5n, T0 + 1005n, T0 + 1005n + 134217727n, T0 + 1012n + 134217727n].map(at));
  assert.equal(decodeFields(page, p.records[3], format).s, 'y'.repeat(300));
  assert.equal(decodeFields(page, p.records[4], format).n, 3);
});

test('time-extend adds array × 2^27 + delta; an absolute time-stamp sets the clock, keeping the clock’s top bits; padding moves no clock', () => {
  const ext = (5n << 27n) + 3n;
  const page = new PageBuilder(T0)
    .data(rec(0), 10)
    .extend(ext)
    .data(rec(1), 20)
    .padding(24, 999) // a discarded record: skipped with its length, its delta not counted
    .data(rec(2), 30)
    .stamp(T0 + 5_000_000_000n)
    .data(rec(3), 1)
    .extend(1n << 58n) // a delta past 2^53 ns
    .data(rec(4), 0)
    .nullPadding() // fills the last 4 bytes
    .build();
  const p = decodePage(page, header);
  const t2 = T0 + 10n + ext + 20n + 30n;
  assert.deepEqual(
    plainData(times(p.records)),
    [T0 + 10n, T0 + 10n + ext + 20n, t2, T0 + 5_000_000_001n, T0 + 5_000_000_001n + (1n << 58n)].map(at),
  );
  assert.deepEqual(plainData(p.records.map((r) => decodeFields(page, r, format).n)), [0, 1, 2, 3, 4]);

  // The record stores 59 bits: a clock past 2^59 ns keeps its top bits.
  const big = (3n << 59n) + 12345n;
  const q = decodePage(new PageBuilder(big - 10n).stamp(big).data(rec(9), 2).build(), header);
  assert.deepEqual(plainData(times(q.records)), [at(big + 2n)]);
  // …and one that is below the page's low bits has wrapped into the next 2^59.
  const r = decodePage(new PageBuilder((3n << 59n) + 100n).stamp(50n).data(rec(9), 0).build(), header);
  assert.deepEqual(plainData(times(r.records)), [at((4n << 59n) + 50n)]);
});

test('page timestamps are exact over the whole u64 range', () => {
  for (const ts of [
    0n,
    999_999_999n,
    1_000_000_000n,
    2n ** 53n - 1n,
    2n ** 53n,
    2n ** 53n + 1n,
    2n ** 64n - 1n,
    9_007_199_254_740_993_123n % 2n ** 64n,
  ]) {
    const p = decodePage(new PageBuilder(ts).build(), header);
    assert.deepEqual(plainData({ sec: p.sec, nsec: p.nsec }), at(ts), String(ts));
  }
});

test('nanoseconds carry into seconds, and trace prints the time rounded to the microsecond', () => {
  const p = decodePage(new PageBuilder(999_999_999n).data(rec(0), 1).data(rec(1), 999_999).build(), header);
  assert.deepEqual(plainData(times(p.records)), [at(1_000_000_000n), at(1_000_999_999n)]);
  assert.equal(timestampText(1, 999_999), '1.001000');
  assert.equal(timestampText(23245, 689_769_944), '23245.689770');
  assert.equal(timestampText(23245, 689_769_499), '23245.689769');
  assert.equal(timestampText(9, 999_999_500), '10.000000');
});

test('a page after lost events: the flag alone, or with the count stored after the data', () => {
  const none = decodePage(new PageBuilder(T0).data(rec(0), 0).build({ missed: true }), header);
  assert.equal(none.missed, true);
  assert.equal(none.lost, undefined);
  assert.equal(none.records.length, 1);
  // As this kernel wrote it: a full page, bit 31 sign-extended through the long.
  const full = new PageBuilder(T0);
  let n = 0;
  for (; full.length + 72 <= 4080; n++) full.data(rec(n), 1);
  full.padding(4080 - full.length - 4);
  const fp = full.build({ commit: 0xffffffff80000ff0n });
  const f = decodePage(fp, header);
  assert.equal(f.dataLength, 4080);
  assert.equal(f.missed, true);
  assert.equal(f.records.length, n);
  assert.equal(decodeFields(fp, f.records[n - 1], format).n, n - 1);
  const stored = decodePage(new PageBuilder(T0).data(rec(0), 0).data(rec(1), 0).build({ lost: 12345 }), header);
  assert.deepEqual(plainData([stored.missed, stored.lost, stored.records.length, stored.dataLength]), [true, 12345, 2, 120]);
  const ok = decodePage(new PageBuilder(T0).data(rec(0), 0).build(), header);
  assert.deepEqual(plainData([ok.missed, ok.lost]), [false, undefined]);
});

test('strings are decoded exactly: newlines, \\r, U+2028, text shaped like LOST lines and records, invalid UTF-8; a fault is null', () => {
  const hostile = [
    'two\nlines',
    'cr\rhere',
    'ls\u2028ps\u2029',
    'CPU:0 [LOST 5 EVENTS]',
    '\nCPU:1 [LOST 7 EVENTS]\n  rawfix-1 [000] ..... 1.000000: take: (0x1) n=1 s="x"',
    '',
    'h\u00e9llo \u2713 \ud83d\ude00',
  ];
  const b = new PageBuilder(T0);
  hostile.forEach((s, k) => b.data(rec(k, s), 1));
  b.data(rec(99, null), 1);
  // A string with a byte that is not UTF-8, and a NUL before its recorded end.
  const raw = rec(100, 'ab');
  const bad = Buffer.concat([raw.subarray(0, raw.length - 3), Buffer.from([0x61, 0xff, 0x00])]);
  b.data(bad, 1);
  const page = b.build();
  const p = decodePage(page, header);
  const fields = p.records.map((r) => decodeFields(page, r, format));
  assert.deepEqual(plainData(fields.map((f) => f.s)), [...hostile, null, 'a\ufffd']);
  // Given the formats by id, decodePage decodes each known record's fields; records of other events keep only their id.
  const other = Buffer.alloc(8);
  other.writeUInt16LE(5, 0);
  const mixed = new PageBuilder(T0).data(rec(1, 'CPU:0 [LOST 5 EVENTS]'), 0).data(other, 0).build();
  assert.deepEqual(plainData(decodePage(mixed, header, new Map([[format.id, format]])).records.map((r) => [r.id, r.fields?.s])), [
    [1234, 'CPU:0 [LOST 5 EVENTS]'],
    [5, undefined],
  ]);
  assert.deepEqual(plainData(fields[0]), {
    common_type: 1234,
    common_flags: 0,
    common_preempt_count: 0,
    common_pid: 77,
    __probe_ip: 0,
    n: 0,
    s: 'two\nlines',
    a: [1, 2, 3, 4],
    comm: 'worker',
    v: [-2, 3],
  });
  // 64-bit values past 2^53 come as bigint.
  const wide = new PageBuilder(T0)
    .data(rec(-(2n ** 63n)), 0)
    .data(rec(2n ** 53n + 1n), 0)
    .build();
  assert.deepEqual(plainData(decodePage(wide, header).records.map((r) => decodeFields(wide, r, format).n)), [-(2n ** 63n), 2n ** 53n + 1n]);
});

test('a corrupt or truncated page is an error naming the byte, never a short read or a skipped record', () => {
  const good = new PageBuilder(T0).data(rec(0), 0).data(rec(1), 0).build();
  throwsAt(() => decodePage(good.subarray(0, 12), header), 12, /ends inside its 16-byte header/);
  throwsAt(() => decodePage(good.subarray(0, 100), header), 100, /ends before its 120 bytes of data/);
  throwsAt(() => decodePage(new PageBuilder(T0).build({ commit: 4081n }), header), 8, /commit says 4081 bytes/);
  throwsAt(() => decodePage(new PageBuilder(T0).build({ commit: 0x100000010n }), header), 8, /stray upper bits/);
  throwsAt(() => decodePage(new PageBuilder(T0).build({ commit: 0xffffffff00000010n }), header), 8, /stray upper bits/);
  throwsAt(() => decodePage(new PageBuilder(T0).build({ commit: 0x40000010n }), header), 8, /no events were lost/);
  // The stored count would lie past the page's data area.
  throwsAt(
    () => decodePage(new PageBuilder(T0).build({ commit: 0xffffffffc0000000n | 4076n }), header),
    4092,
    /lost-events count lies outside/,
  );
  // A record whose type_len says more than the data holds: its header names it.
  const cut = new PageBuilder(T0).data(rec(0), 0).build({ commit: 50n });
  throwsAt(() => decodePage(cut, header), 16, /a 56-byte record runs past the data's end \(66\)/);
  // Two bytes left: not even a record header.
  throwsAt(
    () => decodePage(new PageBuilder(T0).data(rec(0), 0).build({ commit: 62n }), header),
    76,
    /record header needs 4 bytes; 2 are left/,
  );
  // Length words: missing, not a multiple of 4, too small.
  throwsAt(() => decodePage(new PageBuilder(T0).raw(Buffer.from([0, 0, 0, 0])).build(), header), 16, /without its length word/);
  for (const len of [2, 6]) {
    const w = Buffer.alloc(8);
    w.writeUInt32LE(len, 4);
    throwsAt(
      () => decodePage(new PageBuilder(T0).raw(w).raw(Buffer.alloc(8)).build(), header),
      20,
      new RegExp(`length word ${len} is not`),
    );
  }
  const huge = Buffer.alloc(8);
  huge.writeUInt32LE(4000, 4);
  throwsAt(() => decodePage(new PageBuilder(T0).raw(huge).build(), header), 16, /a 3996-byte record runs past/);
  // Padding longer than the data, a time-extend cut short, a record too short for its id.
  const pad = Buffer.from([29 | (1 << 5), 0, 0, 0, 100, 0, 0, 0]);
  throwsAt(() => decodePage(new PageBuilder(T0).raw(pad).build(), header), 20, /padding of 100 bytes runs past/);
  throwsAt(() => decodePage(new PageBuilder(T0).raw(Buffer.from([30, 0, 0, 0])).build(), header), 16, /time-extend record is cut short/);
  throwsAt(() => decodePage(new PageBuilder(T0).raw(Buffer.from([31, 0, 0, 0])).build(), header), 16, /time-stamp record is cut short/);
  // A length-less padding is only ever the page's last few bytes: before a record it would hide it.
  throwsAt(
    () => decodePage(new PageBuilder(T0).nullPadding().data(rec(0), 0).build(), header),
    16,
    /length-less padding record with 60 bytes of data after it/,
  );
  // Fields: a string pointing outside its record, a record shorter than its format.
  const r = rec(0, 'abc');
  r.writeUInt32LE(((40 << 16) | 52) >>> 0, 24);
  const page = new PageBuilder(T0).data(r, 0).build();
  const [one] = decodePage(page, header).records;
  throwsAt(() => decodeFields(page, one, format), 44, /field 's' points at 40 bytes outside its 56-byte record/);
  const short = new PageBuilder(T0).data(rec(0).subarray(0, 20), 0).build();
  const [s] = decodePage(short, header).records;
  throwsAt(() => decodeFields(short, s, format), 20, /a 20-byte record of 'take', whose fields need 52/);
});

import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { Hit } from '../../../../src/core/tracefs/hitParser';
import { parseEventFormat } from '../../../../src/core/tracefs/rawFormat';
import { RawStream } from '../../../../src/core/tracefs/rawStream';
import { HEADER_EVENT_TEXT, HEADER_PAGE_TEXT, PageBuilder, probeFormatText, recordBytes } from '../../../helpers/rawPageBuilder';

const TAKE_TEXT = probeFormatText(
  'take',
  2400,
  [
    ['s32', 'n', 4],
    ['__data_loc char[]', 'probelens_comm', 4],
  ],
  'n=%d probelens_comm="%s"',
);
const TAKE = parseEventFormat(TAKE_TEXT);
const SCHEMA = {
  event: 'take',
  probe: 'take',
  kind: 'entry' as const,
  args: [
    { name: 'n', type: 's32' },
    { name: 'probelens_comm', type: 'string' },
  ],
};
/** trace_marker's records as this kernel describes them. */
const PRINT_TEXT = [
  'name: print',
  'ID: 5',
  'format:',
  '\tfield:unsigned short common_type;\toffset:0;\tsize:2;\tsigned:0;',
  '\tfield:unsigned char common_flags;\toffset:2;\tsize:1;\tsigned:0;',
  '\tfield:unsigned char common_preempt_count;\toffset:3;\tsize:1;\tsigned:0;',
  '\tfield:int common_pid;\toffset:4;\tsize:4;\tsigned:1;',
  '',
  '\tfield:unsigned long ip;\toffset:8;\tsize:8;\tsigned:0;',
  '\tfield:char buf[];\toffset:16;\tsize:0;\tsigned:0;',
  '',
  'print fmt: "%ps: %s", (void *)REC->ip, REC->buf',
  '',
].join('\n');

const header = (cpu: number, lost = 0, now = '999999.000000') =>
  Buffer.from(`PLRAWCPU${String(cpu).padStart(8, '0')}LOST${String(lost).padStart(12, '0')}NOWT${now.padStart(28)}`, 'latin1');
const take = (tid: number, n: number, comm = 'worker') => recordBytes(TAKE, tid, { n, probelens_comm: comm });
function marker(text: string): Buffer {
  const b = Buffer.alloc(16 + Buffer.byteLength(text) + 1);
  b.writeUInt16LE(5, 0);
  b.writeInt32LE(1, 4);
  b.write(text, 16);
  return b;
}

function open(lookup?: (tids: number[]) => Promise<ReadonlyMap<number, number>>) {
  const hits: Hit[] = [];
  const marks: Array<[number, string]> = [];
  const s = new RawStream({
    host: 'h',
    headerPage: HEADER_PAGE_TEXT,
    headerEvent: HEADER_EVENT_TEXT,
    onHit: (h) => hits.push(h),
    marker: { key: 'k3y0k3y0', onMarker: (ts, text) => marks.push([ts, text]) },
    lookupTgids: lookup,
  });
  s.addEvents([SCHEMA]);
  s.addFormats([TAKE_TEXT, PRINT_TEXT]);
  return { s, hits, marks };
}

test('CPU headers and whole pages are told apart by their bytes 12-15, however the stream is cut', () => {
  // A page whose timestamp spells the header's tag is still a page: its commit word's upper half is 0.
  const tagTs = Buffer.from('PLRAWCPU', 'latin1').readBigUInt64LE(0);
  const stream = Buffer.concat([
    header(1),
    new PageBuilder(1_000_000_000n).data(take(77, 1), 0).data(take(77, 2), 10).build(),
    header(0),
    header(12, 4),
    new PageBuilder(tagTs).data(take(78, 3), 0).build({ lost: 4 }),
    header(0),
  ]);
  for (const step of [stream.length, 4096, 1000, 17, 7, 1]) {
    const { s, hits } = open();
    for (let i = 0; i < stream.length; i += step) s.push(stream.subarray(i, i + step));
    s.end();
    assert.deepEqual(
      hits.map((h) => [h.cpu, h.tid, h.pid, h.args.n, h.comm]),
      [
        [1, 77, 77, 1, 'worker'],
        [1, 77, 77, 2, 'worker'],
        [12, 78, 78, 3, 'worker'],
      ],
      `cut every ${step} bytes`,
    );
    assert.equal(hits[1].ts, 1 + 10 / 1e9);
    assert.deepEqual([s.stats.hits, s.stats.lost, [...s.stats.lostByCpu], s.stats.malformed], [3, 4, [[12, 4]], 0]);
  }
});

test('an item that is neither a header nor a page breaks the stream: counted, never guessed at', () => {
  const { s, hits } = open();
  s.push(
    Buffer.concat([
      header(0),
      new PageBuilder(1n).data(take(7, 1), 0).build(),
      Buffer.from(`PLRAWCPU0000000xLOST000000000000NOWT${'1.0'.padStart(28)}`),
    ]),
  );
  s.push(Buffer.concat([header(0), new PageBuilder(1n).data(take(7, 2), 0).build()]));
  s.end();
  assert.deepEqual(
    hits.map((h) => h.args.n),
    [1],
  );
  assert.equal(s.stats.malformed, 1);
  // A page cut short at the end of the stream is malformed too.
  const cut = open();
  cut.s.push(Buffer.concat([header(0), new PageBuilder(1n).data(take(7, 1), 0).build().subarray(0, 100)]));
  cut.s.end();
  assert.deepEqual([cut.hits.length, cut.s.stats.malformed], [0, 1]);
});

test('the live loss is each CPU’s counters’ growth from header to header (a reset at an event’s removal starts over)', () => {
  const lost: Array<[number, number]> = [];
  const s = new RawStream({
    host: 'h',
    headerPage: HEADER_PAGE_TEXT,
    headerEvent: HEADER_EVENT_TEXT,
    onHit: () => undefined,
    onLost: (c, n) => lost.push([c, n]),
  });
  // A full page after a loss has the flag but no room for the count: the counters, not the page, say how many.
  s.push(
    Buffer.concat([
      header(0, 0),
      header(1, 5),
      new PageBuilder(1n).data(take(7, 1), 0).build({ missed: true }),
      header(1, 5),
      header(1, 9),
      header(0, 2),
      header(1, 3),
    ]),
  );
  assert.deepEqual(lost, [
    [1, 5],
    [1, 4],
    [0, 2],
    [1, 3],
  ]);
  assert.deepEqual(
    [s.stats.lost, [...s.stats.lostByCpu]],
    [
      14,
      [
        [1, 12],
        [0, 2],
      ],
    ],
  );
});

test('hits are merged across CPUs in time order, each released once every CPU has said a later time', () => {
  const { s, hits } = open();
  // A thread moved from CPU 0 to CPU 1: CPU 1 (its return) is read first, CPU 0's entry only in the next round.
  s.push(Buffer.concat([header(0, 0, '1.000000'), header(1, 0, '2.100000'), new PageBuilder(2_000_000_000n).data(take(7, 2), 0).build()]));
  assert.equal(hits.length, 0, 'CPU 0 has not been read past 2 s yet');
  s.push(Buffer.concat([header(0, 0, '2.000000'), new PageBuilder(1_500_000_000n).data(take(7, 1), 0).build()]));
  assert.equal(hits.length, 0, 'nor now (within the slack)');
  s.push(Buffer.concat([header(1, 0, '2.100000'), header(0, 0, '2.100000')]));
  assert.deepEqual(
    hits.map((h) => [h.args.n, h.cpu]),
    [
      [1, 0],
      [2, 1],
    ],
  );
  s.push(Buffer.concat([header(1, 0, '2.2'), new PageBuilder(3_000_000_000n).data(take(7, 3), 0).build()]));
  s.end();
  assert.deepEqual(
    hits.map((h) => h.args.n),
    [1, 2, 3],
    'the end releases the rest',
  );
});

test('trace_marker records carry the file watcher’s markers only when they end with the session’s key', () => {
  const { s, marks, hits } = open();
  s.push(
    Buffer.concat([
      header(0),
      new PageBuilder(2_000_000_000n)
        .data(marker('probelens_watch 1.1 tick 1 k3y0k3y0\n'), 0)
        .data(marker('probelens_watch 1.2 ok 1 0 wrongkey\n'), 5)
        .data(take(9, 4), 5)
        .data(marker('probelens_watch 1.2 ok 1 0 k3y0k3y0\n'), 5)
        .build(),
    ]),
  );
  s.end();
  assert.deepEqual(marks, [
    [2, '1.1 tick 1'],
    [2 + 15e-9, '1.2 ok 1 0'],
  ]);
  assert.equal(hits.length, 1);
});

test('a thread’s hits wait for its process id, in order, while other threads’ pass; the end settles the rest', async () => {
  const asked: number[][] = [];
  let answer!: (m: Map<number, number>) => void;
  const { s, hits } = open((tids) => {
    asked.push(tids);
    return new Promise((res) => (answer = res));
  });
  s.push(
    Buffer.concat([header(0), new PageBuilder(1n).data(take(101, 1), 0).data(take(102, 2), 1).data(take(101, 3), 1).build(), header(0)]),
  );
  assert.equal(hits.length, 0, 'held until the agent says');
  await Promise.resolve();
  assert.deepEqual(asked, [[101, 102]]);
  answer(new Map([[101, 100]]));
  await new Promise((r) => setImmediate(r));
  assert.deepEqual(
    hits.map((h) => [h.tid, h.pid, h.args.n]),
    [
      [101, 100, 1],
      [101, 100, 3],
      [102, 102, 2],
    ],
    'a thread the target does not name keeps its own id',
  );
  // Known now: no more asking.
  s.push(Buffer.concat([header(1), new PageBuilder(2n).data(take(101, 4), 0).data(take(103, 5), 0).build(), header(0), header(1)]));
  assert.deepEqual(
    hits.slice(3).map((h) => [h.tid, h.pid]),
    [[101, 100]],
  );
  s.end(new Map([[103, 100]]));
  assert.deepEqual(
    hits.slice(4).map((h) => [h.tid, h.pid, h.args.n]),
    [[103, 100, 5]],
    'STOP’s saved thread-group ids settle what is still held',
  );
});

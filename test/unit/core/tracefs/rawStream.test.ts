import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { Hit } from '../../../../src/core/tracefs/hitParser';
import { parseEventFormat } from '../../../../src/core/tracefs/rawFormat';
import { MERGE_SLACK, RawStream } from '../../../../src/core/tracefs/rawStream';
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

const roundEnd = () => Buffer.from(`PLRAWEND${'0'.repeat(56)}`, 'latin1');
const at = (seconds: number) => BigInt(Math.round(seconds * 1e9));

test('hits are merged across CPUs in time order, each released once every CPU has been drained past it', () => {
  const { s, hits } = open();
  // A thread moved from CPU 0 to CPU 1: CPU 1 (its return) is read first, CPU 0's entry only in the next round.
  s.push(
    Buffer.concat([header(0, 0, '1.000000'), header(1, 0, '2.100000'), new PageBuilder(at(2)).data(take(7, 2), 0).build(), roundEnd()]),
  );
  assert.equal(hits.length, 0, 'CPU 0 has not been read past 2 s yet');
  s.push(Buffer.concat([header(0, 0, '2.000000'), new PageBuilder(at(1.5)).data(take(7, 1), 0).build()]));
  assert.equal(hits.length, 0, 'nor has CPU 0 been drained past 1.5 s before the next item');
  s.push(roundEnd());
  assert.deepEqual(
    hits.map((h) => [h.args.n, h.cpu]),
    [[1, 0]],
    'the round’s end: CPU 0 drained up to 2 s, the hit at 2 s waits for it to pass',
  );
  s.push(Buffer.concat([header(0, 0, '2.100000'), roundEnd()]));
  assert.deepEqual(
    hits.map((h) => [h.args.n, h.cpu]),
    [
      [1, 0],
      [2, 1],
    ],
  );
  s.push(Buffer.concat([header(1, 0, '2.2'), new PageBuilder(at(3)).data(take(7, 3), 0).build()]));
  s.end();
  assert.deepEqual(
    hits.map((h) => h.args.n),
    [1, 2, 3],
    'the end releases the rest',
  );
});

test('a CPU’s header time holds only once its pages are in: a pipe cut between its header and its pages releases nothing of it', () => {
  const { s, hits } = open();
  s.push(Buffer.concat([header(0, 0, '1.000000'), header(1, 0, '1.000000'), roundEnd()]));
  // Entry on CPU 1 at 1.5 s, return on CPU 0 at 1.6 s; the round reads CPU 0 first; the pipe cuts after CPU 1's header.
  s.push(Buffer.concat([header(0, 0, '1.700000'), new PageBuilder(at(1.6)).data(take(7, 2), 0).build(), header(1, 0, '1.700000')]));
  assert.equal(hits.length, 0, 'CPU 1 said 1.7 s but its pages are still on the way');
  s.push(Buffer.concat([new PageBuilder(at(1.5)).data(take(7, 1), 0).build(), roundEnd()]));
  assert.deepEqual(
    hits.map((h) => [h.args.n, h.cpu]),
    [
      [1, 1],
      [2, 0],
    ],
    'entry before return, released at the round’s end without waiting for another round',
  );
});

test(`the merge margin (${MERGE_SLACK * 1000} ms): a record shipped a round late but timed within it is still merged in order`, () => {
  // Thread 8's hit on CPU 1 at 1.9985 s; thread 7's on CPU 0 at 1.9982 s was still being written when CPU 0's
  // stats said 2.0 s, so it comes in the next round.
  const late = (lateBy: number) => {
    const { s, hits } = open();
    s.push(Buffer.concat([header(0, 0, '2.000000'), header(1, 0, '2.000000')]));
    s.push(Buffer.concat([new PageBuilder(at(2 - lateBy + 0.0003)).data(take(8, 2), 0).build(), roundEnd()]));
    s.push(Buffer.concat([header(0, 0, '2.010000'), new PageBuilder(at(2 - lateBy)).data(take(7, 1), 0).build()]));
    s.push(Buffer.concat([header(1, 0, '2.010000'), roundEnd()]));
    return hits.map((h) => [h.args.n, h.tid]);
  };
  assert.deepEqual(late(0.0018), [
    [1, 7],
    [2, 8],
  ]);
  // Later than the margin it still arrives, only out of order with the other thread's hit.
  assert.deepEqual(late(0.003), [
    [2, 8],
    [1, 7],
  ]);
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

test('the file watcher’s markers are merged with the hits in time order, as trace_pipe would print them', () => {
  const log: string[] = [];
  const s = new RawStream({
    host: 'h',
    headerPage: HEADER_PAGE_TEXT,
    headerEvent: HEADER_EVENT_TEXT,
    onHit: (h) => log.push(`hit ${String(h.args.n)}`),
    marker: { key: 'k3y0k3y0', onMarker: (_ts, text) => log.push(text) },
  });
  s.addEvents([SCHEMA]);
  s.addFormats([TAKE_TEXT, PRINT_TEXT]);
  // The watcher's check ran on CPU 1 (tick before its stat, ok after); the hit it covers was taken on CPU 0 just
  // before the tick, but CPU 0 is read after CPU 1: the hit must still reach the gate before the ok that releases it.
  s.push(
    Buffer.concat([
      header(1, 0, '1.000000'),
      new PageBuilder(at(0.5))
        .data(marker('probelens_watch 1.1 tick 1 k3y0k3y0\n'), 0)
        .data(marker('probelens_watch 1.2 ok 1 0 k3y0k3y0\n'), 1000)
        .build(),
      header(0, 0, '1.000000'),
      new PageBuilder(at(0.5) - 10n).data(take(9, 4), 0).build(),
    ]),
  );
  assert.deepEqual(log, [], 'CPU 0 is not drained yet');
  s.push(roundEnd());
  assert.deepEqual(log, ['hit 4', '1.1 tick 1', '1.2 ok 1 0']);
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

import { test } from 'node:test';
import assert from 'node:assert/strict';
import {
  bucketOfKernelLog2,
  countTrigger,
  entryTrigger,
  exitTrigger,
  latencyTrigger,
  normalTrigger,
  parseHist,
  synthName,
  tableOf,
} from '../../../../src/core/tracefs/hist';
import { log2Bucket } from '../../../../src/shared/hit';
import { plainData } from '../../../helpers/plain';

// An entry event's hist file as Debian 12's 6.1 kernel prints it (its count table and its entry-time table), as the
// agent passes it on (comments other than a table's trigger, and blank lines, dropped).
const ENTRY_HIST = [
  '# trigger info: hist:keys=common_pid,probelens_site:vals=hitcount:sort=hitcount:size=2048 [active]',
  '{ common_pid:        195, probelens_site:          0 } hitcount:        200',
  '{ common_pid:        201, probelens_site:          2 } hitcount:          7',
  'Totals:',
  '    Hits: 207',
  '    Entries: 2',
  '    Dropped: 0',
  '# trigger info: hist:keys=common_pid:vals=hitcount:ts0=common_timestamp:sort=hitcount:size=2048:clock=mono [active]',
  '{ common_pid:        195 } hitcount:        200',
  '    Hits: 200',
  '    Dropped: 3',
];

test('a hist file is read table by table, each known by the trigger that keeps it', () => {
  const tables = parseHist(ENTRY_HIST);
  assert.equal(tables.length, 2);
  assert.equal(tables[0].trigger, 'hist:keys=common_pid,probelens_site');
  assert.deepEqual(plainData(tables[0].entries), [
    { keys: { common_pid: 195, probelens_site: 0 }, raw: { common_pid: '195', probelens_site: '0' }, hits: 200 },
    { keys: { common_pid: 201, probelens_site: 2 }, raw: { common_pid: '201', probelens_site: '2' }, hits: 7 },
  ]);
  assert.equal(tables[0].hits, 207);
  assert.equal(tables[1].dropped, 3);
  // The count table is the count trigger's, not the entry times' (which counts the same calls again).
  assert.equal(tableOf(tables, countTrigger(true)).hits, 207);
  assert.equal(tableOf(tables, entryTrigger()).entries.length, 1);
  assert.deepEqual(plainData(tableOf(tables, countTrigger(false)).entries), [], 'a trigger the file does not hold has no entries');
});

test('log2 keys are read as their exponent', () => {
  const [t] = parseHist([
    '# trigger info: hist:keys=lat.log2:vals=hitcount:sort=hitcount:size=2048 [active]',
    '{ lat: ~ 2^23 } hitcount:          1',
    '{ lat: ~ 2^15 } hitcount:        173',
  ]);
  assert.equal(t.trigger, normalTrigger(latencyTrigger()));
  assert.deepEqual(plainData(t.entries.map((e) => [e.keys.lat, e.hits])), [
    [23, 1],
    [15, 173],
  ]);
});

test('the kernel prints a trigger with its defaults and state; normalTrigger takes them off again', () => {
  assert.equal(normalTrigger('hist:keys=common_pid:vals=hitcount:sort=hitcount:size=2048 [paused]'), normalTrigger(countTrigger(false)));
  assert.equal(
    normalTrigger('hist:keys=common_pid:vals=hitcount:ts0=common_timestamp:sort=hitcount:size=2048:clock=mono [active]'),
    normalTrigger(entryTrigger()),
  );
  assert.equal(
    normalTrigger(
      'hist:keys=common_pid:vals=hitcount:lat=common_timestamp-$ts0:sort=hitcount:size=2048:clock=mono:onmatch(g.f).trace(g_l0,$lat) [active]',
    ),
    'hist:keys=common_pid:lat=common_timestamp-$ts0:clock=mono:onmatch(g.f).trace(g_l0,$lat)',
  );
});

test('trigger texts: counts per thread (and point), entry times, the onmatch latency and its log2 buckets', () => {
  assert.equal(countTrigger(false), 'hist:keys=common_pid:vals=hitcount');
  assert.equal(countTrigger(true), 'hist:keys=common_pid,probelens_site:vals=hitcount');
  assert.equal(entryTrigger(), 'hist:keys=common_pid:ts0=common_timestamp:clock=mono');
  assert.equal(
    exitTrigger('probelens_1_x', 'f', synthName('probelens_1_x', 0)),
    'hist:keys=common_pid:lat=common_timestamp-$ts0:clock=mono:onmatch(probelens_1_x.f).trace(probelens_1_x_l0,$lat)',
  );
});

test("the kernel's log2 bucket of a latency is the stream's, or one below it for a power of two", () => {
  // The kernel's .log2: ilog2(roundup_pow_of_two(v)).
  const kernelLog2 = (v: number): number => Math.ceil(Math.log2(v));
  for (let v = 1; v < 1 << 20; v += 1 + Math.floor(v / 97)) {
    const k = bucketOfKernelLog2(kernelLog2(v));
    const s = log2Bucket(v);
    if ((v & (v - 1)) === 0 && v > 1) assert.equal(k, s - 1, `${v}`);
    else assert.equal(k, s, `${v}`);
  }
});

test('key values as printed: numbers past 2^53 keep their digits, a task name its text less the padding', () => {
  const [t] = parseHist([
    '# trigger info: hist:keys=len:vals=hitcount:sort=hitcount:size=2048 [active]',
    '{ len: 18446744073709551615 } hitcount:          2',
  ]);
  assert.equal(t.entries[0].raw?.len, '18446744073709551615');
  const [c] = parseHist([
    '# trigger info: hist:keys=probelens_comm:vals=hitcount:sort=hitcount:size=2048 [active]',
    '{ probelens_comm: kworker/0:1 x                                      } hitcount:          4',
  ]);
  assert.deepEqual(plainData(c.entries[0].text), { probelens_comm: 'kworker/0:1 x' });
});

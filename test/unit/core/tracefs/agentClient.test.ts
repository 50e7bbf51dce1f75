import { test } from 'node:test';
import assert from 'node:assert/strict';
import { lineSplitter, offendingToken } from '../../../../src/core/tracefs/agentClient';
import { lossReport } from '../../../../src/core/tracefs/loss';

test('lines split on \\n only, UTF-8 characters split across chunks survive, \\r stays data', () => {
  const got: string[] = [];
  const s = lineSplitter((l) => got.push(l));
  const bytes = Buffer.from('a="ü\r"\nsecond\nthird');
  for (let i = 0; i < bytes.length; i++) s.push(bytes.subarray(i, i + 1));
  s.end();
  assert.deepEqual(got, ['a="ü\r"', 'second', 'third']);
});

test('the error_log caret names the offending ARG of the definition', () => {
  const details = [
    '[ 2425.273662] trace_uprobe: error: Invalid register name',
    '  Command: p:probelens_1_ab/bad /tmp/plw:0x116a a=%zz:s32 b=%si:u64',
    '                                                  ^',
  ];
  assert.equal(offendingToken(details), 'a=%zz:s32');
  assert.equal(offendingToken(['nothing useful']), null);
});

test('loss: the per-CPU counters are authoritative and the rest is accounted for', () => {
  const stop = {
    cpus: [
      { cpu: 0, overrun: 10, commitOverrun: 0, dropped: 0, entries: 0 },
      { cpu: 1, overrun: 5, commitOverrun: 0, dropped: 2, entries: 0 },
    ],
    kernelHits: new Map([
      ['a', 100],
      ['b', 20],
    ]),
  };
  const r = lossReport({ hits: 103, lost: 15, lostByCpu: new Map(), unparsed: 0, malformed: 0 }, stop);
  assert.equal(r.lost, 17);
  assert.equal(r.streamLost, 15);
  assert.equal(r.unaccounted, 0);
  const noStats = lossReport({ hits: 1, lost: 4, lostByCpu: new Map(), unparsed: 0, malformed: 0 }, { cpus: [], kernelHits: new Map() });
  assert.equal(noStats.lost, 4);
});

test('loss: the mismatch is the gap when nothing filters, and only the unreadable records when something does', () => {
  const stop = { cpus: [{ cpu: 0, overrun: 2, commitOverrun: 0, dropped: 0, entries: 0 }], kernelHits: new Map([['a', 10]]) };
  const stats = (hits: number, malformed: number) => ({ hits, lost: 2, lostByCpu: new Map(), unparsed: 0, malformed });
  assert.equal(lossReport(stats(8, 0), stop).mismatch, 0);
  assert.equal(lossReport(stats(5, 3), stop).mismatch, 3, 'records that arrived but could not be read');
  assert.equal(lossReport(stats(11, 0), stop).mismatch, -3, 'more records than the kernel counted: forged');
  const filtered = lossReport(stats(4, 1), stop, true);
  assert.equal(filtered.unaccounted, 4, 'the filter gap stays unaccounted');
  assert.equal(filtered.mismatch, 1);
});

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { lineSplitter, offendingToken, parseStop } from '../../../../src/core/tracefs/agentClient';
import { countsAtCut, lossReport } from '../../../../src/core/tracefs/loss';

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

test("STOP's reply: the kernel's counts after the cut and, apart, those read just before it, per point", () => {
  const r = parseStop([
    'stat /sys/kernel/tracing/instances/g/per_cpu/cpu0 entries: 0',
    'profile-before   /bin/x hot 3',
    'profile-before   /bin/x hot 5',
    'profile   /bin/x hot 4',
    'profile   /bin/x hot 9',
  ]);
  assert.deepEqual(Object.fromEntries(r.kernelHits), { hot: 13 });
  assert.deepEqual(Object.fromEntries(r.pointHits!), { hot: [4, 9] });
  assert.deepEqual(Object.fromEntries(r.kernelHitsBefore!), { hot: 8 });
  assert.deepEqual(Object.fromEntries(r.pointHitsBefore!), { hot: [3, 5] });
  assert.equal(parseStop(['profile   /bin/x hot 4']).kernelHitsBefore, undefined, 'other replies have no "before"');
  // A kernel probe's missed calls (the agent's "missed EVENT N" lines), apart from its hits.
  const k = parseStop(['profile kernel openat2_ret 714', 'missed openat2_ret 169']);
  assert.deepEqual(Object.fromEntries(k.kernelHits), { openat2_ret: 714 });
  assert.deepEqual(Object.fromEntries(k.kernelMissed!), { openat2_ret: 169 });
  assert.equal(parseStop(['profile   /bin/x hot 4']).kernelMissed, undefined, 'none missed: no map');
  assert.equal(parseStop(['profile   /bin/x hot 4']).tgids, undefined);
  // The binary stream's STOP: saved_tgids, for the threads of its last pages.
  assert.deepEqual(
    [...parseStop(['tgid 101 100', 'tgid 100 100', 'profile   /bin/x hot 4']).tgids!],
    [
      [101, 100],
      [100, 100],
    ],
  );
});

test('the count at the cut: what arrived when the kernel counted at least that before and at most after', () => {
  const stop = (before: number[], after: number[]) => ({
    cpus: [],
    kernelHits: new Map([['hot', after.reduce((a, b) => a + b, 0)]]),
    pointHits: new Map([['hot', after]]),
    kernelHitsBefore: new Map([['hot', before.reduce((a, b) => a + b, 0)]]),
    pointHitsBefore: new Map([['hot', before]]),
  });
  const recv = (xs: number[]) => (_e: string, i: number) => xs[i];
  // A program busy at the stop: the kernel counted calls after the cut that were never recorded.
  let r = countsAtCut(stop([3, 5], [4, 9]), recv([4, 6]), 0);
  assert.deepEqual(r.pointHits!.get('hot'), [4, 6]);
  assert.equal(lossReport({ hits: 10, lost: 0, lostByCpu: new Map(), unparsed: 0, malformed: 0 }, r).mismatch, 0);
  // Records lost in the buffer are not any point's: the total still takes them, within the ranges.
  r = countsAtCut(stop([3, 5], [4, 9]), recv([3, 5]), 3);
  assert.equal(r.kernelHits.get('hot'), 11);
  assert.equal(lossReport({ hits: 8, lost: 3, lostByCpu: new Map(), unparsed: 0, malformed: 0 }, r).mismatch, 0);
  // Records missing even at the count before the cut: a mismatch of what is missing.
  r = countsAtCut(stop([3, 5], [4, 9]), recv([1, 5]), 0);
  assert.deepEqual(r.pointHits!.get('hot'), [3, 5]);
  assert.equal(lossReport({ hits: 6, lost: 0, lostByCpu: new Map(), unparsed: 0, malformed: 0 }, r).mismatch, 2);
  // More records than the kernel counted after the cut: negative.
  r = countsAtCut(stop([3, 5], [4, 9]), recv([6, 9]), 0);
  assert.equal(lossReport({ hits: 15, lost: 0, lostByCpu: new Map(), unparsed: 0, malformed: 0 }, r).mismatch, -2);
  // Without counts from before the cut the report is as it was.
  const plain = { cpus: [], kernelHits: new Map([['hot', 2]]) };
  assert.equal(countsAtCut(plain, recv([1]), 0), plain);
});

test('loss: entries a stop left unread (a client too slow to drain the buffer) are lost', () => {
  const stop = { cpus: [{ cpu: 0, overrun: 2, commitOverrun: 0, dropped: 0, entries: 5 }], kernelHits: new Map([['a', 20]]) };
  const r = lossReport({ hits: 13, lost: 2, lostByCpu: new Map(), unparsed: 0, malformed: 0 }, stop);
  assert.equal(r.lost, 7);
  assert.equal(r.mismatch, 0);
});

test("STOP's hist lines are kept per event, in order, apart from the profile and the per-CPU counters", () => {
  const r = parseStop([
    'profile-before   /bin/x f 3',
    'hist f # trigger info: hist:keys=common_pid:vals=hitcount:sort=hitcount:size=2048 [active]',
    'hist f { common_pid:        195 } hitcount:          3',
    'hist probelens_1_x_l0 { lat: ~ 2^15 } hitcount:          2',
    'hist f     Dropped: 0',
    'profile   /bin/x f 3',
  ]);
  assert.deepEqual(r.hist?.get('f'), [
    '# trigger info: hist:keys=common_pid:vals=hitcount:sort=hitcount:size=2048 [active]',
    '{ common_pid:        195 } hitcount:          3',
    '    Dropped: 0',
  ]);
  assert.deepEqual(r.hist?.get('probelens_1_x_l0'), ['{ lat: ~ 2^15 } hitcount:          2']);
  assert.equal(r.kernelHits.get('f'), 3);
  assert.equal(parseStop(['profile   /bin/x f 3']).hist, undefined, 'no hist lines: no hist');
});

import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { CompiledProbe } from '../../../../src/core/probes/compiler';
import { checkKeys, KeyCounter, keyValue, parseKey } from '../../../../src/core/session/keys';
import { kernelFigures, kernelValue, planHist } from '../../../../src/core/session/kernelAggregation';
import { Aggregates } from '../../../../src/core/session/aggregates';
import { mergeSummaries } from '../../../../src/core/session/fanout';
import { probeSummaryLines } from '../../../../src/cli/summaryText';
import type { Hit } from '../../../../src/shared/hit';
import { plainData } from '../../../helpers/plain';

const G = 'probelens_1_4_effffffc_abc';

function hit(probe: string, args: Hit['args'], comm = 'app', retval?: Hit['retval']): Hit {
  return {
    host: 'local',
    probe,
    event: probe,
    kind: retval === undefined ? 'entry' : 'return',
    pid: 1,
    tid: 1,
    comm,
    cpu: 0,
    ts: 0,
    args,
    retval,
  };
}

function point(event: string, args: Array<{ name: string; type?: string; display?: string; hidden?: boolean }>): CompiledProbe {
  return {
    event,
    spec: event,
    kind: 'entry',
    args: args.map((a) => ({ fetch: '%di', type: a.type ?? 's64', display: a.display ?? 'signed', ...a })),
    definition: { event },
  } as unknown as CompiledProbe;
}

const COMM = { name: 'probelens_comm', type: 'string', display: 'string', hidden: true };

test('a key is an argument, its .log2, retval or comm; anything else is refused with what a key is', () => {
  assert.deepEqual(plainData(parseKey('len')), { text: 'len', name: 'len', log2: false });
  assert.deepEqual(plainData(parseKey('len.log2')), { text: 'len.log2', name: 'len', log2: true });
  assert.deepEqual(plainData(parseKey('comm')), { text: 'comm', name: 'comm', log2: false });
  for (const bad of ['', 'a b', 'len.log10', 'comm.log2', 'how->flags', '1x', 'x'.repeat(65)])
    assert.throws(() => parseKey(bad), /a key is an integer argument's name as hits show it/, bad);
});

test('the value a hit counts under: integers exactly (past 2^53 as decimal text), log2 buckets, retval, comm', () => {
  assert.equal(keyValue(parseKey('n'), hit('f', { n: 4096 })), 4096);
  assert.equal(keyValue(parseKey('n'), hit('f', { n: '18446744073709551615' })), '18446744073709551615');
  assert.equal(keyValue(parseKey('n.log2'), hit('f', { n: 4096 })), 12);
  assert.equal(keyValue(parseKey('n.log2'), hit('f', { n: 4095 })), 11);
  assert.equal(keyValue(parseKey('n.log2'), hit('f', { n: 0 })), 0);
  assert.equal(keyValue(parseKey('n.log2'), hit('f', { n: '18446744073709551615' })), 63);
  assert.equal(keyValue(parseKey('n.log2'), hit('f', { n: '-9007199254740993' })), 0);
  assert.equal(keyValue(parseKey('n'), hit('f', { s: 'text' })), undefined, 'no such argument: not counted');
  assert.equal(keyValue(parseKey('s'), hit('f', { s: 'text' })), undefined, 'text is not an integer key');
  assert.equal(keyValue(parseKey('retval'), hit('f', {}, 'app', -2)), -2);
  assert.equal(keyValue(parseKey('comm'), hit('f', {}, 'redis-server')), 'redis-server');
});

test('streamed: each probe counted per value, most hits first; log2 buckets in order', () => {
  const c = new KeyCounter([parseKey('n'), parseKey('n.log2'), parseKey('comm')]);
  for (const n of [1, 5, 5, 300, 5, 1]) c.add(hit('f', { n }, n === 300 ? 'b' : 'a'));
  c.add(hit('g', {}, 'a'));
  assert.deepEqual(plainData(c.tables()), {
    f: {
      n: [
        { value: 5, hits: 3 },
        { value: 1, hits: 2 },
        { value: 300, hits: 1 },
      ],
      'n.log2': [
        { value: 0, hits: 2 },
        { value: 2, hits: 3 },
        { value: 8, hits: 1 },
      ],
      comm: [
        { value: 'a', hits: 5 },
        { value: 'b', hits: 1 },
      ],
    },
    g: { comm: [{ value: 'a', hits: 1 }] },
  });
});

test('a key no probe fetches, or one that is text, is refused before arming, naming the arguments there are', () => {
  const probes = [point('f', [{ name: 'len' }, { name: 'path', type: 'string', display: 'string' }, COMM])];
  assert.doesNotThrow(() => checkKeys([parseKey('len'), parseKey('len.log2'), parseKey('comm')], probes));
  assert.throws(
    () => checkKeys([parseKey('lenn')], probes),
    /--by lenn: no probe of this trace fetches 'lenn' \(its arguments: len, path; or comm, pid, tid\)/,
  );
  assert.throws(() => checkKeys([parseKey('path')], probes), /'path' is text or an array, not an integer/);
  assert.throws(
    () => checkKeys([parseKey('probelens_comm')], probes),
    /no probe of this trace fetches/,
    "ProbeLens's own fields are not arguments",
  );
});

test('aggregated: one hist trigger per key on each event that fetches its field, read back as the streamed counter counts', () => {
  const keys = [parseKey('len'), parseKey('len.log2'), parseKey('comm')];
  const f = point('f', [{ name: 'len' }, COMM]);
  const g = point('g', [COMM]);
  const points = new Map([
    ['f', [f]],
    ['g', [g]],
  ]);
  const plan = planHist(G, points, (p) => p.event, keys);
  assert.deepEqual(plainData(plan.triggers.map((t) => `${t.event} ${t.trigger}`)), [
    'f hist:keys=common_pid:vals=hitcount',
    'f hist:keys=len:vals=hitcount',
    'f hist:keys=len.log2:vals=hitcount',
    'f hist:keys=probelens_comm:vals=hitcount',
    'g hist:keys=common_pid:vals=hitcount',
    'g hist:keys=probelens_comm:vals=hitcount',
  ]);
  // The kernel's hist files (6.1's format): string keys padded, log2 keys as ⌈log2⌉ exponents, 0 as a huge one.
  const hist = new Map<string, string[]>([
    [
      'f',
      [
        '# trigger info: hist:keys=common_pid:vals=hitcount:sort=hitcount:size=2048 [active]',
        '{ common_pid:        77 } hitcount:          6',
        'Hits: 6',
        '# trigger info: hist:keys=len:vals=hitcount:sort=hitcount:size=2048 [active]',
        '{ len:          1 } hitcount:          2',
        '{ len:        300 } hitcount:          1',
        '{ len:          5 } hitcount:          3',
        '# trigger info: hist:keys=len.log2:vals=hitcount:sort=hitcount:size=2048 [active]',
        '{ len: ~ 2^0  } hitcount:          2',
        '{ len: ~ 2^3  } hitcount:          3',
        '{ len: ~ 2^9  } hitcount:          1',
        '# trigger info: hist:keys=probelens_comm:vals=hitcount:sort=hitcount:size=2048 [active]',
        '{ probelens_comm: b                                                  } hitcount:          1',
        '{ probelens_comm: a                                                  } hitcount:          5',
      ],
    ],
    [
      'g',
      [
        '# trigger info: hist:keys=common_pid:vals=hitcount:sort=hitcount:size=2048 [active]',
        '{ common_pid:        77 } hitcount:          1',
        '# trigger info: hist:keys=probelens_comm:vals=hitcount:sort=hitcount:size=2048 [active]',
        '{ probelens_comm: 1234                                               } hitcount:          1',
      ],
    ],
  ]);
  const k = kernelFigures(hist, plan, points, (p) => p.event);
  const streamed = new KeyCounter(keys);
  for (const n of [1, 5, 5, 300, 5, 1]) streamed.add(hit('f', { len: n }, n === 300 ? 'b' : 'a'));
  streamed.add(hit('g', {}, '1234'));
  assert.deepEqual(plainData(k.keys), plainData(streamed.tables()), 'the same rows either way (these values are no power of two)');
  const agg = new Aggregates(undefined, undefined, { keys });
  agg.setKernel(k);
  assert.deepEqual(plainData(agg.summary().keys), plainData(streamed.tables()));
});

test('across hosts the rows add up; the text summary lists them and what no row shows', () => {
  const keys = [parseKey('len'), parseKey('len.log2')];
  const a = new Aggregates(undefined, undefined, { keys });
  const b = new Aggregates(undefined, undefined, { keys });
  for (const n of [5, 5, 300]) a.add(hit('f', { len: n }));
  for (const n of [5, 64]) b.add(hit('f', { len: n }));
  b.add(hit('f', {}));
  const summary = (agg: Aggregates) => ({ host: 'h', lost: 0, mismatch: 0, kernelHits: {}, ...agg.summary() });
  const m = mergeSummaries([
    { host: 'a', summary: summary(a) },
    { host: 'b', summary: summary(b) },
  ]);
  assert.deepEqual(plainData(m.keys), {
    f: {
      len: [
        { value: 5, hits: 3 },
        { value: 64, hits: 1 },
        { value: 300, hits: 1 },
      ],
      'len.log2': [
        { value: 2, hits: 3 },
        { value: 6, hits: 1 },
        { value: 8, hits: 1 },
      ],
    },
  });
  const text = probeSummaryLines(m, 'f').join('');
  assert.match(text, /^ {2}by len:\n {4}5 {3}3 hits\n {4}64 {2}1 hit\n {4}300 1 hit\n {4}1 hit under no value shown\n/m);
  assert.match(
    text,
    /^ {2}by len\.log2:\n {4}\[4, 8\) {5}3 hits \|#{32}\n {4}\[64, 128\) {2}1 hit \|#{11}\n {4}\[256, 512\) 1 hit \|#{11}\n/m,
  );
});

test("the kernel's u64 key values: a signed field's negatives wrap back, values past 2^53 stay exact as text", () => {
  assert.equal(kernelValue('18446744073709551615', true), -1);
  assert.equal(kernelValue('18446744073709551615', false), '18446744073709551615');
  assert.equal(kernelValue('9007199254740993', false), '9007199254740993');
  assert.equal(kernelValue('9007199254740991', false), 9007199254740991);
  assert.equal(kernelValue('42', true), 42);
  const keys = [parseKey('retval')];
  const r = { ...point('f_return', [{ name: 'retval', type: 's64' }, COMM]), kind: 'return' } as CompiledProbe;
  const points = new Map([['f_return', [r]]]);
  const plan = planHist(G, points, () => 'f', keys);
  const hist = new Map([
    [
      'f_return',
      [
        '# trigger info: hist:keys=retval:vals=hitcount:sort=hitcount:size=2048 [active]',
        '{ retval: 18446744073709551614 } hitcount:          2',
        '{ retval:          3 } hitcount:          1',
      ],
    ],
  ]);
  const streamed = new KeyCounter(keys);
  for (const v of [-2, 3, -2]) streamed.add(hit('f', {}, 'a', v));
  assert.deepEqual(plainData(kernelFigures(hist, plan, points, () => 'f').keys), plainData(streamed.tables()));
});

test('by caller: kernel entries only; the kernel names the return address (.sym) per point, and a point at an inlined copy counts under the function it is in, as the stream does', () => {
  assert.deepEqual(plainData(parseKey('caller')), { text: 'caller', name: 'caller', log2: false });
  assert.throws(() => parseKey('caller.log2'), /a key is an integer argument's name/);
  const CALLER = { name: 'probelens_caller', type: 'x64', display: 'hex', hidden: true };
  const kprobe = (event: string, site: object, args = [COMM, CALLER, { name: 'probelens_site', type: 'u32', hidden: true }]) =>
    ({ ...point(event, args), site, definition: { event, target: { type: 'kprobe' } } }) as unknown as CompiledProbe;
  const entry = kprobe('f', { kind: 'entry', address: 0xffffffff81000000n });
  const copy = kprobe('f', { kind: 'inlined', address: 0xffffffff81200010n, caller: 'ksys_read' });
  checkKeys([parseKey('caller')], [entry, copy]);
  const user = { ...point('u', [COMM]), definition: { event: 'u', target: { type: 'uprobe' } } } as unknown as CompiledProbe;
  assert.throws(() => checkKeys([parseKey('caller')], [entry, user]), /kernel functions' calls by their caller \(u is a user function/);
  assert.throws(
    () => checkKeys([parseKey('caller')], [kprobe('g', {}, [COMM])]),
    /this trace has no kernel function entry placed from a vmlinux/,
  );

  const keys = [parseKey('caller')];
  const points = new Map([['f', [entry, copy]]]);
  const plan = planHist(G, points, (p) => p.event, keys);
  assert.deepEqual(plainData(plan.keyEvents.map((t) => t.trigger)), ['hist:keys=probelens_site,probelens_caller.sym:vals=hitcount']);
  // 6.1's format: the address in brackets, then the name padded; a garbage stack top at the inlined copy.
  const hist = new Map([
    [
      'f',
      [
        '# trigger info: hist:keys=probelens_site,probelens_caller.sym:vals=hitcount:sort=hitcount:size=2048 [active]',
        '{ probelens_site:          0, probelens_caller: [ffffffff8103e0b5] do_syscall_64                                 } hitcount:          7',
        '{ probelens_site:          1, probelens_caller: [ffff88800412bd60] 0xffff88800412bd60                            } hitcount:          2',
        '{ probelens_site:          1, probelens_caller: [ffff88800412bd68] 0xffff88800412bd68                            } hitcount:          1',
        '{ probelens_site:          0, probelens_caller: [ffffffff812f00a1] vfs_read                                      } hitcount:          1',
      ],
    ],
  ]);
  const k = kernelFigures(hist, plan, points, () => 'f');
  const streamed = new KeyCounter(keys);
  for (const c of ['do_syscall_64', 'ksys_read', 'do_syscall_64', 'vfs_read', 'ksys_read', 'ksys_read', ...Array(5).fill('do_syscall_64')])
    streamed.add({ ...hit('f', {}), caller: c });
  assert.deepEqual(plainData(k.keys), plainData(streamed.tables()));
  assert.deepEqual(plainData(k.keys?.f.caller), [
    { value: 'do_syscall_64', hits: 7 },
    { value: 'ksys_read', hits: 3 },
    { value: 'vfs_read', hits: 1 },
  ]);
  assert.equal(keyValue(parseKey('caller'), { ...hit('f', {}), caller: 'vfs_read' }), 'vfs_read');
  assert.equal(keyValue(parseKey('caller'), hit('f', {})), undefined, 'a hit with no caller is not counted under one');
});

test('by process and by thread: streamed from each hit, aggregated from the count trigger’s threads and the kernel’s thread → process map, the same rows', () => {
  const keys = [parseKey('pid'), parseKey('tid')];
  assert.throws(() => parseKey('pid.log2'), /a key is/);
  const f = point('f', [{ name: 'len' }, COMM]);
  const points = new Map([['f', [f]]]);
  const plan = planHist(G, points, (p) => p.event, keys);
  assert.deepEqual(
    plainData(plan.triggers.map((t) => `${t.event} ${t.trigger}`)),
    ['f hist:keys=common_pid:vals=hitcount'],
    'no trigger of their own: the count trigger keys every hit by its thread already',
  );
  // Process 70 has threads 70 and 71 (71 has exited: the kernel's saved_tgids still knows it); 90 is alone.
  const hist = new Map([
    [
      'f',
      [
        '# trigger info: hist:keys=common_pid:vals=hitcount:sort=hitcount:size=2048 [active]',
        '{ common_pid:        70 } hitcount:          2',
        '{ common_pid:        71 } hitcount:          3',
        '{ common_pid:        90 } hitcount:          4',
      ],
    ],
  ]);
  const tgids = new Map([
    [70, 70],
    [71, 70],
    [90, 90],
  ]);
  const k = kernelFigures(hist, plan, points, (p) => p.event, keys, tgids);
  const streamed = new KeyCounter(keys);
  const add = (pid: number, tid: number, n: number) => {
    for (let i = 0; i < n; i++) streamed.add({ ...hit('f', { len: 1 }), pid, tid });
  };
  add(70, 70, 2);
  add(70, 71, 3);
  add(90, 90, 4);
  assert.deepEqual(plainData(k.keys), plainData(streamed.tables()), 'the same rows either way');
  assert.deepEqual(plainData(k.keys?.f.pid), [
    { value: 70, hits: 5 },
    { value: 90, hits: 4 },
  ]);
  assert.deepEqual(plainData(k.keys?.f.tid), [
    { value: 90, hits: 4 },
    { value: 71, hits: 3 },
    { value: 70, hits: 2 },
  ]);
  // A thread whose process the kernel no longer holds counts under its own id, as trace_pipe prints it.
  const forgot = kernelFigures(hist, plan, points, (p) => p.event, keys, new Map([[70, 70]]));
  assert.deepEqual(plainData(forgot.keys?.f.pid), [
    { value: 90, hits: 4 },
    { value: 71, hits: 3 },
    { value: 70, hits: 2 },
  ]);
  // Over several hosts a row says whose process it is; comm and argument values add up as before.
  const summary = (agg: Aggregates) => ({ host: 'h', lost: 0, mismatch: 0, kernelHits: {}, ...agg.summary() });
  const a = new Aggregates(undefined, undefined, { keys });
  a.setKernel(k);
  const b = new Aggregates(undefined, undefined, { keys });
  b.add({ ...hit('f', { len: 1 }), pid: 70, tid: 70 });
  const m = mergeSummaries([
    { host: 'a', summary: summary(a) },
    { host: 'b', summary: summary(b) },
  ]);
  assert.deepEqual(plainData(m.keys?.f.pid), [
    { value: 'a:70', hits: 5 },
    { value: 'a:90', hits: 4 },
    { value: 'b:70', hits: 1 },
  ]);
  assert.deepEqual(plainData(mergeSummaries([{ host: 'a', summary: summary(a) }]).keys?.f.pid), k.keys?.f.pid, 'one host: its own ids');
});

test('by pid or tid when a probe fetches an argument of that name: refused, saying how to count by either', () => {
  const probes = [point('kill_pid_info', [{ name: 'sig' }, { name: 'pid' }, COMM])];
  assert.throws(
    () => checkKeys([parseKey('pid')], probes),
    /--by pid counts by the process that made the call, but kill_pid_info also fetches an argument 'pid': name that argument otherwise in the spec \(p=pid\)/,
  );
  assert.doesNotThrow(() => checkKeys([parseKey('tid'), parseKey('sig')], probes));
  assert.equal(keyValue(parseKey('pid'), { ...hit('f', {}), pid: 7, tid: 8 }), 7);
  assert.equal(keyValue(parseKey('tid'), { ...hit('f', {}), pid: 7, tid: 8 }), 8);
});

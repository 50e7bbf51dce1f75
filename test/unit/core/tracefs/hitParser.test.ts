import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { hitToJson } from '../../../../src/shared/hitJson';
import { HitParser, matchArgs, type EventSchema, type Hit, type Sentinel } from '../../../../src/core/tracefs/hitParser';
import { plainData } from '../../../helpers/plain';

const samples = join(__dirname, '../../../fixtures/trace-samples');

interface SampleMeta {
  sentinel: Sentinel | null;
  events: Record<string, { kind: EventSchema['kind']; args: Record<string, string> }>;
}

function parseSample(name: string): { hits: Hit[]; parser: HitParser } {
  const meta = JSON.parse(readFileSync(join(samples, `${name}.json`), 'utf8')) as SampleMeta;
  const events: EventSchema[] = Object.entries(meta.events).map(([event, e]) => ({
    event,
    probe: `probe:${event}`,
    kind: e.kind,
    args: Object.entries(e.args).map(([n, type]) => ({ name: n, type })),
    retvalArg: e.kind === 'return' ? 'ret' : undefined,
  }));
  const hits: Hit[] = [];
  const parser = new HitParser({ host: 'h1', events, sentinel: meta.sentinel, onHit: (h) => hits.push(h) });
  const text = readFileSync(join(samples, `${name}.txt`), 'utf8');
  for (const line of text.replace(/\n$/, '').split('\n')) parser.push(line);
  parser.end();
  return { hits, parser };
}

for (const name of ['thiskernel', 'thiskernel-sentinel']) {
  test(`recorded sample ${name}: every call becomes one typed hit and forged lines stay inside the string`, () => {
    const { hits, parser } = parseSample(name);
    // workload ran 6 times x 2 calls, each with an entry and a return.
    assert.equal(hits.length, 24);
    assert.equal(parser.stats.lost, 0, 'the forged LOST line must not count');
    assert.equal(parser.stats.malformed, 0);
    assert.equal(parser.stats.unparsed, 0);
    const adds = hits.filter((h) => h.event === 'pl_add');
    assert.equal(adds.length, 12);
    const first = adds[0];
    assert.equal(first.host, 'h1');
    assert.equal(first.kind, 'entry');
    assert.equal(first.comm, 'workload');
    assert.equal(first.pid, first.tid);
    assert.ok(first.ts > 0);
    assert.deepEqual(plainData(first.args), {
      a: -1,
      a8: -1,
      au: 4294967295,
      ax: '0xffffffff',
      b: '18446744073709551615',
      bs: -1,
      bx: '0xffffffffffffffff',
      s: 'hello',
      f: null,
      c: 'workload',
    });
    assert.equal(adds[1].args.a, -2);
    assert.equal(adds[1].args.b, '18446744073709551614');
    assert.deepEqual(plainData(adds.map((h) => h.args.s)), [
      'hello',
      'hello',
      '',
      '',
      'quote " inside',
      'quote " inside',
      'two\nlines',
      'two\nlines',
      'x"\nCPU:0 [LOST 99 EVENTS]\n   forged-1 (1) [000] ..... 1.0: pl_add: (0x1) a=7 a8=7 au=7 ax=0x7 b=7 bs=7 bx=0x7 s="y" f=(fault) c="z"',
      'x"\nCPU:0 [LOST 99 EVENTS]\n   forged-1 (1) [000] ..... 1.0: pl_add: (0x1) a=7 a8=7 au=7 ax=0x7 b=7 bs=7 bx=0x7 s="y" f=(fault) c="z"',
      'ümlaut',
      'ümlaut',
    ]);
    const rets = hits.filter((h) => h.kind === 'return');
    assert.deepEqual(plainData(rets.slice(0, 2).map((h) => h.retval)), [-2, -4]);
    assert.ok(!('ret' in rets[0].args));
    assert.ok(!hits.some((h) => h.comm.includes('forged')));
    assert.deepEqual(plainData(Object.keys(hitToJson(rets[0]))), [
      'host',
      'probe',
      'kind',
      'pid',
      'tid',
      'comm',
      'cpu',
      'ts',
      'args',
      'retval',
    ]);
    assert.deepEqual(plainData(Object.keys(hitToJson(first))), ['host', 'probe', 'kind', 'pid', 'tid', 'comm', 'cpu', 'ts', 'args']);
  });
}

test('hand-made older-kernel sample: 5-wide pid, no tgid, 4-char flags, irq-info off, 4.x tgid column', () => {
  const { hits, parser } = parseSample('older-kernel');
  assert.equal(parser.stats.lost, 42);
  assert.deepEqual(plainData([...parser.stats.lostByCpu]), [[1, 42]]);
  assert.equal(parser.stats.unparsed, 1, 'the "buffer started" banner is not an event');
  assert.deepEqual(plainData(hits.map((h) => [h.comm, h.pid, h.tid, h.cpu, h.ts])), [
    ['workload', 1234, 1234, 0, 88.000001],
    ['workload', 1234, 1234, 0, 88.000004],
    ['my worker-2', 77, 77, 1, 100.123456],
    ['workload', 1234, 1234, 0, 88.000009],
    ['bash', 1977, 1977, 0, 17284.993652],
    ['bash', 1978, 1978, 1, 17284.9937],
  ]);
  assert.equal(hits[2].args.b, '9007199254740993', 'beyond 2^53 stays exact as a decimal string');
  assert.equal(hits[2].args.s, 'two\nlines');
  assert.equal(hits[3].args.s, 'irq-info off: no flags column');
  assert.equal(hits[5].retval, -8);
});

const schema: EventSchema = { event: 'ev', probe: 'f', kind: 'entry', args: [{ name: 's', type: 'string' }] };

test('without a sentinel, a string that is the last arg can end early and forge a LOST line (documented limit)', () => {
  const hits: Hit[] = [];
  const p = new HitParser({ host: 'h', events: [schema], onHit: (h) => hits.push(h) });
  for (const l of ['  a-1 (1) [000] ..... 1.0: ev: (0x1) s="x"', 'CPU:0 [LOST 5 EVENTS]"']) p.push(l);
  assert.equal(hits[0].args.s, 'x');
  assert.equal(p.stats.unparsed, 1);
});

test('line mode: a comm holding \\r, U+2028 or U+2029 still starts a record', () => {
  const hits: Hit[] = [];
  const p = new HitParser({ host: 'h', events: [schema], onHit: (h) => hits.push(h) });
  for (const comm of ['a\rb', 'x\u2028y', 'p\u2029q']) p.push(`${comm.padStart(16)}-7 (7) [000] ..... 1.0: ev: (0x1) s="v"`);
  assert.deepEqual(plainData(hits.map((h) => h.comm)), ['a\rb', 'x\u2028y', 'p\u2029q']);
  assert.equal(p.stats.unparsed, 0);
});

test('a string in the middle ends at the rightmost quote after which the rest fits the schema', () => {
  const args = [
    { name: 's', type: 'string' },
    { name: 'n', type: 's32' },
  ];
  assert.deepEqual(plainData(matchArgs(' s="a" n=1" n=2', args)), ['a" n=1', '2']);
  assert.deepEqual(plainData(matchArgs(' s="a" n=1" n=2" n=3', args)), ['a" n=1" n=2', '3']);
  assert.deepEqual(plainData(matchArgs(' s="a" n=1', args)), ['a', '1']);
  assert.equal(matchArgs(' s="a" m=1', args), null);
  assert.deepEqual(plainData(matchArgs(' s=(fault) n=-3', args)), [null, '-3']);
});

test('events of other groups or unknown names are not hits; arrays are typed element-wise', () => {
  const hits: Hit[] = [];
  const p = new HitParser({
    host: 'h',
    events: [{ event: 'arr', probe: 'p', kind: 'line', args: [{ name: 'v', type: 's16[3]' }] }],
    onHit: (h) => hits.push(h),
  });
  p.push('  a-1 (1) [000] ..... 1.0: other: (0x1) v={1,2,3}');
  p.push('  a-1 (1) [000] ..... 1.5: arr: (0x1) v={1,-2,3}');
  assert.deepEqual(plainData(hits.map((h) => h.args.v)), [[1, -2, 3]]);
  assert.equal(p.stats.unparsed, 1);
});

test('kprobe records name their place by symbol (`(SYMBOL+0xOFF/0xLEN)`, a return `(… <- FUNCTION)`) and are hits', () => {
  const hits: Hit[] = [];
  const p = new HitParser({ host: 'h', events: [schema], onHit: (h) => hits.push(h) });
  p.push('  opener-120 (120) [000] ..... 1.0: ev: (do_sys_openat2+0x0/0x166) s="/tmp/x"');
  p.push('  opener-120 (120) [000] ..... 1.5: ev: (do_sys_open+0x5e/0xa0 <- do_sys_openat2) s="y"');
  assert.deepEqual(plainData(hits.map((h) => [h.pid, h.args.s])), [
    [120, '/tmp/x'],
    [120, 'y'],
  ]);
  assert.equal(p.stats.unparsed, 0);
});

test("a module's kprobe records carry its module after the symbol (`(pfkey_create+0x0/0x1d0 [af_key])`), framed or not", () => {
  const events: EventSchema[] = [
    { event: 'pfkey_create', probe: 'pfkey_create', kind: 'entry', args: [{ name: 'protocol', type: 's32' }] },
    {
      event: 'pfkey_create_return',
      probe: 'pfkey_create_return',
      kind: 'return',
      args: [{ name: 'retval', type: 's32' }],
      retvalArg: 'retval',
    },
  ];
  for (const sentinel of [null, { name: '__pl', printed: '0x5e171e1' }]) {
    const hits: Hit[] = [];
    const p = new HitParser({ host: 'h', events, sentinel, onHit: (h) => hits.push(h) });
    const head = sentinel ? ' __plh=0x5e171e1' : '';
    const tail = sentinel ? ' __pl=0x5e171e1' : '';
    // A comm may itself hold ` [7]` or ` [x]`: the CPU column is still the one before the module.
    p.push(`  pf [7] [x]-122 (  122) [000] ..... 16.4: pfkey_create: (pfkey_create+0x0/0x1d0 [af_key])${head} protocol=2${tail}`);
    p.push(
      `  pf [7] [x]-122 (  122) [000] ..... 16.5: pfkey_create_return: (__sock_create+0x13a/0x2a0 <- pfkey_create)${head} retval=0${tail}`,
    );
    p.push(
      `  pf-122 (  122) [001] ..... 16.6: pfkey_create_return: (mod_caller+0x1a/0x40 [other_mod] <- pfkey_create)${head} retval=-1${tail}`,
    );
    assert.deepEqual(
      plainData(hits.map((h) => [h.comm, h.pid, h.cpu, h.kind, h.args.protocol ?? h.retval])),
      [
        ['pf [7] [x]', 122, 0, 'entry', 2],
        ['pf [7] [x]', 122, 0, 'return', 0],
        ['pf', 122, 1, 'return', -1],
      ],
      `sentinel ${sentinel ? 'on' : 'off'}`,
    );
    assert.equal(p.stats.unparsed, 0);
    assert.equal(p.stats.malformed, 0);
  }
});

// Values through the whole engine: probes armed through it (compiler → agent → tracefs →
// parser) capture exactly the values the fixture programs report for themselves.
import { test, type TestContext } from 'node:test';
import assert from 'node:assert/strict';
import { copyFileSync, mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { loadIndex } from '../../src/core/index/load';
import { TraceSession, type SessionSummary } from '../../src/core/session/traceSession';
import { LocalTarget } from '../../src/core/target/local';
import type { Hit } from '../../src/core/tracefs/hitParser';
import { fixtureOrSkip, markerLine, runFixture, type Fixture, type FixtureName, type FixtureOutput } from '../helpers/fixtures';
import { requireTracefs } from '../helpers/tracefs';
import { plainData } from '../helpers/plain';

interface Run {
  hits: Hit[];
  out: FixtureOutput;
  summary: SessionSummary;
  session: TraceSession;
  fixture: Fixture;
}

/**
 * Copies the fixture to a private path (a uprobe sits on the file's inode: nobody else's runs hit ours), arms
 * `specs`, runs the program, waits until the kernel's count of hits has arrived, stops, and returns everything.
 */
async function traceRun(
  t: TestContext,
  name: FixtureName,
  specs: string[] | ((f: Fixture) => string[]),
  args: string[] = [],
): Promise<Run | undefined> {
  if (!requireTracefs(t)) return undefined;
  const f = await fixtureOrSkip(t, name);
  if (!f) return undefined;
  const dir = mkdtempSync(join(tmpdir(), 'probelens-capture-'));
  const bin = join(dir, f.path.replace(/^.*\//, ''));
  copyFileSync(f.path, bin);
  const { index } = await loadIndex(bin, { noCache: true, debugDirs: f.debugDirs });
  const hits: Hit[] = [];
  const session = await TraceSession.start({
    target: new LocalTarget(),
    index,
    specs: typeof specs === 'function' ? specs(f) : specs,
    onHit: (h) => hits.push(h),
  });
  let out: FixtureOutput;
  let summary: SessionSummary;
  try {
    out = await runFixture({ ...f, path: bin }, args);
    // The stream lags the program: wait (bounded) until hits stop arriving.
    let last = -1;
    for (let i = 0; i < 60 && hits.length !== last; i++) {
      last = hits.length;
      await new Promise((r) => setTimeout(r, 250));
    }
  } finally {
    summary = await session.stop();
  }
  return { hits, out: out!, summary: summary!, session, fixture: { ...f, path: bin } };
}

const key = (printed: string) => printed.replace(/->|\./g, '_');

/** The value as the fixture prints it: decimal numbers, 0x pointers, strings without quotes. */
function printed(v: unknown): string {
  if (typeof v === 'string' && /^0x[0-9a-f]+$/.test(v)) return `0x${BigInt(v).toString(16)}`;
  return String(v);
}

function assertCallsMatch(
  run: Run,
  func: string,
  event = func
    .replace(/[^A-Za-z0-9_]+/g, '_')
    .replace(/^_+|_+$/g, '')
    .replace(/__+/g, '_'),
) {
  const calls = run.out.calls.filter((c) => c.func === func);
  const hits = run.hits.filter((h) => h.probe === event && h.kind === 'entry');
  assert.ok(calls.length > 0, `the program called ${func}`);
  assert.equal(hits.length, calls.length, `${func}: one hit per call (got ${hits.length}, the program made ${calls.length})`);
  calls.forEach((c, i) => {
    assert.equal(hits[i].pid, run.out.pid, 'hit from the fixture process');
    assert.equal(hits[i].comm, run.fixture.path.replace(/^.*\//, '').slice(0, 15), 'named as the process is');
    for (const [k, v] of Object.entries(c.args)) {
      if (!(key(k) in hits[i].args)) continue;
      const want = /^0x/.test(v) ? `0x${BigInt(v).toString(16)}` : v;
      assert.equal(printed(hits[i].args[key(k)]), want, `${func} call ${i}: ${k}`);
    }
  });
  return hits;
}

for (const opt of ['O0', 'O2'] as const) {
  test(`C ${opt}: entry arguments (negative, unsigned, stack-passed, pointers, strings, struct fields) equal what the program printed`, async (t) => {
    const run = await traceRun(
      t,
      `calls-${opt}`,
      [
        'add_ints a b',
        'mix_unsigned u h c',
        'many_args a1 a2 a3 a4 a5 a6 a7 a8',
        'greet name greeting',
        'account_deposit acct acct->id acct->balance acct->owner acct->flags amount',
        'find_account table n id',
        'point_dist2 p.x p.y q.x q.y',
        'static_helper v',
      ],
      ['2'],
    );
    if (!run) return;
    for (const fn of [
      'add_ints',
      'mix_unsigned',
      'many_args',
      'greet',
      'account_deposit',
      'find_account',
      'point_dist2',
      'static_helper',
    ]) {
      const hits = assertCallsMatch(run, fn);
      assert.ok(Object.keys(hits[0].args).length > 0, `${fn} captured arguments`);
    }
    assert.equal(run.summary.lost, 0);
    assert.equal(run.summary.kernelHits.add_ints, run.summary.hits.add_ints, 'every kernel hit arrived');
  });

  test(`C ${opt}: return values, including a function with several RET instructions`, async (t) => {
    const run = await traceRun(t, `calls-${opt}`, [
      'add_ints%return $retval',
      'many_args%return $retval',
      'classify%return $retval',
      'greet%return $retval',
    ]);
    if (!run) return;
    for (const fn of ['add_ints', 'many_args', 'classify', 'greet']) {
      const calls: FixtureOutput['calls'] = run.out.calls.filter((c) => c.func === fn);
      const rets: Hit[] = run.hits.filter((h) => h.probe === `${fn}_return`);
      assert.equal(rets.length, calls.length, `${fn}: one return per call`);
      rets.forEach((h: Hit, i: number) => assert.equal(String(h.retval), calls[i].ret, `${fn} return ${i}`));
    }
  });

  test(`C ${opt}: a source-line probe captures the loop's variables at that line`, async (t) => {
    const run = await traceRun(t, `calls-${opt}`, (f) => {
      const m = markerLine(f, 'sum_squares.step');
      return [`${m.file}:${m.line} i acc`];
    });
    if (!run) return;
    const hits = run.hits.filter((h) => h.kind === 'line');
    assert.equal(hits.length, run.out.steps.length, 'one hit per loop iteration');
    hits.forEach((h, i) => {
      assert.equal(String(h.args.i), run.out.steps[i].vars.i, `iteration ${i}: i`);
      assert.equal(String(h.args.acc), run.out.steps[i].vars.acc, `iteration ${i}: acc`);
    });
  });
}

test('glob: many_* arms 100 functions at once and each reports its argument', async (t) => {
  const run = await traceRun(t, 'many-O2', ['many_* x'], ['2']);
  if (!run) return;
  assert.equal(run.session.probes.length, 100);
  const byProbe = new Map<string, Hit[]>();
  for (const h of run.hits) byProbe.set(h.probe, [...(byProbe.get(h.probe) ?? []), h]);
  assert.equal(byProbe.size, 100, 'every function hit');
  for (const c of run.out.calls) {
    const h = byProbe.get(c.func)?.shift();
    assert.ok(h, `${c.func} hit`);
    assert.equal(String(h.args.x), c.args.x);
  }
});

test('USDT: arguments from the note, and the semaphore is raised while armed', async (t) => {
  const run = await traceRun(t, 'usdt', ['sdt:probelens:tick', 'sdt:probelens:guarded value=arg1 label=arg2:string'], ['3']);
  if (!run) return;
  assert.ok(run.out.semaphores.length > 0 && run.out.semaphores.every((s) => s.enabled), 'the program saw its semaphore enabled');
  const ticks = run.out.usdt.filter((u) => u.probe === 'probelens:tick');
  const tickHits = run.hits.filter((h) => h.probe === 'probelens_tick');
  assert.equal(tickHits.length, ticks.length);
  tickHits.forEach((h, i) => {
    assert.equal(String(h.args.arg1), ticks[i].args.seq);
    assert.equal(String(h.args.arg2), ticks[i].args.delta);
  });
  const guarded = run.out.usdt.filter((u) => u.probe === 'probelens:guarded');
  const gHits = run.hits.filter((h) => h.probe === 'probelens_guarded');
  assert.equal(gHits.length, guarded.length);
  gHits.forEach((h, i) => {
    assert.equal(String(h.args.value), guarded[i].args.value);
    assert.equal(h.args.label, guarded[i].args.label);
  });
});

test('C++: a method and a template instance probed by their demangled names', async (t) => {
  const run = await traceRun(t, 'cpp-O2', [
    'probelens::shapes::Counter::add this->value_ delta',
    'probelens::shapes::twice<int> v',
    'probelens::text::shout word times',
  ]);
  if (!run) return;
  assertCallsMatch(run, 'probelens::shapes::Counter::add', 'probelens_shapes_Counter_add');
  assertCallsMatch(run, 'probelens::shapes::twice<int>', 'probelens_shapes_twice_int');
  assertCallsMatch(run, 'probelens::text::shout', 'probelens_text_shout');
});

test('Go: register arguments, a Go string, a receiver field; returns on every RET; output unchanged; latency paired per goroutine', async (t) => {
  const plain = await fixtureOrSkip(t, 'go');
  if (!plain) return;
  const expected = await runFixture(plain);
  const run = await traceRun(t, 'go', [
    'main.addInts a b',
    'main.greet name times',
    'main.(*Account).Deposit a.ID a.Balance a.Owner amount',
    'main.classify%return $retval',
    'main.work worker value',
    'main.work%return $retval',
  ]);
  if (!run) return;
  assertCallsMatch(run, 'main.addInts', 'main_addInts');
  assertCallsMatch(run, 'main.greet', 'main_greet');
  assertCallsMatch(run, 'main.(*Account).Deposit', 'main_Account_Deposit');
  const classify = run.out.calls.filter((c) => c.func === 'main.classify');
  const rets: Hit[] = run.hits.filter((h) => h.probe.startsWith('main_classify_return'));
  assert.ok(run.session.probes.filter((p) => p.event.startsWith('main_classify_return')).length >= 2, 'a probe on each RET');
  assert.equal(rets.length, classify.length);
  rets.forEach((h: Hit, i: number) => assert.equal(String(h.retval), classify[i].ret));
  // The traced program behaves exactly as the untraced one (no uretprobe: Go would crash on it).
  const strip = (o: FixtureOutput) => o.lines.filter((l) => !/0x[0-9a-f]+|^pid /.test(l)).sort();
  assert.deepEqual(plainData(strip(run.out)), strip(expected));
  const works = run.out.calls.filter((c) => c.func === 'main.work');
  assert.equal(run.summary.latency.main_work?.p50 !== undefined, true, 'latency measured');
  const snap = run.session.aggregates.snapshot();
  // What the editor shows beside the line: the user's arguments only, Go strings as text.
  assert.deepEqual(plainData(Object.keys(snap.last.main_greet.at(-1)?.args ?? {}).sort()), ['name', 'times']);
  assert.equal(snap.last.main_greet.at(-1)?.args.name, 'gopher');
  const lat = snap.latency.main_work;
  assert.equal(lat.count, works.length, "every goroutine's entry paired with its return");
});

test("loss is never silent: with a tiny buffer, received + lost == calls == the kernel's count", async (t) => {
  if (!requireTracefs(t)) return;
  const f = await fixtureOrSkip(t, 'calls-O2');
  if (!f) return;
  const dir = mkdtempSync(join(tmpdir(), 'probelens-loss-'));
  const bin = join(dir, 'calls');
  copyFileSync(f.path, bin);
  const { index } = await loadIndex(bin, { noCache: true });
  const N = 200000;
  let received = 0;
  const session = await TraceSession.start({ target: new LocalTarget(), index, specs: ['tick seq'], bufferKb: 8, onHit: () => received++ });
  let summary: SessionSummary;
  try {
    const out = await runFixture({ ...f, path: bin }, [String(N)]);
    assert.equal(out.counts.get('tick'), N);
  } finally {
    summary = await session.stop();
  }
  assert.equal(summary!.kernelHits.tick, N, 'the kernel counted every call');
  assert.equal(received + summary!.lost, N, `received ${received} + lost ${summary!.lost}`);
  assert.ok(summary!.lost > 0, 'the small buffer did overflow (otherwise this test proves nothing)');
});

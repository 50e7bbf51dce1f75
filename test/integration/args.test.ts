// Arguments at every site of real optimised code, traced through the whole engine on real tracefs and compared
// with what the programs print: constants DWARF gives (DW_AT_const_value, fetched as immediates), inlined
// copies' own parameters, a clone that no longer receives a parameter, and same-name functions whose parameters
// differ (the argument is reported unavailable, with why, in the hits of the site that lacks it).
import { test, type TestContext } from 'node:test';
import assert from 'node:assert/strict';
import { copyFileSync, mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { loadIndex } from '../../src/core/index/load';
import { compileProbes, CompileError } from '../../src/core/probes/compiler';
import { TraceSession } from '../../src/core/session/traceSession';
import { LocalTarget } from '../../src/core/target/local';
import type { Hit } from '../../src/core/tracefs/hitParser';
import { hitToJson } from '../../src/shared/hitJson';
import { formatHitLine } from '../../src/shared/hitText';
import { fixtureOrSkip, runFixture, type FixtureName, type FixtureOutput } from '../helpers/fixtures';
import { requireTracefs } from '../helpers/tracefs';
import { plainData } from '../helpers/plain';

async function traceFixture(
  t: TestContext,
  name: FixtureName,
  specs: string[],
  iterations: number,
): Promise<{ hits: Hit[]; out: FixtureOutput; session: TraceSession } | undefined> {
  if (!requireTracefs(t)) return undefined;
  const f = await fixtureOrSkip(t, name);
  if (!f) return undefined;
  // A private copy: a uprobe sits on the file's inode, so nobody else's runs hit ours.
  const dir = mkdtempSync(join(tmpdir(), `probelens-${name}-`));
  const bin = join(dir, 'bin');
  copyFileSync(f.path, bin);
  const { index } = await loadIndex(bin, { noCache: true });
  const hits: Hit[] = [];
  const session = await TraceSession.start({ target: new LocalTarget(), index, specs, onHit: (h) => hits.push(h) });
  let out: FixtureOutput;
  let lost = 0;
  try {
    out = await runFixture({ ...f, path: bin }, [String(iterations)]);
    for (let i = 0; i < 200 && hits.length < out.total; i++) await new Promise((r) => setTimeout(r, 100));
  } finally {
    lost = (await session.stop()).lost;
  }
  assert.equal(lost, 0, 'no events lost');
  return { hits, out: out!, session };
}

/** "k=v k=v" of the named values, sorted lines: what was passed, as a multiset. */
const sorted = (rows: Array<Record<string, unknown>>, names: string[]) =>
  rows.map((r) => names.map((n) => `${n}=${String(r[n])}`).join(' ')).sort();

test('args (C -O2): constants of inlined copies and clones, a dropped parameter, same-name functions with other parameters', async (t) => {
  const specs = ['scale x k', 'konst x k', 'field_of w', 'same_name v tag'];
  const r = await traceFixture(t, 'args', specs, 6);
  if (!r) return;
  const { hits, out, session } = r;
  const probeOf = new Map(session.probes.map((p) => [p.event, p]));
  const of = (spec: string) => hits.filter((h) => probeOf.get(h.event)?.spec === spec);
  const calls = (fn: string) => out.calls.filter((c) => c.func === fn).map((c) => c.args);
  assert.equal(hits.length, out.total, 'every call seen once');

  // scale: two inlined copies, k is the constant 3 in one and 5 in the other; x is each copy's own register.
  const scale = of('scale x k');
  assert.deepEqual(
    plainData(
      sorted(
        scale.map((h) => h.args),
        ['x', 'k'],
      ),
    ),
    sorted(calls('scale'), ['x', 'k']),
  );
  assert.ok(scale.every((h) => h.site?.kind === 'inlined'));
  assert.deepEqual(
    plainData(new Set(session.probes.filter((p) => p.spec === 'scale x k').map((p) => p.args.find((a) => a.name === 'k')?.fetch))),
    new Set(['\\3', '\\5']),
  );

  // konst: only a .constprop clone exists; its k is DW_AT_const_value 9.
  assert.deepEqual(
    plainData(
      sorted(
        of('konst x k').map((h) => h.args),
        ['x', 'k'],
      ),
    ),
    sorted(calls('konst'), ['x', 'k']),
  );
  assert.ok(of('konst x k').every((h) => h.site?.kind === 'clone'));

  // field_of.isra: w is still passed.
  assert.deepEqual(
    plainData(
      sorted(
        of('field_of w').map((h) => h.args),
        ['w'],
      ),
    ),
    sorted(calls('field_of'), ['w']),
  );

  // same_name: args.c's takes (v, tag), args_other.c's only (v): tag is there at one site, unavailable at the other.
  const same = of('same_name v tag');
  const withTag = same.filter((h) => 'tag' in h.args);
  const without = same.filter((h) => !('tag' in h.args));
  const called = calls('same_name');
  assert.deepEqual(
    plainData(
      sorted(
        withTag.map((h) => h.args),
        ['v', 'tag'],
      ),
    ),
    sorted(
      called.filter((c) => 'tag' in c),
      ['v', 'tag'],
    ),
  );
  assert.deepEqual(
    plainData(
      sorted(
        without.map((h) => h.args),
        ['v'],
      ),
    ),
    sorted(
      called.filter((c) => !('tag' in c)),
      ['v'],
    ),
  );
  assert.ok(without.length > 0);
  for (const h of without) {
    assert.match(
      h.unavailable?.tag ?? '',
      /^same_name \(args_other\.c:5\) entry \(0x[0-9a-f]+\) has no parameter or variable 'tag' \(it has: v\)$/,
    );
    assert.match(hitToJson(h).unavailable?.tag ?? '', /no parameter or variable 'tag'/, 'the JSON hit says so');
    assert.match(formatHitLine(h), / v=[0-9]+ tag=\(unavailable: same_name \(args_other\.c:5\) entry \(0x[0-9a-f]+\) has no parameter/);
  }
  for (const h of withTag) assert.equal(h.unavailable, undefined);
});

test('args (C -O2): a spec is refused only when an argument exists at no site, and says why', async (t) => {
  const f = await fixtureOrSkip(t, 'args');
  if (!f) return;
  const { index } = await loadIndex(f.path, { noCache: true });
  await assert.rejects(
    compileProbes(['field_of p w'], index, {}),
    (e: Error) =>
      e instanceof CompileError &&
      /'p' cannot be fetched at field_of \(args\.c:[0-9]+\) clone \(0x[0-9a-f]+\): this clone does not receive it \(GCC dropped or replaced the parameter/.test(
        e.message,
      ),
  );
  await assert.rejects(compileProbes(['same_name nope'], index, {}), /has no parameter or variable 'nope'/);
  // A kernel without immediate fetch arguments cannot fetch a constant: said, not guessed from a register.
  await assert.rejects(compileProbes(['konst k'], index, { immediates: false }), /the target kernel has no immediate fetch arguments/);
});

test('cpp-args (g++ -O2): a member function inlined with constant columns, a constprop clone of a namespaced static', async (t) => {
  const r = await traceFixture(t, 'cpp-args', ['geo::Grid::cell row col', 'geo::offset base step'], 5);
  if (!r) return;
  const { hits, out, session } = r;
  const probeOf = new Map(session.probes.map((p) => [p.event, p]));
  const of = (spec: string) => hits.filter((h) => probeOf.get(h.event)?.spec === spec);
  const calls = (fn: string) => out.calls.filter((c) => c.func === fn).map((c) => c.args);
  assert.equal(hits.length, out.total);
  const cell = of('geo::Grid::cell row col');
  assert.deepEqual(
    plainData(
      sorted(
        cell.map((h) => h.args),
        ['row', 'col'],
      ),
    ),
    sorted(calls('geo::Grid::cell'), ['row', 'col']),
  );
  assert.ok(cell.every((h) => h.site?.kind === 'inlined'));
  const offset = of('geo::offset base step');
  assert.deepEqual(
    plainData(
      sorted(
        offset.map((h) => h.args),
        ['base', 'step'],
      ),
    ),
    sorted(calls('geo::offset'), ['base', 'step']),
  );
  assert.ok(offset.every((h) => h.site?.kind === 'clone' && h.args.step === 16));
});

test('rust-args (-O): a parameter DWARF gives as the constant 7 is traced as 7, not as the register the ABI would name', async (t) => {
  const r = await traceFixture(t, 'rust-args', ['args::add_pair a b'], 5);
  if (!r) return;
  const { hits, out, session } = r;
  assert.equal(hits.length, out.total);
  assert.deepEqual(plainData(session.probes[0].definition.args.find((a) => a.name === 'b')), { name: 'b', fetch: '\\7', type: 'u64' });
  assert.deepEqual(
    plainData(hits.map((h) => h.args)),
    out.calls.map((c) => ({ a: Number(c.args.a), b: Number(c.args.b) })),
  );
  assert.ok(hits.every((h) => h.args.b === 7));
});

test('go-args: inlined Go copies have no parameter locations; the spec says so instead of guessing, and plain calls are each seen once', async (t) => {
  const f = await fixtureOrSkip(t, 'go-args');
  if (!f) return;
  const { index } = await loadIndex(f.path, { noCache: true });
  // No site has x (Go 1.19 emits no location for an inlined copy's parameters): refused, with why, not guessed.
  await assert.rejects(
    compileProbes(['main.scale x k'], index, {}),
    /'x' cannot be fetched at main\.scale .*inlined into main\.drive[AB] .*\(0x[0-9a-f]+\): optimized out/,
  );
  const r = await traceFixture(t, 'go-args', ['main.scale'], 4);
  if (!r) return;
  const { hits, out } = r;
  assert.equal(hits.length, out.counts.get('main.scale'));
  assert.deepEqual(new Set(hits.map((h) => h.site?.caller)), new Set(['main.driveA', 'main.driveB']));
});

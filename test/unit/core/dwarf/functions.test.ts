import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { FunctionInfo } from '../../../../src/core/dwarf/index';
import type { FixtureName } from '../../../helpers/fixtures';
import { nmFunctions, open, perfShape, perfVars, tool } from './oracle';

const C_VARIANTS: FixtureName[] = [
  'calls-O0',
  'calls-O0-dwarf2',
  'calls-O0-dwarf4',
  'calls-O0-dwarf64',
  'calls-O0-zlib',
  'calls-O0-zstd',
  'calls-O0-zdebug',
  'calls-O2',
  'calls-O2-dwarf2',
  'calls-O2-dwarf4',
  'calls-O2-dwarf64',
  'calls-O2-zlib',
];
const PROBED = [
  'add_ints',
  'mix_unsigned',
  'many_args',
  'sum_array',
  'greet',
  'account_deposit',
  'find_account',
  'point_dist2',
  'rect_area',
  'scale',
  'classify',
  'static_helper',
  'sum_squares',
  'tick',
];

for (const name of [
  ...C_VARIANTS,
  'calls-O2-stripped-buildid' as FixtureName,
  'calls-aarch64-O0' as FixtureName,
  'calls-aarch64-O2' as FixtureName,
]) {
  test(`${name}: every function with code starts where nm puts its symbol`, async (t) => {
    const o = await open(t, name);
    if (!o) return;
    const syms = nmFunctions(t, o.f.debugFile ?? o.f.path);
    if (!syms) return;
    const fns = o.dw.functions();
    for (const p of PROBED) {
      const fn = fns.find((f) => f.name === p);
      assert.ok(fn, `${p} found`);
      assert.equal(fn.probeable, true, `${p} probeable`);
      assert.equal(fn.entryPc, syms.get(p), `${p} entry`);
      assert.ok(fn.file.endsWith('/test/fixtures/src/c/calls.c') && fn.file.startsWith('/'), fn.file);
    }
    let compared = 0;
    for (const fn of fns) {
      if (!fn.probeable || !syms.has(fn.name)) continue;
      assert.equal(fn.entryPc, syms.get(fn.name), fn.name);
      compared++;
    }
    assert.ok(compared >= PROBED.length + 1);
  });
}

test('calls-O2: the inline-only helper is reported as fully inlined, not probeable', async (t) => {
  const o = await open(t, 'calls-O2');
  if (!o) return;
  const clamp = o.dw.functions().filter((f) => f.name === 'clamp_inline');
  assert.equal(clamp.length, 1);
  assert.equal(clamp[0].probeable, false);
  assert.equal(clamp[0].reason, 'fully inlined');
  assert.equal(clamp[0].entryPc, undefined);
  // fx_iterations is a static helper gcc inlined into main, with an inlined_subroutine call site.
  const it = o.dw.functions().find((f) => f.name === 'fx_iterations')!;
  assert.equal(it.probeable, false);
  const inl = o.dw.inlinedInstances(it);
  assert.ok(inl.length >= 1);
  assert.ok(inl.every((i) => i.callLine > 0 && i.callFile.endsWith('calls.c') && i.ranges.length >= 2));
  const syms = nmFunctions(t, o.f.path)!;
  const main = syms.get('main')!;
  assert.ok(
    inl.some((i) => i.entryPc !== undefined && i.entryPc >= main),
    'inlined copy lies in main',
  );
});

for (const name of ['calls-O0', 'calls-O2', 'calls-O0-dwarf2', 'calls-O2-dwarf4', 'calls-O2-dwarf64'] as FixtureName[]) {
  test(`${name}: parameters and their types equal perf probe -V`, async (t) => {
    const o = await open(t, name);
    if (!o) return;
    for (const p of PROBED) {
      const perf = perfVars(t, o.f.path, p);
      if (!perf) return;
      const fn: FunctionInfo = o.dw.functions().find((f) => f.name === p)!;
      const ours: Array<{ type: string; name: string }> = fn.params.map((x) => ({
        type: perfShape(o.dw.typeName(x.typeOffset)),
        name: x.name,
      }));
      // perf lists params and function-level locals it can locate; every param of ours must be there, typed alike.
      for (const q of ours) {
        const hit: { type: string; name: string } | undefined = perf.find((v) => v.name === q.name);
        assert.ok(hit, `${p}: perf lists ${q.name}`);
        assert.equal(q.type, perfShape(hit.type), `${p}(${q.name})`);
      }
      assert.ok(ours.length > 0);
    }
  });
}

test('DWARF 2, 4, 5 and 64-bit DWARF give identical function answers', async (t) => {
  for (const opt of ['O0', 'O2']) {
    const shapes: unknown[][] = [];
    for (const v of ['', '-dwarf2', '-dwarf4', '-dwarf64', '-zlib']) {
      const o = await open(t, `calls-${opt}${v}` as FixtureName);
      if (!o) return;
      const fns = o.dw
        .functions()
        .map((f) => ({
          name: f.name,
          file: f.file,
          line: f.line,
          entry: f.entryPc,
          ranges: f.ranges,
          probeable: f.probeable,
          reason: f.reason,
          // DWARF 2 has no DW_TAG_restrict_type (added in DWARF 3), so restrict cannot survive there.
          params: f.params.map((p) => `${o.dw.typeName(p.typeOffset).replace(' restrict', '')} ${p.name}`),
          inl: o.dw.inlinedInstances(f).map((i) => [i.callLine, i.ranges]),
        }))
        .sort((a, b) => a.name.localeCompare(b.name));
      shapes.push(fns);
    }
    for (let i = 1; i < shapes.length; i++) {
      assert.equal(shapes[i].length, shapes[0].length);
      shapes[0].forEach((f, j) => assert.deepEqual(shapes[i][j], f, `${opt} variant ${i}`));
    }
  }
});

for (const name of ['cpp-O0', 'cpp-O2'] as FixtureName[]) {
  test(`${name}: C++ functions get namespace- and class-qualified names`, async (t) => {
    const o = await open(t, name);
    if (!o) return;
    const names = new Set(o.dw.functions().map((f) => f.name));
    for (const n of [
      'main',
      'probelens::text::shout',
      'probelens::shapes::Counter::add',
      'probelens::shapes::Counter::total',
      'probelens::shapes::twice<int>',
      'probelens::shapes::twice<double>',
    ])
      assert.ok(names.has(n), n);
    const syms = nmFunctions(t, o.f.path)!;
    const add = o.dw.functions().find((f) => f.name === 'probelens::shapes::Counter::add')!;
    assert.equal(add.linkageName, '_ZN9probelens6shapes7Counter3addEi');
    assert.equal(add.entryPc, syms.get(add.linkageName!));
    assert.deepEqual(
      add.params.map((p) => p.name),
      ['this', 'delta'],
    );
    // Parameter types, class types qualified by their namespaces, equal gdb's `whatis FUNC` argument lists.
    const checked = ['probelens::shapes::Counter::add', 'probelens::shapes::Counter::total', 'probelens::text::shout'];
    const out = tool(t, 'gdb', ['-nx', '-batch', ...checked.flatMap((f) => ['-ex', `whatis ${f}`]), o.f.path]);
    if (out === undefined) return;
    const lists = [...out.matchAll(/^type = .*?\((.*)\)$/gm)].map((m) => m[1]);
    assert.equal(lists.length, checked.length, out);
    checked.forEach((n, i) => {
      const fn = o.dw.functions().find((f) => f.name === n)!;
      assert.equal(fn.params.map((p) => o.dw.typeName(p.typeOffset)).join(', '), lists[i], n);
    });
  });
}

for (const name of ['go', 'rust-O0', 'rust-O2'] as FixtureName[]) {
  test(`${name}: parses without error and names its functions`, async (t) => {
    const o = await open(t, name);
    if (!o) return;
    const fns = o.dw.functions();
    const syms = nmFunctions(t, o.f.path)!;
    if (name === 'go') {
      const add = fns.find((f) => f.name === 'main.addInts');
      assert.ok(add?.probeable);
      assert.equal(add.entryPc, syms.get('main.addInts'));
      assert.ok(fns.some((f) => f.name === 'main.(*Account).Deposit'));
    } else {
      const add = fns.find((f) => f.name === 'main::add_ints');
      assert.ok(add?.probeable);
      assert.equal(add.entryPc, syms.get(add.linkageName!));
      assert.deepEqual(
        add.params.map((p) => `${o.dw.typeName(p.typeOffset)} ${p.name}`),
        ['i32 a', 'i32 b'],
      );
      assert.ok(fns.some((f) => f.name === 'main::Account::deposit'));
      // std is built with gc-sections: functions the linker dropped have low_pc 0 and must not be probeable.
      assert.ok(fns.some((f) => f.reason === 'discarded section' && !f.probeable));
    }
    assert.ok(
      fns.every((f) => !f.probeable || f.entryPc! >= 0x1000),
      'no probeable function at a dead address',
    );
    // Every probeable function whose linkage name is a symbol starts exactly at that symbol (Go also describes
    // its assembly ABI0 wrappers under the Go name; nm calls those NAME.abi0).
    let compared = 0;
    for (const f of fns) {
      const key = f.linkageName ?? f.name;
      const sym = f.probeable ? syms.get(key) : undefined;
      if (sym === undefined) continue;
      if (f.entryPc !== sym && name === 'go') assert.equal(f.entryPc, syms.get(`${key}.abi0`), key);
      else assert.equal(f.entryPc, sym, key);
      compared++;
    }
    assert.ok(compared > 100, `${compared} functions compared with nm`);
    assert.ok(o.dw.lineTables().length > 0);
  });
}

import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { IndexedFunction } from '../../../../src/core/index/model';
import { lensesForFunctions, snapGoLine } from '../../../../src/vscode/model/lenses';

function fn(name: string, line: number, probeable = true, reason?: string): IndexedFunction {
  return {
    name,
    file: '/w/a.c',
    line,
    size: 10,
    params: [],
    inlinedInstances: 0,
    sites: probeable ? [{ kind: 'entry', address: BigInt(line * 16), dieOffset: 0, unitOffset: 0 }] : [],
    probeable,
    reason,
    external: true,
    unitOffset: 0,
    dieOffset: 0,
  };
}

const all = { trace: true, returns: true, latency: true, isGo: false };

test('three lenses above each probe-able function with the specs they arm', () => {
  const lenses = lensesForFunctions([fn('add_ints', 40), fn('greet', 60)], all);
  assert.deepEqual(
    lenses.map((l) => [l.line, l.title]),
    [
      [40, 'Trace'],
      [40, 'Trace returns'],
      [40, 'Latency'],
      [60, 'Trace'],
      [60, 'Trace returns'],
      [60, 'Latency'],
    ],
  );
  assert.deepEqual(lenses[0].specs, ['add_ints $params']);
  assert.deepEqual(lenses[1].specs, ['add_ints%return $retval']);
  assert.deepEqual(lenses[2].specs, ['add_ints', 'add_ints%return']);
});

test('a function with only inlined copies traces its returns without $retval, which no inlined exit has', () => {
  const inl: IndexedFunction = {
    ...fn('inl_fn', 30),
    sites: [
      { kind: 'inlined', address: 0x1213n, dieOffset: 1, unitOffset: 0, caller: 'main' },
      { kind: 'inlined', address: 0x1226n, dieOffset: 2, unitOffset: 0, caller: 'main' },
    ],
  };
  const lenses = lensesForFunctions([inl], all);
  assert.deepEqual(
    lenses.map((l) => l.specs),
    [['inl_fn $params'], ['inl_fn%return'], ['inl_fn', 'inl_fn%return']],
  );
});

test('per-lens switches, and @SRC for names the binary has more than once', () => {
  const lenses = lensesForFunctions([fn('helper', 5)], {
    ...all,
    returns: false,
    latency: false,
    ambiguous: (n) => n === 'helper',
    src: 'a.c',
  });
  assert.deepEqual(
    lenses.map((l) => l.specs),
    [['helper@a.c $params']],
  );
});

test('a function that cannot be probed says why; its out-of-line twin wins', () => {
  const lenses = lensesForFunctions([fn('clamp_inline', 37, false, 'fully inlined')], all);
  assert.equal(lenses.length, 1);
  assert.equal(lenses[0].kind, 'unprobeable');
  assert.match(lenses[0].title, /clamp_inline: not probe-able \(fully inlined\)/);
  const twins = lensesForFunctions([fn('f', 3, false, 'fully inlined'), fn('f', 3)], all);
  assert.deepEqual(
    twins.map((l) => l.kind),
    ['trace', 'returns', 'latency'],
  );
});

test('while tracing, the lens shows the live count and state', () => {
  const lenses = lensesForFunctions([fn('add_ints', 40)], all, (specs) =>
    specs[0] === 'add_ints $params'
      ? { state: 'armed', hits: 1204 }
      : specs[0] === 'add_ints'
        ? { state: 'armed', hits: 4, p50Ns: 2100, calls: 2 }
        : undefined,
  );
  assert.deepEqual(
    lenses.map((l) => l.title),
    ['$(pulse) Trace: 1,204 hits · armed', 'Trace returns', '$(watch) Latency: p50 2.1µs · 2 calls · armed'],
  );
});

test('Go lenses sit on the func line above the first statement', () => {
  const text = ['package main', '', '// Add adds', 'func Add(a, b int) int {', '\treturn a + b', '}'];
  const at = (l: number) => text[l - 1];
  assert.equal(snapGoLine(5, at), 4);
  const lenses = lensesForFunctions([fn('main.Add', 5)], { ...all, isGo: true, lineText: at });
  assert.equal(lenses[0].line, 4);
});

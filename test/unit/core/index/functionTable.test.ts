import { test, type TestContext } from 'node:test';
import assert from 'node:assert/strict';
import { deserialize, serialize } from 'node:v8';
import { buildIndex } from '../../../../src/core/index/build';
import { BinaryIndex, globToRegExp } from '../../../../src/core/index/binaryIndex';
import { decodeIndex, encodeIndex, functionTableOf } from '../../../../src/core/index/codec';
import { stringStarts } from '../../../../src/core/index/functionTable';
import type { IndexData, IndexedFunction } from '../../../../src/core/index/model';
import { fixtureOrSkip } from '../../../helpers/fixtures';

const plain = (v: unknown): unknown => JSON.parse(JSON.stringify(v, (_k, x: unknown) => (typeof x === 'bigint' ? `${x}n` : x)));

function fn(name: string, extra: Partial<IndexedFunction> = {}): IndexedFunction {
  return {
    name,
    size: 1,
    params: [],
    inlinedInstances: 0,
    probeable: true,
    external: true,
    unitOffset: -1,
    dieOffset: -1,
    sites: [],
    ...extra,
  };
}

/** An index whose names overlap as byte strings: prefixes, suffixes, alias lists, non-ASCII, first and last strings. */
function overlapping(): IndexData {
  return {
    format: 1,
    path: '/x',
    size: 1,
    mtimeMs: 1,
    arch: 'x86_64',
    elfType: 'DYN',
    symbolsOnly: true,
    functions: [
      fn('f', { file: '/src/a.c', line: 9 }),
      fn('ff', { file: '/src/a.c', line: 3 }),
      fn('xf', { file: '/src/b.c', line: 1 }),
      fn('f\u00e9', { file: '/src/a.c/x.c', line: 2 }),
      fn('g', { linkageName: '_Z1gv', aliases: ['g_alias', 'f2'], file: '/src/a.c', line: 3 }),
      fn('h', { aliases: ['f'], file: '/src/c.c' }),
      fn('f', { file: '/src/b.c', line: 5, params: [{ name: 'ff', type: 'int', location: '%di' }] }),
      fn('last'),
    ],
    files: [],
    lines: { address: new Float64Array(0), line: new Uint32Array(0), file: new Uint32Array(0), flags: new Uint8Array(0) },
    usdt: [],
  } as unknown as IndexData;
}

const cached = (data: IndexData): IndexData => decodeIndex(deserialize(serialize(encodeIndex(data))));

test('string starts: one per NUL-separated string, and one past the end', () => {
  assert.deepEqual([...stringStarts(new TextEncoder().encode('a\0bc\0\0d'))], [0, 2, 5, 6, 8]);
  assert.deepEqual([...stringStarts(new Uint8Array(0))], [0, 1]);
});

test('a cached index answers by name and by file from its columns exactly as from the built functions, building only what it returns', () => {
  const names = ['f', 'ff', 'xf', 'f\u00e9', 'g', '_Z1gv', 'g_alias', 'f2', 'h', 'last', 'g_', 'alias', 'int', '%di', 'nothing', 'fé2'];
  const files = ['/src/a.c', '/src/b.c', '/src/c.c', '/src/a.c/x.c', '/src', 'a.c', '/src/./a.c'];
  const whole = new BinaryIndex(cached(overlapping()));
  void whole.functions();
  for (const name of names) {
    const lazy = new BinaryIndex(cached(overlapping()));
    const got = lazy.function(name);
    assert.deepEqual(plain(got), plain(whole.function(name)), `function(${JSON.stringify(name)})`);
    assert.equal(functionTableOf(lazy.data)!.builtCount, got.length, `${name}: only the functions returned were built`);
  }
  assert.deepEqual(
    new BinaryIndex(cached(overlapping())).function('f').map((f) => f.file),
    ['/src/a.c', '/src/c.c', '/src/b.c'],
    "'f' is a name, an alias and a name again, in index order; 'ff', 'xf', 'fé' and 'f2' are other names",
  );
  for (const file of files) {
    const lazy = new BinaryIndex(cached(overlapping()));
    assert.deepEqual(plain(lazy.functionsInFile(file)), plain(whole.functionsInFile(file)), `functionsInFile(${file})`);
  }
  assert.deepEqual(
    new BinaryIndex(cached(overlapping())).functionsInFile('/src/a.c').map((f) => f.name),
    ['ff', 'g', 'f'],
    'by declaration line; equal lines in index order',
  );
});

test('a cached index answers a glob from its names column as from the built functions, building only the matches', () => {
  const whole = new BinaryIndex(cached(overlapping()));
  void whole.functions();
  for (const glob of ['f*', '*f', '?', 'g', '_Z*', 'f\u00e9', 'nothing*', '*'])
    for (const linkage of [false, true]) {
      const re = globToRegExp(glob);
      const lazy = new BinaryIndex(cached(overlapping()));
      const got = lazy.functionsMatching(re, linkage);
      const expected = whole
        .functions()
        .filter((f) => re.test(f.name) || (linkage && f.linkageName !== undefined && re.test(f.linkageName)));
      assert.deepEqual(plain(got), plain(expected), `${glob}${linkage ? ' (and linkage names)' : ''}`);
      assert.equal(functionTableOf(lazy.data)!.builtCount, got.length, `${glob}: only the matches were built`);
      assert.deepEqual(plain(whole.functionsMatching(re, linkage)), plain(expected), `${glob}: and once every function is built`);
    }
  const lazy = new BinaryIndex(cached(overlapping()));
  assert.deepEqual(
    lazy.functionsMatching(globToRegExp('_Z*'), true).map((f) => f.name),
    ['g'],
    'a linkage name matches only when asked',
  );
  assert.deepEqual(
    lazy.findFunctions('f?').map((f) => f.name),
    ['ff', 'f\u00e9'],
    "a spec's glob goes the same way",
  );
});

test('a function built for a query is the same object the whole list holds later', () => {
  const ix = new BinaryIndex(cached(overlapping()));
  const [g] = ix.function('g');
  const all = ix.functions();
  assert.equal(all[4], g);
  assert.equal(functionTableOf(ix.data)!.builtCount, all.length);
  assert.equal(ix.function('g')[0], g, 'and the name map built over the list hands it out again');
});

/** Each real fixture's index built, and its cache entry: `lazy()` gives a fresh index read from the entry's columns. */
async function realIndexes(t: TestContext): Promise<Array<{ name: string; data: IndexData; built: BinaryIndex; lazy: () => BinaryIndex }>> {
  const out = [];
  for (const name of ['calls-O2', 'cpp-O2', 'go'] as const) {
    const f = await fixtureOrSkip(t, name);
    if (!f) return [];
    const data = await buildIndex(f.path);
    const enc = encodeIndex(data);
    assert.ok(enc);
    out.push({ name, data, built: new BinaryIndex(data), lazy: () => new BinaryIndex(decodeIndex(deserialize(serialize(enc)))) });
  }
  return out;
}

test('on real binaries, every name and every file answers alike from the columns and from the built functions', async (t) => {
  for (const { name, data, built, lazy: fresh } of await realIndexes(t)) {
    const keys = new Set<string>();
    for (const g of data.functions) {
      keys.add(g.name);
      if (g.linkageName) keys.add(g.linkageName);
      for (const a of g.aliases ?? []) keys.add(a);
    }
    for (const key of keys) {
      const lazy = fresh();
      assert.deepEqual(plain(lazy.function(key)), plain(built.function(key)), `${name}: function(${key})`);
    }
    for (const file of new Set(data.functions.map((g) => g.file).filter((x): x is string => !!x))) {
      const lazy = fresh();
      assert.deepEqual(plain(lazy.functionsInFile(file)), plain(built.functionsInFile(file)), `${name}: functionsInFile(${file})`);
    }
  }
});

test('on real binaries, the function at an address and the out-of-line sites answer alike from the columns, building only what is returned', async (t) => {
  for (const { name, data, built, lazy: fresh } of await realIndexes(t)) {
    const lazy = fresh();
    const addresses = new Set<bigint>([0n, 2n ** 63n]);
    for (const g of data.functions)
      if (g.address !== undefined)
        for (const d of [-1, 0, 1, g.size - 1, g.size]) if (g.address + BigInt(d) >= 0n) addresses.add(g.address + BigInt(d));
    const returned = new Set<IndexedFunction>();
    for (const a of addresses) {
      const got = lazy.functionContaining(a);
      const expected = built.functionContaining(a);
      assert.deepEqual(got && plain(got), expected && plain(expected), `${name}: the function at 0x${a.toString(16)}`);
      if (got) returned.add(got);
    }
    assert.equal(functionTableOf(lazy.data)!.builtCount, returned.size, `${name}: only the functions returned were built`);
    const sites = (ix: BinaryIndex) => {
      const out: unknown[] = [];
      ix.forEachOwnSite((site, size) =>
        out.push(plain({ kind: site.kind, address: site.address, dieOffset: site.dieOffset, ranges: site.ranges, size })),
      );
      return out;
    };
    const own = sites(lazy);
    assert.ok(own.length > 0);
    assert.deepEqual(own, sites(built), `${name}: the out-of-line sites`);
    assert.equal(functionTableOf(lazy.data)!.builtCount, returned.size, `${name}: and no function was built for them`);
  }
});

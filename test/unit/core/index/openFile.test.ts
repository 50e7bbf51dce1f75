import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { BinaryIndex } from '../../../../src/core/index/binaryIndex';
import { buildIndex } from '../../../../src/core/index/build';
import { loadIndex } from '../../../../src/core/index/load';
import { fileNameTest } from '../../../../src/core/index/fromDwarf';
import { openBinary } from '../../../../src/core/binary/binaryImage';
import { openDwarf } from '../../../../src/core/dwarf';
import { fixtureOrSkip } from '../../../helpers/fixtures';

const dump = (v: unknown) => JSON.stringify(v, (_k, x: unknown) => (typeof x === 'bigint' ? `${x}n` : x));

test("the index for one open file has exactly that file's functions and lines of the whole index, from its units only", async (t) => {
  const f = await fixtureOrSkip(t, 'sites');
  if (!f) return;
  const whole = new BinaryIndex(await buildIndex(f.path));
  const sources = whole.sourceFiles().filter((s) => s.endsWith('.c'));
  assert.ok(sources.length >= 2, `two C files: ${sources.join(', ')}`);
  for (const file of sources) {
    const data = await buildIndex(f.path, { onlyFile: file });
    assert.equal(data.onlyFile, file);
    const part = new BinaryIndex(data);
    assert.ok(part.functionsInFile(file).length > 0, `${file}: functions`);
    assert.equal(dump(part.functionsInFile(file)), dump(whole.functionsInFile(file)), `${file}: its functions`);
    assert.deepEqual(part.probeableLines(file), whole.probeableLines(file), `${file}: its lines`);
    for (const line of whole.probeableLines(file)) assert.deepEqual(part.addressesForLine(file, line), whole.addressesForLine(file, line));
    // Only the units naming the file are read: the other file's functions are known by their symbols alone.
    const described = (ix: BinaryIndex) => ix.functions().filter((fn) => fn.unitOffset >= 0);
    assert.ok(described(part).length < described(whole).length, `${file}: ${described(part).length} of ${described(whole).length}`);
    assert.ok(described(part).every((fn) => fn.file !== undefined));
    // Every function with an entry is found by name, so a name defined in two files is seen twice.
    for (const fn of whole.functions())
      if (fn.sites.some((s) => s.kind === 'entry'))
        assert.equal(part.function(fn.name).length, whole.function(fn.name).length, `${file}: functions called ${fn.name}`);
  }
});

test("a relative file name (`fs/open.c`, as a kernel's sources are named) picks the units of the file that ends in it", async (t) => {
  const f = await fixtureOrSkip(t, 'sites');
  if (!f) return;
  const whole = new BinaryIndex(await buildIndex(f.path));
  const file = whole.sourceFiles().find((s) => s.endsWith('.c'))!;
  const tail = file.split('/').slice(-2).join('/');
  const part = new BinaryIndex(await buildIndex(f.path, { onlyFile: tail }));
  assert.equal(dump(part.functionsInFile(file)), dump(whole.functionsInFile(file)));
  // Functions of other files are known there from the symbol table only (no source file).
  const described = (ix: BinaryIndex) => ix.functions().filter((fn) => fn.file !== undefined).length;
  assert.ok(described(part) < described(whole));
  const none = new BinaryIndex(await buildIndex(f.path, { onlyFile: `x${tail}` }));
  assert.equal(described(none), 0, 'only at a directory boundary');
});

test('where DIEs refer across units (Go) the index for one file is the whole index', async (t) => {
  const f = await fixtureOrSkip(t, 'go');
  if (!f) return;
  const whole = await buildIndex(f.path);
  const file = whole.functions.find((fn) => fn.name === 'main.main')?.file;
  assert.ok(file);
  const data = await buildIndex(f.path, { onlyFile: file });
  assert.equal(data.onlyFile, undefined);
  assert.equal(data.functions.length, whole.functions.length);
});

test('loading for one open file: cold, the index worker builds only its units and nothing is cached; warm, the cached whole index', async (t) => {
  const f = await fixtureOrSkip(t, 'sites');
  if (!f) return;
  const cacheDir = mkdtempSync(join(tmpdir(), 'probelens-openfile-'));
  try {
    const file = (await buildIndex(f.path)).files.find((s) => s.endsWith('.c'))!;
    const first = await loadIndex(f.path, { inWorker: true, cacheDir, onlyFile: file });
    assert.equal(first.fromCache, false);
    assert.equal(first.index.data.onlyFile, file);
    assert.ok(first.index.functionsInFile(file).length > 0);
    const again = await loadIndex(f.path, { cacheDir, onlyFile: file });
    assert.equal(again.fromCache, false, 'the one-file index was not cached');
    const whole = await loadIndex(f.path, { cacheDir });
    assert.equal(whole.index.data.onlyFile, undefined);
    const warm = await loadIndex(f.path, { cacheDir, onlyFile: file });
    assert.equal(warm.fromCache, true);
    assert.equal(warm.index.data.onlyFile, undefined);
    assert.equal(warm.index.functions().length, whole.index.functions().length);
  } finally {
    rmSync(cacheDir, { recursive: true, force: true });
  }
});

test('the units naming a file are those whose line-table file list names it: every file, its tails, and odd names', async (t) => {
  for (const name of ['sites', 'cpp-O2', 'calls-O0-dwarf4', 'calls-O2-dwarf2', 'many-O2'] as const) {
    const f = await fixtureOrSkip(t, name);
    if (!f) return;
    const dw = openDwarf((await openBinary(f.path)).dwarf(), 'x86_64');
    const files = [...new Set(dw.units().flatMap((u) => dw.unitFiles(u)))];
    const asked = new Set<string>(['', '.', '..', './', 'nothing.c', '/', '//']);
    for (const file of files) {
      const parts = file.split('/');
      for (let i = 0; i < parts.length; i++) asked.add(parts.slice(i).join('/'));
      asked.add(`./${parts.at(-1)}`);
      asked.add(`${file}/`);
      asked.add(`${parts.slice(-2).join('/')}/.`);
    }
    let some = 0;
    for (const file of asked) {
      const test = fileNameTest(file);
      const want = dw.units().filter((u) => dw.unitFiles(u).some(test.accept));
      // A fresh reader: the file lists are not known yet, so the headers are read the cheap way.
      const fresh = openDwarf((await openBinary(f.path)).dwarf(), 'x86_64');
      const got = fresh.unitsNaming(test);
      assert.deepEqual(
        got.map((u) => u.offset),
        want.map((u) => u.offset),
        `${name}: ${JSON.stringify(file)}`,
      );
      if (want.length) some++;
    }
    assert.ok(some > files.length / 2, `${name}: ${some} of ${asked.size} names picked units`);
  }
});

// The index of a real program is the same, dump for dump, whether one thread or a pool builds it: programs with
// hundreds of units, where the shares of functions and line tables really fall in different units. And whether it
// is built cold or from a partly reused unit cache after one source file was edited and the program rebuilt. And
// whether a share's units are walked all at once or a batch at a time.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync, utimesSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { openBinary } from '../../src/core/binary/binaryImage';
import { buildIndex } from '../../src/core/index/build';
import { dwarfSlice, mergeDwarfSlices } from '../../src/core/index/fromDwarf';
import type { UnitReuseStats } from '../../src/core/index/unitReuse';
import { corpusProjectOrSkip, corpusWorkTree, type CorpusName } from '../helpers/corpus';
import { indexDump, partDump } from '../helpers/indexDump';

/** Compares line by line first: a difference then names the function (or table) that differs. */
function sameDump(got: string, want: string, what: string): void {
  const a = want.split('\n');
  const b = got.split('\n');
  for (let i = 0; i < Math.max(a.length, b.length); i++) if (a[i] !== b[i]) assert.equal(b[i], a[i], `${what}: line ${i} of the dump`);
}

const BINARIES: Array<[CorpusName, string]> = [
  ['redis', 'redis-server'],
  ['postgres', 'postgres'],
];

for (const [project, name] of BINARIES) {
  test(`${project} ${name}: the index built by 1 thread and by 3 is the same`, async (t) => {
    const p = await corpusProjectOrSkip(t, project);
    if (!p) return;
    const bin = p.binaries[name];
    const one = indexDump(await buildIndex(bin, { workers: 1 }));
    const three = indexDump(await buildIndex(bin, { workers: 3 }));
    assert.ok(one.split('\n').length > 1000, `${bin}: a real index`);
    sameDump(three, one, '3 threads');
  });
}

for (const [project, name] of BINARIES) {
  test(`${project} ${name}: the units walked 64 KiB at a time, each batch by a reader of its own, give what one walk of them all gives`, async (t) => {
    const p = await corpusProjectOrSkip(t, project);
    if (!p) return;
    const image = await openBinary(p.binaries[name], { readOnDemand: true });
    try {
      const once = partDump(mergeDwarfSlices([dwarfSlice(image, 0, 1, Infinity)]));
      const batched = dwarfSlice(image, 0, 1, 64 * 1024);
      assert.ok(batched.byUnits, 'references stay in units');
      assert.ok(once.split('\n').length > 1000, 'a real index');
      sameDump(partDump(mergeDwarfSlices([batched])), once, '64 KiB batches');
    } finally {
      image.close();
    }
  });
}

test('redis redis-server: after t_string.c is edited and redis rebuilt, the index from the partly reused unit cache is the cold index', async (t) => {
  const p = await corpusProjectOrSkip(t, 'redis');
  if (!p) return;
  const root = mkdtempSync(join(tmpdir(), 'probelens-corpus-reuse-'));
  try {
    const tree = corpusWorkTree(p, join(root, 'redis'));
    const cacheDir = join(root, 'cache');
    const bin = tree.binary('redis-server');
    const file = join(tree.dir, 'src', 't_string.c');
    const original = readFileSync(file, 'utf8');
    const reuse = async (what: string): Promise<UnitReuseStats> => {
      let stats: UnitReuseStats | undefined;
      const data = await buildIndex(bin, { unitCacheDir: cacheDir, onUnitReuse: (s) => (stats = s) });
      sameDump(indexDump(data), indexDump(await buildIndex(bin, { workers: 1 })), what);
      assert.ok(stats, `${what}: the unit cache was used`);
      return stats;
    };
    // Compiled in the copy first, so that the rest of the test changes what an edit changes: the copy's directory
    // is a new string every unit's line table reads.
    const now = new Date();
    utimesSync(file, now, now);
    await tree.rebuild();
    const first = await reuse('first build');
    assert.ok(first.units > 50, `${first.units} units`);
    assert.deepEqual([first.reused, first.indexed], [0, first.units], 'an empty cache: every unit indexed');

    // A line of code added to one function: t_string.c's code grows, and the code of every unit linked after it moves.
    const at = 'void getCommand(client *c) {\n';
    assert.ok(original.includes(at), 'getCommand is where the edit goes');
    writeFileSync(file, original.replace(at, `${at}    serverLog(LL_DEBUG, "getCommand");\n`));
    await tree.rebuild();
    const grown = await reuse('a line of code added');
    assert.ok(grown.reused >= 10 && grown.indexed >= 1, `a line of code added: reused ${grown.reused}, indexed ${grown.indexed}`);
    t.diagnostic(`a line of code added: ${grown.reused} of ${grown.units} units reused (${grown.shifted} moved), ${grown.indexed} indexed`);

    // A comment added instead: only t_string.c's lines move; every other unit is as in the first build.
    writeFileSync(file, `/* edited */\n${original}`);
    await tree.rebuild();
    const comment = await reuse('a comment added');
    assert.deepEqual([comment.reused, comment.indexed], [first.units - 1, 1], 'a comment added: t_string.c alone indexed');
  } finally {
    rmSync(root, { recursive: true, force: true });
  }
});

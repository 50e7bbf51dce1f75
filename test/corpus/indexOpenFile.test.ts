// The index for one open file, on real programs: the functions and lines of that file are those of the whole
// index, though only the units whose line table names the file were read; the lenses drawn from it are those the
// whole index gives; and the editor's order (open files first, then the whole binary) ends with the same index,
// dump for dump, as a whole build by 1 thread or by 4.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { basename, join } from 'node:path';
import { BinaryIndex } from '../../src/core/index/binaryIndex';
import { buildIndex } from '../../src/core/index/build';
import { loadIndex } from '../../src/core/index/load';
import { IndexOrder } from '../../src/vscode/model/indexOrder';
import { lensesForFunctions } from '../../src/vscode/model/lenses';
import { corpusProjectOrSkip, type CorpusName } from '../helpers/corpus';
import { indexDump } from '../helpers/indexDump';

const CASES: Array<[CorpusName, string, string]> = [
  ['redis', 'redis-server', 'src/object.c'],
  ['postgres', 'postgres', 'src/backend/tcop/postgres.c'],
];

const dump = (v: unknown) => JSON.stringify(v, (_k, x: unknown) => (typeof x === 'bigint' ? `${x}n` : x));

/** What the editor draws above `file` from `index` (every lens kind on). */
function lenses(index: BinaryIndex, file: string) {
  return lensesForFunctions(index.functionsInFile(file), {
    trace: true,
    returns: true,
    latency: true,
    isGo: index.isGo,
    ambiguous: (name) => index.function(name).length > 1,
    src: basename(file),
  });
}

for (const [project, name, rel] of CASES) {
  test(`${project} ${name}: the index for ${rel} alone has its functions, lines and lenses as the whole index does`, async (t) => {
    const p = await corpusProjectOrSkip(t, project);
    if (!p) return;
    const bin = p.binaries[name];
    const file = join(p.srcDir, rel);
    const part = await buildIndex(bin, { onlyFile: file });
    assert.equal(part.onlyFile, file, 'references stay in units: only the units naming the file');
    const whole = new BinaryIndex(await buildIndex(bin, { workers: 1 }));
    const one = new BinaryIndex(part);
    // Only those units' DWARF was read: the rest of the binary is its symbol table (functions without a source file).
    const described = (ix: BinaryIndex) => ix.functions().filter((f) => f.file !== undefined).length;
    assert.ok(described(one) < described(whole) / 10, `${described(one)} of ${described(whole)}`);
    assert.ok(whole.functionsInFile(file).length > 20, `${file}: ${whole.functionsInFile(file).length} functions`);
    assert.equal(dump(one.functionsInFile(file)), dump(whole.functionsInFile(file)));
    assert.deepEqual(one.probeableLines(file), whole.probeableLines(file));
    // The lenses drawn before the whole index is ready are the ones drawn after (titles, lines and the specs they arm).
    const early = lenses(one, file);
    assert.ok(early.length > 60, `${early.length} lenses`);
    assert.deepEqual(early, lenses(whole, file));
  });
}

test('redis redis-server: open files first, then the whole binary, ends with the index a whole build gives on 1 thread or 4', async (t) => {
  const p = await corpusProjectOrSkip(t, 'redis');
  if (!p) return;
  const bin = p.binaries['redis-server'];
  const cacheDir = mkdtempSync(join(tmpdir(), 'probelens-open-first-'));
  t.after(() => rmSync(cacheDir, { recursive: true, force: true }));
  const events: string[] = [];
  let whole: Promise<BinaryIndex> | undefined;
  let ready: BinaryIndex | undefined;
  const order: IndexOrder<BinaryIndex> = new IndexOrder<BinaryIndex>({
    ready: () => ready,
    started: () => whole !== undefined,
    whole: () =>
      (whole ??= loadIndex(bin, { cacheDir, workers: 4 }).then(({ index }) => {
        events.push('whole');
        ready = index;
        return index;
      })),
    forFile: async (_b, file) => {
      const { index } = await loadIndex(bin, { cacheDir, onlyFile: file });
      events.push(`file ${basename(file)}${index.data.onlyFile ? '' : ' (whole)'}`);
      return index;
    },
    isWhole: (ix) => ix.data.onlyFile === undefined,
    adopt: (_b, ix) => {
      ready = ix;
    },
  });
  const object = join(p.srcDir, 'src/object.c');
  const first = await order.forFile(bin, object);
  assert.equal(first.data.onlyFile, object, 'the first answer is the open file’s own index');
  assert.equal(order.stage(bin), 'open-file-ready');
  // A second file opened while the whole index builds gets its own units too (or the whole index, if it came first).
  const debug = join(p.srcDir, 'src/debug.c');
  const second = await order.forFile(bin, debug);
  assert.ok(second.functionsInFile(debug).length > 20);
  assert.ok(whole, 'the whole build started behind the first file');
  const completed = await whole;
  assert.equal(order.stage(bin), 'ready');
  assert.equal(await order.forFile(bin, object), completed, 'once ready, the whole index answers every file');
  assert.equal(events[0], 'file object.c', events.join(', '));
  assert.ok(events.includes('whole'), events.join(', '));
  t.diagnostic(events.join(' → '));
  const got = indexDump(completed.data).split('\n');
  for (const workers of [1, 4]) {
    const want = indexDump(await buildIndex(bin, { workers })).split('\n');
    assert.equal(got.length, want.length, `${workers} thread(s): as many dump lines`);
    for (let i = 0; i < want.length; i++)
      if (got[i] !== want[i]) assert.equal(got[i], want[i], `${workers} thread(s): line ${i} of the dump`);
  }
  // The completed index went to the cache: the next load is it.
  const again = await loadIndex(bin, { cacheDir, onlyFile: object });
  assert.ok(again.fromCache && again.index.data.onlyFile === undefined, 'the next open file gets the cached whole index');
  assert.equal(indexDump(again.index.data), indexDump(completed.data));
});

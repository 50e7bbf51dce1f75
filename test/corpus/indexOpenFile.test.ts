// The index for one open file, on real programs: the functions and lines of that file are those of the whole
// index, though only the units whose line table names the file were read.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { BinaryIndex } from '../../src/core/index/binaryIndex';
import { buildIndex } from '../../src/core/index/build';
import { corpusProjectOrSkip, type CorpusName } from '../helpers/corpus';

const CASES: Array<[CorpusName, string, string]> = [
  ['redis', 'redis-server', 'src/object.c'],
  ['postgres', 'postgres', 'src/backend/tcop/postgres.c'],
];

const dump = (v: unknown) => JSON.stringify(v, (_k, x: unknown) => (typeof x === 'bigint' ? `${x}n` : x));

for (const [project, name, rel] of CASES) {
  test(`${project} ${name}: the index for ${rel} alone has its functions and lines as the whole index does`, async (t) => {
    const p = await corpusProjectOrSkip(t, project);
    if (!p) return;
    const bin = p.binaries[name];
    const file = join(p.srcDir, rel);
    const part = await buildIndex(bin, { onlyFile: file });
    assert.equal(part.onlyFile, file, 'references stay in units: only the units naming the file');
    const whole = new BinaryIndex(await buildIndex(bin, { workers: 1 }));
    const one = new BinaryIndex(part);
    assert.ok(one.functions().length < whole.functions().length / 10, `${one.functions().length} of ${whole.functions().length}`);
    assert.ok(whole.functionsInFile(file).length > 20, `${file}: ${whole.functionsInFile(file).length} functions`);
    assert.equal(dump(one.functionsInFile(file)), dump(whole.functionsInFile(file)));
    assert.deepEqual(one.probeableLines(file), whole.probeableLines(file));
  });
}

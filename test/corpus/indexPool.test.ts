// The index of a real program is the same, dump for dump, whether one thread or a pool builds it: programs with
// hundreds of units, where the shares of functions and line tables really fall in different units.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { buildIndex } from '../../src/core/index/build';
import { corpusProjectOrSkip, type CorpusName } from '../helpers/corpus';
import { indexDump } from '../helpers/indexDump';

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
    // Compare line by line first: a difference then names the function (or table) that differs.
    const a = one.split('\n');
    const b = three.split('\n');
    for (let i = 0; i < Math.max(a.length, b.length); i++) if (a[i] !== b[i]) assert.equal(b[i], a[i], `line ${i} of the dump`);
  });
}

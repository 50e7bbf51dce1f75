import { test } from 'node:test';
import assert from 'node:assert/strict';
import { deserialize, serialize } from 'node:v8';
import { buildIndex } from '../../../../src/core/index/build';
import { decodeIndex, encodeIndex } from '../../../../src/core/index/codec';
import { fixtureOrSkip } from '../../../helpers/fixtures';

test('the cache codec round-trips an index exactly (functions, params, sites and their code ranges, lines, USDT, Go facts)', async (t) => {
  for (const name of ['calls-O2', 'usdt', 'go', 'cpp-O2', 'lines'] as const) {
    const f = await fixtureOrSkip(t, name);
    if (!f) return;
    const data = await buildIndex(f.path);
    const enc = encodeIndex(data);
    assert.ok(enc, `${name} encodes`);
    const back = decodeIndex(deserialize(serialize(enc)));
    // Absent and undefined optional fields are the same thing to every reader of the index.
    const plain = (v: unknown) => JSON.parse(JSON.stringify(v, (_k, x) => (typeof x === 'bigint' ? `${x}n` : x)));
    assert.deepEqual(plain(back.functions), plain(data.functions), `${name}: functions`);
    const { functions: _a, ...restBack } = back;
    const { functions: _b, ...restData } = data;
    void _a;
    void _b;
    assert.deepEqual(restBack, restData, `${name}: everything else`);
  }
});

test('an address beyond 2^53 is not squeezed into the columns: the index is then not cached', () => {
  const data = {
    format: 1,
    path: '/x',
    size: 1,
    mtimeMs: 1,
    arch: 'x86_64',
    elfType: 'DYN',
    symbolsOnly: true,
    functions: [
      {
        name: 'f',
        address: 2n ** 60n,
        fileOffset: 0n,
        size: 1,
        params: [],
        inlinedInstances: 0,
        probeable: true,
        external: true,
        unitOffset: -1,
        dieOffset: -1,
      },
    ],
    files: [],
    lines: { address: new Float64Array(0), line: new Uint32Array(0), file: new Uint32Array(0), flags: new Uint8Array(0) },
    usdt: [],
  } as const;
  assert.equal(encodeIndex(structuredClone(data) as never), undefined);
});

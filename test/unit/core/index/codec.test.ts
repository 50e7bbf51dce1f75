import { test } from 'node:test';
import assert from 'node:assert/strict';
import { deserialize, serialize } from 'node:v8';
import { buildIndex } from '../../../../src/core/index/build';
import { decodeIndex, encodeIndex, isEncodedIndex } from '../../../../src/core/index/codec';
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

test("a kernel's addresses (above 2^53) round-trip exactly through the columns", () => {
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
        address: 0xffffffff8134a350n,
        fileOffset: 0x54a350n,
        size: 1,
        params: [],
        inlinedInstances: 0,
        probeable: true,
        external: true,
        unitOffset: -1,
        dieOffset: -1,
        sites: [{ kind: 'entry', address: 0xffffffff8134a351n, fileOffset: 0x54a351n, dieOffset: 5, unitOffset: 0 }],
      },
    ],
    files: [],
    lines: { address: new Float64Array(0), line: new Uint32Array(0), file: new Uint32Array(0), flags: new Uint8Array(0) },
    usdt: [],
  } as const;
  const encoded = encodeIndex(structuredClone(data) as never);
  assert.ok(encoded && isEncodedIndex(encoded), 'cached');
  const back = decodeIndex(encoded).functions[0];
  assert.equal(back.address, 0xffffffff8134a350n);
  assert.equal(back.sites[0].address, 0xffffffff8134a351n);
  assert.equal(back.fileOffset, 0x54a350n);
});

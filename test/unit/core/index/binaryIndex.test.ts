import { test } from 'node:test';
import assert from 'node:assert/strict';
import { BinaryIndex, globToRegExp } from '../../../../src/core/index/binaryIndex';
import { INDEX_FORMAT, LINE_END_SEQUENCE, LINE_IS_STMT, type IndexData, type IndexedFunction } from '../../../../src/core/index/model';

const fn = (
  name: string,
  file: string,
  line: number,
  address: bigint,
  size: number,
  extra: Partial<IndexedFunction> = {},
): IndexedFunction => ({
  name,
  file,
  line,
  address,
  fileOffset: address,
  size,
  params: [],
  inlinedInstances: 0,
  sites: [{ kind: 'entry', address, fileOffset: address, dieOffset: 0, unitOffset: 0 }],
  probeable: true,
  external: true,
  unitOffset: 0,
  dieOffset: 0,
  ...extra,
});

// A small hand-made index: two files, a static function of the same name in each, a Go method name with a star.
const S = LINE_IS_STMT;
const data: IndexData = {
  format: INDEX_FORMAT,
  path: '/bin/x',
  size: 1,
  mtimeMs: 1,
  arch: 'x86_64',
  elfType: 'DYN',
  symbolsOnly: false,
  functions: [
    fn('add', '/p/a.c', 3, 0x1000n, 0x20),
    fn('helper', '/p/a.c', 10, 0x1020n, 0x10, { external: false }),
    fn('helper', '/p/b.c', 4, 0x1040n, 0x10, { external: false }),
    fn('main.(*Account).Deposit', '/p/m.go', 7, 0x2000n, 0x40),
    fn('_ZN2ns3fooEv', '/p/c.cc', 1, 0x3000n, 8, { name: 'ns::foo', linkageName: '_ZN2ns3fooEv' }),
  ],
  files: ['/p/a.c', '/p/b.c', '/p/m.go', '/p/c.cc'],
  lines: {
    address: new Float64Array([0x1000, 0x1004, 0x100c, 0x1010, 0x1018, 0x1020, 0x1030, 0x1040, 0x1050, 0x1050, 0x2000]),
    line: new Uint32Array([3, 4, 5, 4, 6, 10, 11, 4, 5, 7, 8]),
    file: new Uint32Array([0, 0, 0, 0, 0, 0, 0, 1, 1, 2, 2]),
    flags: new Uint8Array([S, S, S, 0, S, S, S | LINE_END_SEQUENCE, S, S | LINE_END_SEQUENCE, S, S]),
  },
  usdt: [],
};

test('names: exact, linkage, @src, and globs that do not break on Go stars', () => {
  const idx = new BinaryIndex(data);
  assert.equal(idx.function('helper').length, 2);
  assert.equal(idx.function('helper', 'b.c')[0].file, '/p/b.c');
  assert.equal(idx.function('_ZN2ns3fooEv')[0].name, 'ns::foo');
  assert.deepEqual(
    idx.findFunctions('main.(*Account).Deposit').map((f) => f.address),
    [0x2000n],
  );
  assert.deepEqual(
    idx.findFunctions('h*').map((f) => f.file),
    ['/p/a.c', '/p/b.c'],
  );
  assert.deepEqual(idx.findFunctions('*.Deposit').length, 1);
  assert.ok(globToRegExp('a.b?').test('a.bc') && !globToRegExp('a.b?').test('axbc'));
});

test('lines: is_stmt addresses only, probeable lines, address to line, function at a line', () => {
  const idx = new BinaryIndex(data);
  assert.deepEqual(idx.addressesForLine('/p/a.c', 4), [0x1004n]);
  assert.deepEqual(idx.probeableLines('/p/a.c'), [3, 4, 5, 6, 10]);
  assert.deepEqual(idx.lineForAddress(0x1012n), { file: '/p/a.c', line: 4 });
  assert.equal(idx.lineForAddress(0x1035n), undefined); // past the end of a sequence
  assert.deepEqual(idx.lineForAddress(0x1050n), { file: '/p/m.go', line: 7 });
  assert.equal(idx.functionAt('/p/a.c', 5)?.name, 'add');
  assert.equal(idx.functionAt('/p/a.c', 12)?.name, 'helper');
  assert.equal(idx.functionContaining(0x101fn)?.name, 'add');
  assert.equal(idx.functionContaining(0x1060n), undefined);
  assert.deepEqual(
    idx.functionsInFile('/p/./a.c').map((f) => f.line),
    [3, 10],
  );
});

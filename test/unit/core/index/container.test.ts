// The cache entry's layout (container.ts): an encoded index round-trips exactly; a load reads the header and the
// first groups only, and the sites and line table when first asked for (damage written into them after the load is
// found then, not before); the descriptor is closed once both are in; entries that are not whole (cut short, another
// magic or codec, a header that lies about its groups) read as absent.
import assert from 'node:assert/strict';
import { closeSync, existsSync, fstatSync, mkdtempSync, openSync, readFileSync, statSync, writeFileSync, writeSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { encodeIndex, type EncodedIndex } from '../../../../src/core/index/codec';
import { CacheDamagedError, encodeContainer, openContainer, releaseContainer } from '../../../../src/core/index/container';
import { INDEX_FORMAT, type IndexData } from '../../../../src/core/index/model';

function sample(): IndexData {
  return {
    format: INDEX_FORMAT,
    path: '/bin/sample',
    size: 1234,
    mtimeMs: 5,
    buildId: 'ab'.repeat(20),
    arch: 'x86_64',
    elfType: 'DYN',
    symbolsOnly: false,
    files: ['a.c', 'b.c'],
    lines: {
      address: Float64Array.from([0x1000, 0x1004, 0x1010]),
      line: Uint32Array.from([3, 4, 9]),
      file: Uint32Array.from([0, 0, 1]),
      flags: Uint8Array.from([1, 1, 3]),
    },
    usdt: [{ provider: 'p', name: 'n', address: 0xffffffff81000000n, fileOffset: 0x200n, args: [] }],
    functions: [
      {
        name: 'main',
        file: 'a.c',
        line: 3,
        address: 0x1000n,
        fileOffset: 0x1000n,
        size: 16,
        inlinedInstances: 1,
        probeable: true,
        external: true,
        unitOffset: 0,
        dieOffset: 11,
        params: [{ name: 'argc', type: 'int', location: '%di' }],
        sites: [
          { kind: 'entry', address: 0x1000n, fileOffset: 0x1000n, dieOffset: 11, unitOffset: 0 },
          {
            kind: 'inlined',
            address: 0xffffffff81000010n,
            dieOffset: 40,
            unitOffset: 0,
            caller: 'g',
            file: 'b.c',
            line: 9,
            ranges: [16, 20],
          },
        ],
      },
    ],
  } as unknown as IndexData;
}

const plain = (v: unknown): unknown =>
  JSON.parse(
    JSON.stringify(v, (_k, x: unknown) => (typeof x === 'bigint' ? `${x}n` : ArrayBuffer.isView(x) ? Array.from(x as Uint8Array) : x)),
  );

function write(e: EncodedIndex): string {
  const file = join(mkdtempSync(join(tmpdir(), 'probelens-container-')), 'entry.idx');
  writeFileSync(file, Buffer.concat(encodeContainer(e)));
  return file;
}

/** Whether descriptor `fd` is open (and is still `file`'s). */
const isOpen = (fd: number, file: string): boolean => {
  try {
    return fstatSync(fd).ino === statSync(file).ino;
  } catch {
    return false;
  }
};

test('an encoded index round-trips exactly through an entry, its sites and lines read when first asked for', () => {
  const e = encodeIndex(sample())!;
  const file = write(e);
  const fd = openSync(file, 'r');
  const back = openContainer(fd, file)!;
  assert.ok(back, 'the entry reads back');
  assert.ok(isOpen(fd, file), 'the descriptor stays open for the groups not read yet');
  // Field by field: a spread would read the lazy groups.
  for (const k of ['codec', 'format', 'strings', 'stringStarts', 'fn', 'param'] as const) assert.deepEqual(plain(back[k]), plain(e[k]), k);
  for (const k of ['path', 'size', 'mtimeMs', 'buildId', 'arch', 'elfType', 'symbolsOnly', 'files', 'usdt'] as const)
    assert.deepEqual(plain(back.meta[k]), plain(e.meta[k]), k);
  assert.ok(isOpen(fd, file), 'nothing read the sites or lines yet');
  assert.deepEqual(plain(back.site), plain(e.site));
  assert.ok(isOpen(fd, file));
  assert.deepEqual(plain(back.meta.lines), plain(e.meta.lines));
  assert.ok(!isOpen(fd, file), 'closed once every group is in');
  assert.equal(back.meta.usdt[0].address, 0xffffffff81000000n, 'bigints in the header stay exact');
});

test('damage in the sites written after the load is found when they are first read: the query fails naming the entry, which is removed', () => {
  const e = encodeIndex(sample())!;
  const file = write(e);
  const back = openContainer(openSync(file, 'r'), file)!;
  assert.ok(back);
  // The site kinds are the site group's first column: overwrite the first kind in place (the same inode).
  const bytes = readFileSync(file);
  const kindAt = bytes.length - groupBytes(e.meta.lines) - groupBytes(e.site);
  const fd = openSync(file, 'r+');
  writeSync(fd, Uint8Array.of(200), 0, 1, kindAt);
  closeSync(fd);
  assert.throws(
    () => back.site,
    (err: Error) => err instanceof CacheDamagedError && err.message.includes(file) && /site columns disagree/.test(err.message),
  );
  assert.ok(!existsSync(file), 'the damaged entry is removed');
});

/** A group's length in bytes (each column 8-aligned). */
function groupBytes(cols: object): number {
  return Object.values(cols as Record<string, Uint8Array>).reduce((n, c) => n + ((c.byteLength + 7) & ~7), 0);
}

test('an entry cut short, of another magic or codec, or whose header places a group past its end reads as absent', () => {
  const e = encodeIndex(sample())!;
  const good = Buffer.concat(encodeContainer(e));
  const cases: Record<string, Buffer> = {
    empty: Buffer.alloc(0),
    'cut in the prefix': good.subarray(0, 10),
    'cut in the header': good.subarray(0, 40),
    'cut in the columns': good.subarray(0, good.length - 8),
    'one byte more': Buffer.concat([good, Buffer.of(0)]),
    'another magic': Buffer.concat([Buffer.from('PLINDEY\0'), good.subarray(8)]),
    'a huge header length': (() => {
      const b = Buffer.from(good);
      b.writeUInt32LE(0xfffffff0, 8);
      return b;
    })(),
    'another codec': Buffer.concat(encodeContainer({ ...e, codec: 4 as never })),
  };
  for (const [what, bytes] of Object.entries(cases)) {
    const file = join(mkdtempSync(join(tmpdir(), 'probelens-container-')), 'entry.idx');
    writeFileSync(file, bytes);
    const fd = openSync(file, 'r');
    assert.equal(openContainer(fd, file), undefined, what);
    assert.ok(!isOpen(fd, file), `${what}: its descriptor is closed`);
  }
});

test('an entry that will not be used is released: its descriptor closes at once, and its lazy groups say so if read', () => {
  const e = encodeIndex(sample())!;
  const file = write(e);
  const fd = openSync(file, 'r');
  const back = openContainer(fd, file)!;
  assert.ok(isOpen(fd, file));
  releaseContainer(back);
  assert.ok(!isOpen(fd, file), 'closed');
  assert.throws(() => back.site, /the entry was closed/);
});

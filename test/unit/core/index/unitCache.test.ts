// The unit cache's files: a value comes back as written; a file damaged in any way (a flipped byte, cut short, another
// key's file renamed over, not ours to trust) is never used and, when merely damaged, removed; writers of one key
// never leave half a file; the directory stays within its bound, the least recently used entries going first.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { chmodSync, existsSync, mkdtempSync, readdirSync, readFileSync, renameSync, rmSync, utimesSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { UnsafeCacheError } from '../../../../src/core/index/cache';
import { evictUnitEntries, prepareUnitCache, readUnitEntry, unitCacheDir, writeUnitEntry } from '../../../../src/core/index/unitCache';

function fresh(): { index: string; dir: string; done: () => void } {
  const root = mkdtempSync(join(tmpdir(), 'probelens-unit-cache-'));
  const index = join(root, 'index');
  assert.ok(prepareUnitCache(index));
  return { index, dir: unitCacheDir(index), done: () => rmSync(root, { recursive: true, force: true }) };
}

const VALUE = { v: 1, big: 12345678901234567890n, rows: new Float64Array([1.5, 2.5]), names: ['a', 'b'] };

test('a unit entry reads back as written, and a missing one reads as absent', () => {
  const c = fresh();
  try {
    assert.ok(writeUnitEntry(c.dir, 'k1', VALUE) > 0);
    assert.deepEqual(readUnitEntry(c.dir, 'k1'), VALUE);
    assert.equal(readUnitEntry(c.dir, 'k2'), undefined);
    assert.deepEqual(readdirSync(c.dir), ['k1.unit'], 'no temp file left');
  } finally {
    c.done();
  }
});

test('a damaged unit entry is ignored and removed: a flipped byte, cut short, emptied, another key renamed over it', () => {
  const c = fresh();
  try {
    const damages: Record<string, (file: string) => void> = {
      'a flipped payload byte': (f) => {
        const b = readFileSync(f);
        b[b.length - 3] ^= 1;
        writeFileSync(f, b);
      },
      'a flipped checksum byte': (f) => {
        const b = readFileSync(f);
        b[10] ^= 1;
        writeFileSync(f, b);
      },
      'cut short': (f) => writeFileSync(f, readFileSync(f).subarray(0, 20)),
      emptied: (f) => writeFileSync(f, Buffer.alloc(0)),
      'another key renamed over it': (f) => {
        writeUnitEntry(c.dir, 'other', { v: 1, other: true });
        renameSync(join(c.dir, 'other.unit'), f);
      },
    };
    for (const [what, damage] of Object.entries(damages)) {
      writeUnitEntry(c.dir, 'key', VALUE);
      const file = join(c.dir, 'key.unit');
      damage(file);
      assert.equal(readUnitEntry(c.dir, 'key'), undefined, `${what}: not used`);
      assert.ok(!existsSync(file), `${what}: removed`);
    }
  } finally {
    c.done();
  }
});

test('a unit entry or directory others could have written is refused, not used', () => {
  const c = fresh();
  try {
    writeUnitEntry(c.dir, 'key', VALUE);
    chmodSync(join(c.dir, 'key.unit'), 0o666);
    assert.throws(() => readUnitEntry(c.dir, 'key'), UnsafeCacheError);
    chmodSync(join(c.dir, 'key.unit'), 0o600);
    chmodSync(c.dir, 0o777);
    assert.throws(() => readUnitEntry(c.dir, 'key'), UnsafeCacheError);
  } finally {
    c.done();
  }
});

test('concurrent writers of one key in other processes leave one whole entry, and a reader meanwhile sees it whole or not at all', async () => {
  const c = fresh();
  try {
    const module = join(__dirname, '../../../../src/core/index/unitCache.ts');
    const script = `const { writeUnitEntry } = require(${JSON.stringify(module)});
      const v = { v: 1, rows: new Float64Array(200000).fill(7) };
      for (let i = 0; i < 30; i++) writeUnitEntry(${JSON.stringify(c.dir)}, 'same', v);`;
    const writers = Array.from(
      { length: 3 },
      () =>
        new Promise<number | null>((resolve, reject) => {
          const p = spawn(process.execPath, ['--import', 'tsx', '-e', script], { stdio: 'inherit' });
          p.on('error', reject);
          p.on('exit', resolve);
        }),
    );
    let running = true;
    void Promise.all(writers).then(() => (running = false));
    let whole = 0;
    while (running) {
      const v = readUnitEntry(c.dir, 'same') as { rows?: Float64Array } | undefined;
      if (v !== undefined) {
        assert.equal(v.rows?.length, 200000);
        whole++;
      }
      await new Promise((r) => setTimeout(r, 2));
    }
    assert.deepEqual(await Promise.all(writers), [0, 0, 0]);
    assert.equal((readUnitEntry(c.dir, 'same') as { rows: Float64Array }).rows[199999], 7);
    assert.deepEqual(readdirSync(c.dir), ['same.unit'], `one entry, no temp file (${whole} reads meanwhile)`);
  } finally {
    c.done();
  }
});

test('past its bound the unit cache drops the least recently used entries, to three quarters of the bound', () => {
  const c = fresh();
  try {
    const payload = { v: 1, bytes: new Uint8Array(10_000) };
    const size = writeUnitEntry(c.dir, 'e0', payload);
    for (let i = 1; i < 10; i++) writeUnitEntry(c.dir, `e${i}`, payload);
    // e0 is the oldest by write, e1 next…; a read makes e0 the most recently used.
    for (let i = 0; i < 10; i++) utimesSync(join(c.dir, `e${i}.unit`), 1000 + i, 1000 + i);
    assert.deepEqual(readUnitEntry(c.dir, 'e0'), payload);
    assert.equal(evictUnitEntries(c.dir, size * 20), 0, 'within the bound: nothing removed');
    const removed = evictUnitEntries(c.dir, size * 8);
    const left = readdirSync(c.dir).sort();
    assert.equal(removed, 10 - left.length);
    assert.ok(left.length * size <= size * 8 * 0.75, `${left.length} entries left`);
    assert.ok(left.includes('e0.unit') && left.includes('e9.unit'), `the recently used stay: ${left.join(' ')}`);
    assert.ok(!left.includes('e1.unit') && !left.includes('e2.unit'), 'the least recently used go');
  } finally {
    c.done();
  }
});

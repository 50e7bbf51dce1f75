import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, writeFileSync, readdirSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { cacheKey, indexCacheDir, readCache, writeCache } from '../../../../src/core/index/cache';

test('cache dir follows XDG_CACHE_HOME, else ~/.cache', () => {
  assert.equal(indexCacheDir({ XDG_CACHE_HOME: '/x/c' }), '/x/c/probelens/index');
  assert.match(indexCacheDir({}), /\/\.cache\/probelens\/index$/);
  assert.match(indexCacheDir({ XDG_CACHE_HOME: 'relative' }), /\/\.cache\/probelens\/index$/);
});

test('keys: build-id wins over file identity; salt separates formats', () => {
  const a = cacheKey({ buildId: 'ab12', path: '/a', size: 1, mtimeMs: 1, salt: 'v1' });
  assert.equal(a, cacheKey({ buildId: 'ab12', path: '/b', size: 2, mtimeMs: 2, salt: 'v1' }));
  assert.notEqual(a, cacheKey({ buildId: 'ab12', path: '/a', size: 1, mtimeMs: 1, salt: 'v2' }));
  const f = cacheKey({ path: '/a', size: 1, mtimeMs: 1, salt: 'v1' });
  assert.notEqual(f, cacheKey({ path: '/a', size: 1, mtimeMs: 2, salt: 'v1' }));
});

test('values round-trip exactly (bigints, typed arrays); corrupt entries read as absent', () => {
  const dir = mkdtempSync(join(tmpdir(), 'probelens-cache-'));
  const value = { version: 1, addr: 0xffffffffffffffffn, rows: new BigUint64Array([1n, 2n ** 63n]) };
  const isV = (v: unknown): v is typeof value => typeof v === 'object' && v !== null && (v as { version?: unknown }).version === 1;
  assert.equal(writeCache('k1', value, dir), true);
  assert.deepEqual(readCache('k1', isV, dir), value);
  assert.equal(
    readCache('k1', (_v): _v is never => false, dir),
    undefined,
  );
  writeFileSync(join(dir, 'k2.v8'), 'garbage');
  assert.equal(readCache('k2', isV, dir), undefined);
  assert.equal(readCache('missing', isV, dir), undefined);
  assert.deepEqual(
    readdirSync(dir).filter((f) => f.endsWith('.tmp')),
    [],
  );
});

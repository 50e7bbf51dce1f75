import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { chmodSync, chownSync, existsSync, mkdirSync, mkdtempSync, readdirSync, statSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { UnsafeCacheError, cacheKey, indexCacheDir, readCache, writeCache } from '../../../../src/core/index/cache';

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

// The index decides where root places probes: a cache someone else can write must never be used.
test('directories are created 0700 and entries 0600 whatever the umask; an older 0755 directory of ours is tightened', () => {
  const base = mkdtempSync(join(tmpdir(), 'probelens-cache-'));
  const dir = join(base, 'probelens', 'index');
  const old = process.umask(0o000);
  try {
    assert.equal(writeCache('k', { v: 1 }, dir), true);
  } finally {
    process.umask(old);
  }
  assert.equal(statSync(join(base, 'probelens')).mode & 0o777, 0o700);
  assert.equal(statSync(dir).mode & 0o777, 0o700);
  assert.equal(statSync(join(dir, 'k.v8')).mode & 0o777, 0o600);
  chmodSync(dir, 0o755);
  chmodSync(join(base, 'probelens'), 0o755);
  assert.deepEqual(
    readCache('k', (_v): _v is { v: number } => true, dir),
    { v: 1 },
  );
  assert.equal(statSync(dir).mode & 0o777, 0o700);
  assert.equal(statSync(join(base, 'probelens')).mode & 0o777, 0o700);
});

test('a cache directory or entry writable by group or others, owned by another user, or a symlink is refused, not used', (t) => {
  const isAny = (_v: unknown): _v is unknown => true;
  const base = mkdtempSync(join(tmpdir(), 'probelens-cache-'));
  const dir = join(base, 'probelens', 'index');
  assert.equal(writeCache('k', { v: 1 }, dir), true);
  const refused = (what: () => unknown, path: string, why: RegExp) =>
    assert.throws(what, (e: Error) => {
      assert.ok(e instanceof UnsafeCacheError, String(e));
      assert.equal(e.path, path);
      assert.match(e.message, why);
      assert.match(e.message, /--no-cache/);
      return true;
    });

  chmodSync(dir, 0o777);
  refused(() => readCache('k', isAny, dir), dir, /writable by group or others \(mode 777\)/);
  refused(() => writeCache('k2', { v: 2 }, dir), dir, /writable by group or others/);
  assert.ok(!existsSync(join(dir, 'k2.v8')), 'nothing written into a refused directory');
  chmodSync(dir, 0o700);

  chmodSync(join(base, 'probelens'), 0o770);
  refused(() => readCache('k', isAny, dir), join(base, 'probelens'), /writable by group or others \(mode 770\)/);
  chmodSync(join(base, 'probelens'), 0o700);

  chmodSync(join(dir, 'k.v8'), 0o666);
  refused(() => readCache('k', isAny, dir), join(dir, 'k.v8'), /entry is writable by group or others/);
  chmodSync(join(dir, 'k.v8'), 0o600);

  const elsewhere = mkdtempSync(join(tmpdir(), 'probelens-cache-'));
  const linked = join(elsewhere, 'probelens', 'index');
  mkdirSync(join(elsewhere, 'probelens'), { mode: 0o700 });
  symlinkSync(dir, linked);
  refused(() => readCache('k', isAny, linked), linked, /symbolic link/);

  if (process.getuid?.() !== 0) return t.diagnostic('ownership refusal needs root to chown: not checked here');
  chownSync(dir, 65534, 65534);
  refused(() => readCache('k', isAny, dir), dir, /owned by uid 65534, not by you \(uid 0\)/);
  chownSync(dir, 0, 0);
  chownSync(join(dir, 'k.v8'), 65534, 65534);
  refused(() => readCache('k', isAny, dir), join(dir, 'k.v8'), /entry is owned by uid 65534/);
  chownSync(join(dir, 'k.v8'), 0, 0);
  assert.deepEqual(readCache('k', isAny, dir), { v: 1 });
});

test('loadIndex and the CLI stop with the refusal, and --no-cache still works', (t) => {
  const base = mkdtempSync(join(tmpdir(), 'probelens-cache-'));
  const dir = join(base, 'probelens', 'index');
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  chmodSync(dir, 0o777);
  const cli = (args: string[]) =>
    spawnSync(process.execPath, ['--import', 'tsx', join(__dirname, '../../../../src/cli/main.ts'), ...args], {
      encoding: 'utf8',
      env: { ...process.env, XDG_CACHE_HOME: base },
    });
  const bin = '/bin/true';
  const r = cli(['functions', bin]);
  t.diagnostic(r.stderr.trim());
  assert.equal(r.status, 1, r.stderr);
  assert.match(r.stderr, new RegExp(`^probelens: refusing the index cache ${dir}: the directory is writable by group or others`));
  assert.deepEqual(readdirSync(dir), [], 'nothing read from or written to it');
  const bypass = cli(['functions', bin, '--no-cache', '--json']);
  assert.equal(bypass.status, 0, bypass.stderr);
  assert.deepEqual(readdirSync(dir), []);
});

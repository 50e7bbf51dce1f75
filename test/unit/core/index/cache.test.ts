import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import {
  chmodSync,
  chownSync,
  closeSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  statSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { UnsafeCacheError, cacheKey, indexCacheDir, openCacheEntry, writeCacheEntry } from '../../../../src/core/index/cache';

/** An entry holding `v` as JSON (the index's own bytes are container.ts's: test/unit/core/index/container.test.ts). */
const writeCache = (key: string, v: unknown, dir: string): boolean =>
  writeCacheEntry(key, [Buffer.from('{'), Buffer.from(JSON.stringify(v).slice(1))], dir);
/** The entry's JSON, or undefined when there is none. */
function readCache(key: string, dir: string): unknown {
  const e = openCacheEntry(key, dir);
  if (!e) return undefined;
  try {
    return JSON.parse(readFileSync(e.fd, 'utf8'));
  } finally {
    closeSync(e.fd);
  }
}

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

test('an entry is written atomically from its pieces and read back whole; a missing entry reads as absent; an earlier release’s entry of the key is removed', () => {
  const dir = mkdtempSync(join(tmpdir(), 'probelens-cache-'));
  const value = { version: 1, rows: [1, 2, 3] };
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  writeFileSync(join(dir, 'k1.v8'), 'an earlier release wrote this');
  assert.equal(writeCache('k1', value, dir), true);
  assert.deepEqual(readCache('k1', dir), value);
  assert.ok(!existsSync(join(dir, 'k1.v8')), 'the v8-serialised entry of the same key is gone');
  assert.equal(writeCache('k1', { version: 2 }, dir), true, 'written over');
  assert.deepEqual(readCache('k1', dir), { version: 2 });
  assert.equal(readCache('missing', dir), undefined);
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
  assert.equal(statSync(join(dir, 'k.idx')).mode & 0o777, 0o600);
  chmodSync(dir, 0o755);
  chmodSync(join(base, 'probelens'), 0o755);
  assert.deepEqual(readCache('k', dir), { v: 1 });
  assert.equal(statSync(dir).mode & 0o777, 0o700);
  assert.equal(statSync(join(base, 'probelens')).mode & 0o777, 0o700);
});

test('a cache directory or entry writable by group or others, owned by another user, or a symlink is refused, not used', (t) => {
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
  refused(() => readCache('k', dir), dir, /writable by group or others \(mode 777\)/);
  refused(() => writeCache('k2', { v: 2 }, dir), dir, /writable by group or others/);
  assert.ok(!existsSync(join(dir, 'k2.idx')), 'nothing written into a refused directory');
  chmodSync(dir, 0o700);

  chmodSync(join(base, 'probelens'), 0o770);
  refused(() => readCache('k', dir), join(base, 'probelens'), /writable by group or others \(mode 770\)/);
  chmodSync(join(base, 'probelens'), 0o700);

  chmodSync(join(dir, 'k.idx'), 0o666);
  refused(() => readCache('k', dir), join(dir, 'k.idx'), /entry is writable by group or others/);
  chmodSync(join(dir, 'k.idx'), 0o600);

  const elsewhere = mkdtempSync(join(tmpdir(), 'probelens-cache-'));
  const linked = join(elsewhere, 'probelens', 'index');
  mkdirSync(join(elsewhere, 'probelens'), { mode: 0o700 });
  symlinkSync(dir, linked);
  refused(() => readCache('k', linked), linked, /symbolic link/);

  if (process.getuid?.() !== 0) return t.diagnostic('ownership refusal needs root to chown: not checked here');
  chownSync(dir, 65534, 65534);
  refused(() => readCache('k', dir), dir, /owned by uid 65534, not by you \(uid 0\)/);
  chownSync(dir, 0, 0);
  chownSync(join(dir, 'k.idx'), 65534, 65534);
  refused(() => readCache('k', dir), join(dir, 'k.idx'), /entry is owned by uid 65534/);
  chownSync(join(dir, 'k.idx'), 0, 0);
  assert.deepEqual(readCache('k', dir), { v: 1 });
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

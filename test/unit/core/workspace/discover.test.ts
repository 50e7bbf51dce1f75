import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { chmodSync, mkdirSync, mkdtempSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { discoverBinaries, discoverWorkspace, globToPathRegExp } from '../../../../src/core/workspace/discover';

function project(): string {
  const root = mkdtempSync(join(tmpdir(), 'probelens-ws-'));
  mkdirSync(join(root, 'src'));
  mkdirSync(join(root, 'build', 'sub'), { recursive: true });
  mkdirSync(join(root, 'node_modules', 'x'), { recursive: true });
  writeFileSync(join(root, 'src', 'a.c'), 'int main(void){return 0;}\n');
  writeFileSync(join(root, 'src', 'l.c'), 'int f(int x){return x+1;}\n');
  execFileSync('gcc', ['-g', '-o', join(root, 'build', 'app'), join(root, 'src', 'a.c')]);
  execFileSync('gcc', ['-g', '-shared', '-fPIC', '-o', join(root, 'build', 'sub', 'libl.so'), join(root, 'src', 'l.c')]);
  execFileSync('gcc', ['-c', '-o', join(root, 'build', 'a.o'), join(root, 'src', 'a.c')]);
  execFileSync('gcc', ['-o', join(root, 'node_modules', 'x', 'hidden'), join(root, 'src', 'a.c')]);
  writeFileSync(join(root, 'build', 'script.sh'), '#!/bin/sh\n');
  chmodSync(join(root, 'build', 'script.sh'), 0o755);
  execFileSync('gcc', ['-o', join(root, 'rootbin'), join(root, 'src', 'a.c')]);
  return root;
}

test('default discovery finds executables and shared libraries, not objects, scripts or dependencies', async () => {
  const root = project();
  const found = await discoverBinaries(root);
  assert.deepEqual(found.map((f) => [f.label, f.kind]).sort(), [
    ['build/app', 'executable'],
    ['build/sub/libl.so', 'shared-library'],
    ['rootbin', 'executable'],
  ]);
});

test('a symbolic link to a binary outside the tree is found, one inside it or to a folder is not; a kernel image needs no execute bit', async () => {
  const root = project();
  const elsewhere = mkdtempSync(join(tmpdir(), 'probelens-ws-'));
  execFileSync('gcc', ['-g', '-o', join(elsewhere, 'vmlinux-6.1.0-test'), join(root, 'src', 'a.c')]);
  chmodSync(join(elsewhere, 'vmlinux-6.1.0-test'), 0o644);
  execFileSync('gcc', ['-g', '-o', join(elsewhere, 'plain'), join(root, 'src', 'a.c')]);
  chmodSync(join(elsewhere, 'plain'), 0o644);
  symlinkSync(join(elsewhere, 'vmlinux-6.1.0-test'), join(root, 'vmlinux'));
  symlinkSync(elsewhere, join(root, 'linked-dir'));
  symlinkSync(join(root, 'missing'), join(root, 'dangling'));
  symlinkSync(join(root, 'build', 'sub', 'libl.so'), join(root, 'build', 'sub', 'libl.so.1'));
  const found = await discoverBinaries(root);
  assert.deepEqual(found.map((f) => f.label).sort(), ['build/app', 'build/sub/libl.so', 'rootbin', 'vmlinux']);
  assert.equal(found.find((f) => f.label === 'vmlinux')?.path, join(root, 'vmlinux'));
  // The setting may name the file itself, outside the tree: alone it is all there is; with globs, beside their finds.
  const named = join(elsewhere, 'vmlinux-6.1.0-test');
  assert.deepEqual(
    (await discoverBinaries(root, [named])).map((f) => [f.path, f.label]),
    [[named, named]],
  );
  assert.deepEqual((await discoverBinaries(root, [named, 'build/app'])).map((f) => f.label).sort(), [named, 'build/app']);
  assert.deepEqual(await discoverBinaries(root, [join(elsewhere, 'nothing')]), []);
});

test("a kernel tree's loadable modules (*.ko, relocatable, no execute bit) are found as modules; other objects and compressed modules are not", async () => {
  const root = project();
  mkdirSync(join(root, 'net', 'key'), { recursive: true });
  writeFileSync(join(root, 'net', 'key', 'af_key.c'), 'int pfkey_create(int p){return p+1;}\n');
  execFileSync('gcc', ['-g', '-c', '-o', join(root, 'net', 'key', 'af_key.o'), join(root, 'net', 'key', 'af_key.c')]);
  execFileSync('ld', ['-r', '-o', join(root, 'net', 'key', 'af_key.ko'), join(root, 'net', 'key', 'af_key.o')]);
  chmodSync(join(root, 'net', 'key', 'af_key.ko'), 0o644);
  execFileSync('xz', ['-k', join(root, 'net', 'key', 'af_key.ko')]);
  // A program misnamed .ko is not a module.
  execFileSync('gcc', ['-o', join(root, 'net', 'prog.ko'), join(root, 'src', 'a.c')]);
  const found = await discoverBinaries(root);
  assert.deepEqual(found.map((f) => [f.label, f.kind]).sort(), [
    ['build/app', 'executable'],
    ['build/sub/libl.so', 'shared-library'],
    ['net/key/af_key.ko', 'kernel-module'],
    ['rootbin', 'executable'],
  ]);
});

test('globs from the setting replace the defaults', async () => {
  const root = project();
  assert.deepEqual(
    (await discoverBinaries(root, ['build/**/*.so'])).map((f) => f.label),
    ['build/sub/libl.so'],
  );
  assert.deepEqual(
    (await discoverBinaries(root, ['build/app'])).map((f) => f.label),
    ['build/app'],
  );
  assert.ok(globToPathRegExp('**/x').test('a/b/x') && globToPathRegExp('**/x').test('x') && !globToPathRegExp('*/x').test('a/b/x'));
});

test('binaries anywhere in the tree: in-tree builds, Cargo target/ without its deps and build scripts, libtool .libs', async () => {
  const root = mkdtempSync(join(tmpdir(), 'probelens-ws-'));
  const c = join(root, 'main.c');
  writeFileSync(c, 'int main(void){return 0;}\n');
  const make = (rel: string, flags: string[] = []) => {
    mkdirSync(join(root, rel, '..'), { recursive: true });
    execFileSync('gcc', ['-g', ...flags, '-o', join(root, rel), c]);
  };
  make('src/deep/er/redis-server');
  make('src/backend/postgres');
  make('target/debug/app');
  make('target/debug/deps/app-0123abcd');
  make('target/debug/build/x-1/build-script-build');
  make('lib/.libs/libz.so.1.2', ['-shared', '-fPIC']);
  make('.git/hooks/bin');
  execFileSync('gcc', ['-g', '-c', '-o', join(root, 'src', 'backend', 'main.o'), c]);
  const found = await discoverWorkspace(root);
  assert.deepEqual(found.binaries.map((f) => f.label).sort(), [
    'lib/.libs/libz.so.1.2',
    'src/backend/postgres',
    'src/deep/er/redis-server',
    'target/debug/app',
  ]);
  assert.equal(found.truncated, undefined);
  assert.ok(found.entries > 8);
});

test('a budget ends the walk early and says which; shallow folders are looked at first', async () => {
  const root = mkdtempSync(join(tmpdir(), 'probelens-ws-'));
  const c = join(root, 'main.c');
  writeFileSync(c, 'int main(void){return 0;}\n');
  execFileSync('gcc', ['-o', join(root, 'top'), c]);
  let deep = root;
  for (let i = 0; i < 5; i++) {
    deep = join(deep, `d${i}`);
    mkdirSync(deep);
    for (let k = 0; k < 20; k++) writeFileSync(join(deep, `f${k}.txt`), '');
  }
  execFileSync('gcc', ['-o', join(deep, 'bottom'), c]);
  const cut = await discoverWorkspace(root, [], { maxEntries: 30, maxMs: 60_000, maxResults: 100 });
  assert.equal(cut.truncated, 'entries');
  assert.deepEqual(
    cut.binaries.map((b) => b.label),
    ['top'],
  );
  const all = await discoverWorkspace(root, [], { maxEntries: 1000, maxMs: 60_000, maxResults: 100 });
  assert.equal(all.truncated, undefined);
  assert.deepEqual(all.binaries.map((b) => b.label).sort(), ['d0/d1/d2/d3/d4/bottom', 'top']);
  assert.equal((await discoverWorkspace(root, [], { maxEntries: 1000, maxMs: 60_000, maxResults: 1 })).truncated, 'results');
});

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { chmodSync, mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { discoverBinaries, globToPathRegExp } from '../../../../src/core/workspace/discover';

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

test('default discovery finds executables and shared libraries in build folders only', async () => {
  const root = project();
  const found = await discoverBinaries(root);
  assert.deepEqual(found.map((f) => [f.label, f.kind]).sort(), [
    ['build/app', 'executable'],
    ['build/sub/libl.so', 'shared-library'],
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

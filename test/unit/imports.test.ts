// Imports point one way: no file and no folder of src/ or webview/ imports itself back through others
// (docs/architecture.md draws the folders; this keeps the drawing a tree of arrows).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { cycles, fileGraph, moduleGraph, moduleOf } from '../helpers/importGraph';

const root = resolve(__dirname, '..', '..');

test('no import cycle between files of src/ and webview/', () => {
  assert.deepEqual(cycles(fileGraph(root, ['src', 'webview'])), []);
});

test('no import cycle between the modules of src/ and webview/ (the folders docs/architecture.md draws)', () => {
  assert.deepEqual(cycles(moduleGraph(fileGraph(root, ['src', 'webview']))), []);
});

test('a module is a folder of src/core, or src/cli, src/vscode, src/shared, webview, with their subfolders', () => {
  assert.equal(moduleOf('src/core/index/worker/pool.ts'), 'src/core/index');
  assert.equal(moduleOf('src/core/probes/compiler.ts'), 'src/core/probes');
  assert.equal(moduleOf('src/cli/commands/trace.ts'), 'src/cli');
  assert.equal(moduleOf('src/vscode/panel/panelFeed.ts'), 'src/vscode');
  assert.equal(moduleOf('webview/stats/histogram.ts'), 'webview');
  assert.equal(moduleOf('src/extension.ts'), 'src');
});

test('the check sees a cycle through type-only imports, re-exports and modules', (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'probelens-imports-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  const a = join(dir, 'src', 'core', 'a');
  const b = join(dir, 'src', 'core', 'b');
  mkdirSync(join(a, 'sub'), { recursive: true });
  mkdirSync(b, { recursive: true });
  writeFileSync(join(a, 'one.ts'), "import type { Two } from '../b/two';\nexport type One = Two;\n");
  writeFileSync(join(b, 'two.ts'), "export type Two = number;\nexport { helper } from '../a/sub/three';\n");
  writeFileSync(join(a, 'sub', 'three.ts'), 'export const helper = 1;\n');
  const files = fileGraph(dir, ['src']);
  assert.deepEqual(cycles(files), []);
  assert.deepEqual(cycles(moduleGraph(files)), [['src/core/a', 'src/core/b']]);
  writeFileSync(join(a, 'sub', 'three.ts'), "import '../../b/two';\nexport const helper = 1;\n");
  assert.deepEqual(cycles(fileGraph(dir, ['src'])), [['src/core/a/sub/three.ts', 'src/core/b/two.ts']]);
});

// Imports point one way: no file and no folder of src/ or webview/ imports itself back through others
// (docs/architecture.md draws the folders; this keeps the drawing a tree of arrows).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { cycles, documentedCoreImports, fileGraph, moduleGraph, moduleOf } from '../helpers/importGraph';

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

test("docs/architecture.md's module table is the real imports: every core folder's row, both ways, and the outer arrows", () => {
  const doc = readFileSync(join(root, 'docs', 'architecture.md'), 'utf8');
  const table = documentedCoreImports(doc);
  const real = moduleGraph(fileGraph(root, ['src', 'webview']));
  const folders = readdirSync(join(root, 'src', 'core'), { withFileTypes: true })
    .filter((d) => d.isDirectory())
    .map((d) => `src/core/${d.name}`);
  const coreOf = (m: string): string[] => [...(real.get(m) ?? [])].filter((d) => d.startsWith('src/core/')).sort();
  for (const m of folders) {
    assert.ok(table.has(m), `${m} has a row in the table`);
    assert.deepEqual(coreOf(m), [...table.get(m)!].sort(), `${m}: the core modules it imports, as its row names them`);
    const outside = [...(real.get(m) ?? [])].filter((d) => !d.startsWith('src/core/') && d !== 'src/shared');
    assert.deepEqual(outside, [], `${m} imports only the core and src/shared`);
  }
  assert.deepEqual(
    [...table.keys()].filter((m) => !folders.includes(m)),
    [],
    'no row for a folder that is gone',
  );
  assert.deepEqual([...(real.get('src/core') ?? [])], [], 'a file directly in src/core imports no module');
  // The arrows between the outer modules: vscode → core, shared; cli → core, shared; webview → shared; shared → none.
  const may = new Map<string, (d: string) => boolean>([
    ['src/vscode', (d) => d === 'src/core' || d.startsWith('src/core/') || d === 'src/shared'],
    ['src/cli', (d) => d === 'src/core' || d.startsWith('src/core/') || d === 'src/shared'],
    ['webview', (d) => d === 'src/shared'],
    ['src/shared', () => false],
  ]);
  for (const [m, ok] of may)
    assert.deepEqual(
      [...(real.get(m) ?? [])].filter((d) => !ok(d)),
      [],
      `${m} imports only what its arrow allows`,
    );
  for (const arrow of ['`vscode → core, shared`', '`cli → core, shared`', '`webview → shared`'])
    assert.ok(doc.includes(arrow), `the document states ${arrow}`);
});

test('the table reader takes rows of several modules, dashes and parenthesised notes', () => {
  const md = [
    '| module | imports |',
    '|---|---|',
    '| `session` (a trace session, `x` in a note) | `probes`, `index` |',
    '| `dwarf`, `unwind` | `binary` |',
    '| `binary`, `ssh` | — |',
    '',
    '| `after` | `table` |',
  ].join('\n');
  const t = documentedCoreImports(md);
  assert.deepEqual(
    [...t].map(([k, v]) => [k, [...v]]),
    [
      ['src/core/session', ['src/core/probes', 'src/core/index']],
      ['src/core/dwarf', ['src/core/binary']],
      ['src/core/unwind', ['src/core/binary']],
      ['src/core/binary', []],
      ['src/core/ssh', []],
    ],
  );
});

// Tests are where a newcomer looks: each module under src/ or webview/ has its unit test at
// test/unit/<its path without the leading src/>.test.ts (src/core/probes/kprobe.ts → test/unit/core/probes/kprobe.test.ts,
// webview/table/layout.ts → test/unit/webview/table/layout.test.ts), or says in its header comment where it is tested:
//   // Tests: test/integration/capture.test.ts, test/e2e/traceLens.test.ts
// (comma-separated paths from the repository root; a line ending with a comma goes on in the next comment line).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';

const root = resolve(__dirname, '..', '..');

function sourceFiles(dir: string): string[] {
  if (!existsSync(dir)) return [];
  const out: string[] = [];
  for (const name of readdirSync(dir).sort()) {
    const p = join(dir, name);
    if (statSync(p).isDirectory()) out.push(...sourceFiles(p));
    else if (name.endsWith('.ts')) out.push(p);
  }
  return out;
}

/** The unit test a module's path asks for: src/a/b.ts → test/unit/a/b.test.ts, webview/a.ts → test/unit/webview/a.test.ts. */
function unitTestPath(module: string): string {
  return join('test', 'unit', module.replace(/^src\//, '').replace(/(\.d)?\.ts$/, '.test.ts'));
}

/** The paths the module's header comment names on its `// Tests:` line (and the lines it continues on), or undefined. */
function testsLine(text: string): string[] | undefined {
  const lines = text.split('\n');
  let paths: string | undefined;
  for (let i = 0; i < lines.length; i++) {
    const l = lines[i].trim();
    if (l !== '' && !l.startsWith('//') && !l.startsWith('/*') && !l.startsWith('*')) break; // the header ends at the first code
    const m = /^\/\/\s*Tests:\s*(.*)$/.exec(l);
    if (!m) continue;
    paths = m[1].trim();
    while (paths.endsWith(',') && i + 1 < lines.length && lines[i + 1].trim().startsWith('//'))
      paths += ' ' + lines[++i].trim().replace(/^\/\/\s*/, '');
    break;
  }
  if (paths === undefined) return undefined;
  return paths
    .split(',')
    .map((p) => p.trim())
    .filter((p) => p !== '');
}

interface Offence {
  module: string;
  why: string;
}

/** Every module under `dirs` of `root` with neither a same-path unit test nor a `// Tests:` line whose every path exists. */
function untestedModules(base: string, dirs: readonly string[], pending: ReadonlySet<string> = new Set()): Offence[] {
  const skipped = (m: string) => [...pending].some((p) => (p.endsWith('/') ? m.startsWith(p) : m === p));
  const out: Offence[] = [];
  for (const dir of dirs) {
    for (const file of sourceFiles(join(base, dir))) {
      const module = file.slice(base.length + 1);
      if (skipped(module)) continue;
      const unit = unitTestPath(module);
      if (!module.endsWith('.d.ts') && existsSync(join(base, unit))) continue;
      const named = testsLine(readFileSync(file, 'utf8'));
      if (named === undefined) {
        out.push({
          module,
          why: module.endsWith('.d.ts') ? 'a declaration file without a // Tests: line' : `no ${unit} and no // Tests: line`,
        });
        continue;
      }
      if (named.length === 0) {
        out.push({ module, why: 'its // Tests: line names no file' });
        continue;
      }
      const bad = named.filter((p) => !/^test\/\S+\.ts$/.test(p) || !existsSync(join(base, p)) || !statSync(join(base, p)).isFile());
      if (bad.length > 0) out.push({ module, why: `its // Tests: line names ${bad.join(', ')}, not a test file of the repository` });
    }
  }
  return out;
}

function explain(offences: Offence[]): string {
  return [
    `${offences.length} module(s) do not say where they are tested:`,
    ...offences.map((o) => `  ${o.module}: ${o.why}`),
    'Write its unit test at test/unit/<its path without src/>.test.ts, or, where it is tested elsewhere (integration, vm,',
    'corpus, e2e, or a unit test named after a feature), add to its header comment a line',
    '  // Tests: test/<path>.test.ts, test/<other>.test.ts',
    'naming test files that exist and exercise it.',
  ].join('\n');
}

test('every module under src/ and webview/ has its unit test at the same path, or names where it is tested', () => {
  const offences = untestedModules(root, ['src', 'webview'], new Set());
  assert.equal(offences.length, 0, explain(offences));
});

test('the check finds a module without a test, a // Tests: line naming a missing file, and accepts the two ways', (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'probelens-layout-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  const put = (p: string, text: string) => {
    mkdirSync(dirname(join(dir, p)), { recursive: true });
    writeFileSync(join(dir, p), text);
  };
  put('src/core/a/tested.ts', '// A module with its unit test.\nexport const a = 1;\n');
  put('test/unit/core/a/tested.test.ts', '');
  put('src/core/a/untested.ts', '// A module nobody tests.\nexport const b = 2;\n');
  put(
    'src/core/a/elsewhere.ts',
    '// Tested by integration.\n// Tests: test/integration/x.test.ts,\n//   test/e2e/y.test.ts\nexport const c = 3;\n',
  );
  put('test/integration/x.test.ts', '');
  put('test/e2e/y.test.ts', '');
  put('src/core/a/gone.ts', '// Tests: test/integration/x.test.ts, test/integration/removed.test.ts\nexport const d = 4;\n');
  put('src/core/a/late.ts', 'export const e = 5;\n// Tests: test/integration/x.test.ts\n');
  put('src/core/a/types.d.ts', '// Tests: test/e2e/y.test.ts\ndeclare const t: number;\n');
  put('webview/table/view.ts', '// A webview module: its test is under test/unit/webview.\nexport const f = 6;\n');
  put('test/unit/webview/table/view.test.ts', '');
  put('webview/table/bare.ts', 'export const g = 7;\n');
  put('src/core/pending/rewritten.ts', 'export const h = 8;\n');

  const offences = untestedModules(dir, ['src', 'webview'], new Set(['src/core/pending/']));
  assert.deepEqual(
    offences.map((o) => o.module),
    ['src/core/a/gone.ts', 'src/core/a/late.ts', 'src/core/a/untested.ts', 'webview/table/bare.ts'],
  );
  const message = explain(offences);
  assert.match(message, /^4 module\(s\) do not say where they are tested:/);
  assert.match(message, /src\/core\/a\/untested\.ts: no test\/unit\/core\/a\/untested\.test\.ts and no \/\/ Tests: line/);
  assert.match(message, /src\/core\/a\/gone\.ts: its \/\/ Tests: line names test\/integration\/removed\.test\.ts/);
  assert.match(message, /webview\/table\/bare\.ts: no test\/unit\/webview\/table\/bare\.test\.ts/);
  assert.match(message, /add to its header comment a line/);
  // Without the pending set, the module being rewritten is checked like the others.
  assert.ok(untestedModules(dir, ['src'], new Set()).some((o) => o.module === 'src/core/pending/rewritten.ts'));
});

test('a module path maps to its unit test path, and a // Tests: line may go on over several comment lines', () => {
  assert.equal(unitTestPath('src/core/probes/kprobe.ts'), 'test/unit/core/probes/kprobe.test.ts');
  assert.equal(unitTestPath('webview/table/hitRing.ts'), 'test/unit/webview/table/hitRing.test.ts');
  assert.equal(unitTestPath('src/extension.ts'), 'test/unit/extension.test.ts');
  assert.deepEqual(testsLine('// Header.\n// Tests: test/a.test.ts, test/b.test.ts,\n//   test/c.test.ts\n// More prose.\nx;\n'), [
    'test/a.test.ts',
    'test/b.test.ts',
    'test/c.test.ts',
  ]);
  assert.equal(testsLine('// Header without one.\nconst x = 1; // Tests: test/a.test.ts\n'), undefined);
});

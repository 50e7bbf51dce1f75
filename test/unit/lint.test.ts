// The layering rule (no `vscode` in src/core) is only worth something if ESLint really applies it to files where
// they live: lint real files under src/core and src/vscode with the repo's own config.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { rmSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { ESLint } from 'eslint';

const root = resolve(__dirname, '..', '..');
const source = `import * as vscode from 'vscode';\n\nexport const probe = vscode.version;\n`;

async function lintProbeFile(dir: string, text = source): Promise<ESLint.LintResult> {
  // Unique per process and dir, so parallel runs and other engineers' files never collide with it.
  const file = join(root, dir, `__lint_probe_${process.pid}.ts`);
  const eslint = new ESLint({ cwd: root, overrideConfigFile: join(root, 'eslint.config.mjs') });
  // Load the config and plugins first: the probe file then exists only for the lint itself, so a developer's
  // `npm run lint` running at the same moment is unlikely to trip over it.
  await eslint.calculateConfigForFile(file);
  writeFileSync(file, text);
  try {
    const [result] = await eslint.lintFiles([file]);
    assert.equal(result.filePath, file);
    return result;
  } finally {
    rmSync(file, { force: true });
  }
}

for (const dir of ['src/core', 'src/shared']) {
  test(`ESLint rejects importing vscode in ${dir}`, async () => {
    const result = await lintProbeFile(dir);
    const restricted = result.messages.filter((m) => m.ruleId === 'no-restricted-imports');
    assert.equal(restricted.length, 1, JSON.stringify(result.messages, null, 2));
    assert.equal(restricted[0].severity, 2, 'the rule must be an error, not a warning');
    assert.equal(restricted[0].line, 1);
    assert.match(restricted[0].message, /must not import vscode/);
  });
}

test('ESLint allows importing vscode in src/vscode', async () => {
  const result = await lintProbeFile('src/vscode');
  assert.deepEqual(result.messages, [], JSON.stringify(result.messages, null, 2));
});

// The type-aware rules need type information (a promise is a promise only to the type checker): they fire only if the
// config really gives ESLint the project, which a wrong tsconfigRootDir or projectService setting silently breaks.
test('ESLint rejects a floating promise and a promise passed where a void callback is expected', async () => {
  const text = [
    'export async function work(): Promise<number> {',
    '  return 1;',
    '}',
    'export function start(): void {',
    '  work();',
    '  setTimeout(async () => { await work(); }, 1);',
    '  [1].forEach(async () => { await work(); });',
    '  if (work()) return;',
    '}',
    '',
  ].join('\n');
  const result = await lintProbeFile('src/core', text);
  const byRule = (id: string) => result.messages.filter((m) => m.ruleId === id).map((m) => m.line);
  assert.deepEqual(byRule('@typescript-eslint/no-floating-promises'), [5], JSON.stringify(result.messages, null, 2));
  assert.deepEqual(byRule('@typescript-eslint/no-misused-promises'), [6, 7, 8], JSON.stringify(result.messages, null, 2));
  assert.ok(result.messages.every((m) => m.severity === 2));
});

test('ESLint rejects the index and the fetch-argument layer importing the probe compiler (the layers point one way)', async () => {
  for (const folder of ['src/core/index', 'src/core/fetchargs']) {
    const result = await lintProbeFile(folder, "import { parseSpec } from '../probes/spec';\n\nexport const p = parseSpec;\n");
    const restricted = result.messages.filter((m) => m.ruleId === 'no-restricted-imports');
    assert.equal(restricted.length, 1, `${folder}: ${JSON.stringify(result.messages, null, 2)}`);
    assert.match(restricted[0].message, /must not import the compiler/);
  }
  // The vscode ban still holds there too (the layer rule extends it, not replaces it).
  const v = await lintProbeFile('src/core/index');
  assert.ok(v.messages.some((m) => m.ruleId === 'no-restricted-imports' && /must not import vscode/.test(m.message)));
});

// Names from outside can be `__proto__` or `constructor`: an object literal used as a map is refused wherever it is
// made, a record from nameRecord() (inheriting nothing) or a Map is not.
test('ESLint rejects an object literal or Object.fromEntries used as a map, and accepts nameRecord() and Maps', async () => {
  const text = [
    "import { nameRecord } from '../shared/names';",
    'export interface Summary { hits: Record<string, number>; lost: number }',
    'export function counts(names: string[]): Summary {',
    '  const byName: Record<string, number> = {};',
    '  for (const n of names) byName[n] = (byName[n] ?? 0) + 1;',
    '  const nested: Record<string, Record<string, number>> = nameRecord();',
    '  (nested.x ??= {}).y = 1;',
    '  const copy = Object.fromEntries(Object.entries(byName));',
    '  void copy;',
    '  const ok: Record<string, number> = nameRecord();',
    '  const table = nameRecord({ a: 1 });',
    '  const m = new Map<string, number>();',
    '  void [ok, table, m, Object.keys(byName ?? {})];',
    '  return { hits: {}, lost: 0 };',
    '}',
    '',
  ].join('\n');
  const result = await lintProbeFile('src/core', text);
  const lines = result.messages.filter((m) => m.ruleId === 'probelens/name-records').map((m) => [m.line, m.severity]);
  assert.deepEqual(
    lines,
    [
      [4, 2],
      [7, 2],
      [8, 2],
      [14, 2],
    ],
    JSON.stringify(result.messages, null, 2),
  );
});

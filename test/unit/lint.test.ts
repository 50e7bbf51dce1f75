// The layering rule (no `vscode` in src/core) is only worth something if ESLint really applies it to files where
// they live: lint real files under src/core and src/vscode with the repo's own config.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { rmSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { ESLint } from 'eslint';

const root = resolve(__dirname, '..', '..');
const source = `import * as vscode from 'vscode';\n\nexport const probe = vscode.version;\n`;

async function lintProbeFile(dir: string): Promise<ESLint.LintResult> {
  // Unique per process and dir, so parallel runs and other engineers' files never collide with it.
  const file = join(root, dir, `__lint_probe_${process.pid}.ts`);
  const eslint = new ESLint({ cwd: root, overrideConfigFile: join(root, 'eslint.config.mjs') });
  // Load the config and plugins first: the probe file then exists only for the lint itself, so a developer's
  // `npm run lint` running at the same moment is unlikely to trip over it.
  await eslint.calculateConfigForFile(file);
  writeFileSync(file, source);
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

// Runs inside VS Code desktop's extension host under @vscode/test-cli (mocha, tdd): `npm run test:vscode` with
// PROBELENS_VSCODE_PATH naming a VS Code executable. Not run in CI here (there is no desktop VS Code); the e2e tier
// covers the same ground in code-server. Imports mocha's functions rather than relying on its globals, so the
// node:test files beside it keep their own `test`.
import * as assert from 'node:assert/strict';
import { suite, test } from 'mocha';
import * as vscode from 'vscode';

const EXTENSION_ID = 'probelens.probelens';

suite('ProbeLens in VS Code desktop', () => {
  test('activates on a C document', async () => {
    const ext = vscode.extensions.getExtension(EXTENSION_ID);
    assert.ok(ext, `${EXTENSION_ID} is not loaded (is extensionDevelopmentPath the repo root?)`);
    const doc = await vscode.workspace.openTextDocument({ language: 'c', content: 'int main(void) { return 0; }\n' });
    await vscode.window.showTextDocument(doc);
    await ext.activate();
    assert.equal(ext.isActive, true);
  });

  test('registers "ProbeLens: Show Version" and runs it', async () => {
    const commands = await vscode.commands.getCommands(true);
    assert.ok(commands.includes('probelens.showVersion'), 'probelens.showVersion is not registered');
    const pkg = vscode.extensions.getExtension(EXTENSION_ID)!.packageJSON as { version: string };
    assert.match(pkg.version, /^\d+\.\d+\.\d+/);
    // The command shows an information message; it must complete without throwing.
    await vscode.commands.executeCommand('probelens.showVersion');
  });
});

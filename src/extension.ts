// The extension's entry points, run by VS Code.
// Tests: test/e2e/showVersion.test.ts, test/e2e/traceLens.test.ts
import type * as vscode from 'vscode';
import { activateFeatures } from './vscode/features';

// activate() composes the features and does nothing else; nothing is indexed until a source editor is visible.
export function activate(context: vscode.ExtensionContext): void {
  activateFeatures(context);
}

export function deactivate(): void {
  // Sessions own their cleanup through the extension's disposables; the target-side agent's heartbeat
  // is the real guarantee that nothing is left behind.
}

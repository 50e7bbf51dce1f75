import * as vscode from 'vscode';
import { showVersionCommand } from './vscode/commands';

// activate() composes the features and does nothing else.
export function activate(context: vscode.ExtensionContext): void {
  context.subscriptions.push(showVersionCommand());
}

export function deactivate(): void {
  // Sessions own their cleanup through the extension's disposables; the target-side agent's heartbeat
  // is the real guarantee that nothing is left behind.
}

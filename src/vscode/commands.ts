import * as vscode from 'vscode';
import { PROBELENS_VERSION } from '../core/version';

// Command ids and their argument types, declared once (vscode-js-debug's habit): a typo is a type error.
export interface CommandArgs {
  'probelens.showVersion': [];
}
export type CommandId = keyof CommandArgs;

export function registerCommand<K extends CommandId>(
  id: K,
  handler: (...args: CommandArgs[K]) => unknown,
): vscode.Disposable {
  return vscode.commands.registerCommand(id, handler as (...args: unknown[]) => unknown);
}

export function showVersionCommand(): vscode.Disposable {
  return registerCommand('probelens.showVersion', () =>
    vscode.window.showInformationMessage(`ProbeLens ${PROBELENS_VERSION}`),
  );
}

// The commands ProbeLens contributes (package.json), and the arguments lenses and menus hand them.
// Tests: test/e2e/showVersion.test.ts, test/e2e/probeSet.test.ts
import * as vscode from 'vscode';
import { PROBELENS_VERSION } from '../core/version';

/** What a lens or a command hands to probelens.addProbes. */
export interface AddProbesArgs {
  binary: string;
  specs: string[];
  /** local source position, for revealing the probe */
  file?: string;
  line?: number;
}

/** A node of the probes view, as the tree hands it to inline actions. */
export interface ProbeNodeArg {
  kind: 'probe';
  binaryKey: string;
  spec: string;
}
export interface TargetNodeArg {
  kind: 'target';
  targetId: string;
}
/** A binary on a target in the Probes view. */
export interface SessionNodeArg {
  kind: 'session';
  targetId: string;
  binaryKey: string;
}

// Command ids and their argument types, declared once (vscode-js-debug's habit): a typo is a type error.
export interface CommandArgs {
  'probelens.showVersion': [];
  'probelens.selectBinary': [];
  'probelens.addProbes': [AddProbesArgs];
  'probelens.explainUnprobeable': [string, string];
  'probelens.traceFunction': [];
  'probelens.traceLine': [];
  'probelens.traceWithArguments': [];
  'probelens.startTracing': [];
  'probelens.stopTracing': [];
  'probelens.addSshTarget': [];
  'probelens.selectTargets': [];
  'probelens.removeTarget': [TargetNodeArg];
  'probelens.cleanUpTarget': [TargetNodeArg?];
  /** From the Probes view (a binary on a target), or the palette (no argument). */
  'probelens.chooseProcess': [SessionNodeArg?];
  'probelens.enableProbe': [ProbeNodeArg];
  'probelens.disableProbe': [ProbeNodeArg];
  'probelens.removeProbe': [ProbeNodeArg];
  /** From the Probes view (its node), or the palette (no argument: a probe is picked). */
  'probelens.aggregateProbe': [ProbeNodeArg?];
  'probelens.streamProbe': [ProbeNodeArg?];
  'probelens.revealProbe': [ProbeNodeArg];
  'probelens.openLivePanel': [];
  'probelens.showOutput': [];
}
export type CommandId = keyof CommandArgs;

export function registerCommand<K extends CommandId>(id: K, handler: (...args: CommandArgs[K]) => unknown): vscode.Disposable {
  return vscode.commands.registerCommand(id, handler as (...args: unknown[]) => unknown);
}

/** A vscode.Command whose id and arguments are checked against CommandArgs. */
export function command<K extends CommandId>(id: K, title: string, ...args: CommandArgs[K]): vscode.Command {
  return { command: id, title, arguments: args };
}

export function showVersionCommand(): vscode.Disposable {
  return registerCommand('probelens.showVersion', () => vscode.window.showInformationMessage(`ProbeLens ${PROBELENS_VERSION}`));
}

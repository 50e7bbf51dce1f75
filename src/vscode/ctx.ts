// The extension's context (rust-analyzer's Ctx): one disposal scope for the extension's lifetime and one for
// the current tracing run (its SSH connections, its sessions' listeners), which Stop disposes and Start renews.
// Tests: test/e2e/traceLine.test.ts, test/e2e/sshTarget.test.ts
import * as vscode from 'vscode';
import { Config } from './config';

export class Scope implements vscode.Disposable {
  private items: Array<vscode.Disposable | (() => unknown)> = [];
  private disposed = false;

  add<T extends vscode.Disposable | (() => unknown)>(d: T): T {
    if (this.disposed) {
      if (typeof d === 'function') void d();
      else d.dispose();
    } else this.items.push(d);
    return d;
  }

  dispose(): void {
    this.disposed = true;
    for (const d of this.items.splice(0).reverse()) {
      try {
        if (typeof d === 'function') void d();
        else d.dispose();
      } catch {
        // one failing disposer must not keep the rest alive
      }
    }
  }
}

export class Ctx implements vscode.Disposable {
  readonly config = new Config();
  readonly output: vscode.OutputChannel;
  private session = new Scope();

  constructor(readonly extension: vscode.ExtensionContext) {
    this.output = vscode.window.createOutputChannel('ProbeLens');
    extension.subscriptions.push(this.output, this);
  }

  /** Disposed with the extension. */
  push<T extends vscode.Disposable>(d: T): T {
    this.extension.subscriptions.push(d);
    return d;
  }

  /** The current tracing run's scope. */
  get sessionScope(): Scope {
    return this.session;
  }

  /** Ends the current run's scope and opens a fresh one. */
  renewSessionScope(): Scope {
    this.session.dispose();
    this.session = new Scope();
    return this.session;
  }

  log(line: string): void {
    this.output.appendLine(`[${new Date().toISOString().slice(11, 23)}] ${line}`);
  }

  get workspaceFolder(): string | undefined {
    return vscode.workspace.workspaceFolders?.[0]?.uri.fsPath;
  }

  dispose(): void {
    this.session.dispose();
  }
}

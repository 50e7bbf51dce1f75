// Notices a build writing a program or shared library anywhere in the workspace: file events are collected
// for a moment (a build writes thousands of objects; a link writes one file in several goes), then each path
// is checked for an ELF program or library header (20 bytes read); relocatable objects and everything else
// are ignored.
// Tests: test/e2e/traceLine.test.ts
import * as vscode from 'vscode';
import { elfType } from '../core/workspace/discover';

const SETTLE_MS = 1_000;
const MAX_PENDING = 5_000;
const ET_EXEC = 2,
  ET_DYN = 3;
// Extensions a build writes in bulk that are never a program or library: not worth opening.
const NOT_BINARY = /\.(o|obj|a|lo|la|d|c|cc|cpp|h|hpp|rs|go|s|S|txt|json|md|log|tmp|mk|in|am|cmake|ninja|py|sh|pc|map|po|mo|dep)$/i;

export class BinaryWatcher implements vscode.Disposable {
  private readonly watcher: vscode.FileSystemWatcher;
  private readonly pending = new Set<string>();
  private timer: NodeJS.Timeout | undefined;

  constructor(
    private readonly isKnown: (path: string) => boolean,
    private readonly onBinaries: (paths: string[]) => void,
  ) {
    this.watcher = vscode.workspace.createFileSystemWatcher('**/*', false, false, true);
    this.watcher.onDidCreate((u) => this.queue(u));
    this.watcher.onDidChange((u) => this.queue(u));
  }

  private queue(uri: vscode.Uri): void {
    if (uri.scheme !== 'file' || NOT_BINARY.test(uri.fsPath) || /\/(\.git|node_modules)\//.test(uri.fsPath)) return;
    if (this.pending.size < MAX_PENDING) this.pending.add(uri.fsPath);
    if (this.timer) clearTimeout(this.timer);
    this.timer = setTimeout(() => this.flush(), SETTLE_MS);
  }

  private flush(): void {
    this.timer = undefined;
    const paths = [...this.pending];
    this.pending.clear();
    const binaries = paths.filter((p) => {
      const t = elfType(p);
      return t === ET_EXEC || t === ET_DYN;
    });
    if (binaries.length > 0 || paths.some((p) => this.isKnown(p))) this.onBinaries(binaries.length ? binaries : paths.filter(this.isKnown));
  }

  dispose(): void {
    if (this.timer) clearTimeout(this.timer);
    this.watcher.dispose();
  }
}

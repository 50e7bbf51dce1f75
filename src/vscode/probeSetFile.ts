// The probe set's file, `.vscode/probelens.json`: read at wake-up, written on every change the editor makes, and
// watched for hand edits (or a `git checkout`), whose new set is handed to the tracing to apply in place. A file
// that does not parse changes nothing and says why; the watcher's echo of our own save is not a hand edit.
// Tests: test/e2e/probeSet.test.ts, test/e2e/liveEdit.test.ts
import * as vscode from 'vscode';
import type { Ctx } from './ctx';
import { emptyProbeSet, parseProbeSet, serializeProbeSet, type ProbeSet } from './model/probeSet';

export class ProbeSetFile {
  /** The file's text as we last wrote it: the watcher's echo of our own save is not a hand edit. */
  private lastWritten: string | undefined;
  /** Saves and reloads of the file, one at a time (a reload then sees the file as our last save left it). */
  private queue: Promise<unknown> = Promise.resolve();

  /** `onEdit`: the file changed on disk to a set that parses (called one at a time, in order). */
  constructor(
    private readonly ctx: Ctx,
    onEdit: (next: ProbeSet, file: string) => Promise<void>,
  ) {
    const folder = vscode.workspace.workspaceFolders?.[0];
    if (!folder) return;
    const w = ctx.push(vscode.workspace.createFileSystemWatcher(new vscode.RelativePattern(folder, '.vscode/probelens.json')));
    const reload = () =>
      void this.serial(async () => {
        const next = await this.reloadFromDisk();
        if (next) await onEdit(next, this.uri!.fsPath);
      });
    ctx.push(w.onDidChange(reload));
    ctx.push(w.onDidCreate(reload));
    ctx.push(w.onDidDelete(reload));
  }

  private get uri(): vscode.Uri | undefined {
    const f = vscode.workspace.workspaceFolders?.[0];
    return f && vscode.Uri.joinPath(f.uri, '.vscode', 'probelens.json');
  }

  /** The set the file holds now (undefined: no workspace, no file, or an error already shown). */
  async load(): Promise<ProbeSet | undefined> {
    const uri = this.uri;
    if (!uri) return undefined;
    try {
      const bytes = await vscode.workspace.fs.readFile(uri);
      return parseProbeSet(Buffer.from(bytes).toString('utf8'), uri.fsPath);
    } catch (e) {
      if (!(e instanceof vscode.FileSystemError)) void vscode.window.showErrorMessage(`ProbeLens: ${(e as Error).message}`);
      return undefined;
    }
  }

  save(set: ProbeSet): Promise<void> {
    const text = serializeProbeSet(set);
    return this.serial(async () => {
      const uri = this.uri;
      if (!uri) return;
      this.lastWritten = text;
      await vscode.workspace.fs.createDirectory(vscode.Uri.joinPath(uri, '..'));
      await vscode.workspace.fs.writeFile(uri, Buffer.from(text, 'utf8'));
    });
  }

  private serial<T>(f: () => Promise<T>): Promise<T> {
    const r = this.queue.then(f);
    this.queue = r.catch(() => undefined);
    return r;
  }

  /** The file's new set after a change on disk; undefined when it is our own save or does not parse (said). */
  private async reloadFromDisk(): Promise<ProbeSet | undefined> {
    const uri = this.uri;
    if (!uri) return undefined;
    let text = '';
    try {
      text = Buffer.from(await vscode.workspace.fs.readFile(uri)).toString('utf8');
    } catch (e) {
      if (!(e instanceof vscode.FileSystemError)) throw e;
      // Deleted: no probes (an empty text parses to the empty set below).
    }
    if (text === this.lastWritten) return undefined;
    let next: ProbeSet;
    try {
      next = text.trim() ? parseProbeSet(text, uri.fsPath) : emptyProbeSet();
    } catch (e) {
      this.ctx.log(`${(e as Error).message}; the probes stay as they were`);
      void vscode.window.showErrorMessage(`ProbeLens: ${(e as Error).message}; the probes stay as they were.`);
      return undefined;
    }
    this.lastWritten = text;
    return next;
  }
}

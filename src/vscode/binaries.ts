// The workspace's binaries: found by the user's globs or by discovery, one optionally pinned per workspace,
// indexed in the background (a notification the first time), re-indexed when the file changes. A source
// file belongs to the binary whose DWARF declares functions in it (after `probelens.pathMappings`).
import { basename, dirname } from 'node:path';
import * as vscode from 'vscode';
import type { BinaryIndex } from '../core/index/binaryIndex';
import { loadIndex } from '../core/index/load';
import { IndexLimitError } from '../core/worker/limits';
import { discoverBinaries, isElfFile, type FoundBinary } from '../core/workspace/discover';
import type { Ctx } from './ctx';
import { localToBuild } from './model/pathMapping';

const PINNED_KEY = 'probelens.pinnedBinary';
// Indexing is the expensive part; a workspace with dozens of binaries gets its newest few looked at.
const MAX_AUTO_INDEX = 6;

export interface SourceBinary {
  binary: string;
  index: BinaryIndex;
  /** the document's path as the binary's DWARF names it */
  buildFile: string;
}

export class Binaries implements vscode.Disposable {
  private readonly indexes = new Map<string, Promise<BinaryIndex>>();
  private readonly ready = new Map<string, BinaryIndex>();
  private readonly watchers = new Map<string, vscode.Disposable>();
  /** Builds that failed, shown to the user once: not retried on every lens refresh until the file or a limit changes. */
  private readonly failed = new Map<string, unknown>();
  private candidatesCache?: Promise<FoundBinary[]>;
  private discoveredAt = 0;
  private firstIndexShown = false;
  private readonly changed = new vscode.EventEmitter<{ binary: string; rebuilt: boolean }>();
  /** An index was built or rebuilt (`rebuilt`: the file changed under it). */
  readonly onDidChangeIndex = this.changed.event;

  constructor(private readonly ctx: Ctx) {
    ctx.push(
      vscode.workspace.onDidChangeConfiguration((e) => {
        if (e.affectsConfiguration('probelens.binaries')) this.candidatesCache = undefined;
        if (e.affectsConfiguration('probelens.index') || e.affectsConfiguration('probelens.debugDirs')) {
          this.failed.clear();
          this.changed.fire({ binary: '', rebuilt: false });
        }
        if (e.affectsConfiguration('probelens.binaries') || e.affectsConfiguration('probelens.pathMappings'))
          this.changed.fire({ binary: '', rebuilt: false });
      }),
    );
  }

  get pinned(): string | undefined {
    return this.ctx.extension.workspaceState.get<string>(PINNED_KEY);
  }

  async pin(path: string | undefined): Promise<void> {
    await this.ctx.extension.workspaceState.update(PINNED_KEY, path);
    this.changed.fire({ binary: path ?? '', rebuilt: false });
  }

  /** Binaries of the workspace, newest first; the pinned one first of all. */
  candidates(): Promise<FoundBinary[]> {
    this.candidatesCache ??= (async () => {
      this.discoveredAt = Date.now();
      const globs = this.ctx.config.binaries;
      const found: FoundBinary[] = [];
      for (const f of vscode.workspace.workspaceFolders ?? []) {
        if (f.uri.scheme !== 'file') continue;
        found.push(...(await discoverBinaries(f.uri.fsPath, globs)));
      }
      this.ctx.log(
        `binaries: ${found.length ? found.map((b) => b.label).join(', ') : 'none found'}${globs.length ? ` (probelens.binaries: ${globs.join(', ')})` : ' (discovered)'}`,
      );
      return found;
    })();
    return this.candidatesCache;
  }

  /** Forget the discovery result (a build may have produced new binaries). */
  rediscover(): void {
    this.candidatesCache = undefined;
  }

  /** The index of `path` if it is built already (never starts a build). */
  cached(path: string): BinaryIndex | undefined {
    return this.ready.get(path);
  }

  index(path: string): Promise<BinaryIndex> {
    if (this.failed.has(path)) return Promise.reject(this.failed.get(path));
    let p = this.indexes.get(path);
    if (!p) {
      p = this.build(path);
      this.indexes.set(path, p);
      p.then(
        (ix) => this.ready.set(path, ix),
        (e: unknown) => {
          this.indexes.delete(path);
          this.failed.set(path, e);
        },
      );
      this.watch(path);
    }
    return p;
  }

  private async build(path: string): Promise<BinaryIndex> {
    const run = async (progress?: vscode.Progress<{ message?: string }>) => {
      const t0 = Date.now();
      const { index, fromCache } = await loadIndex(path, {
        inWorker: true,
        limits: this.ctx.config.indexLimits,
        debugDirs: this.ctx.config.debugDirs,
        onProgress: (message) => progress?.report({ message }),
      });
      this.ctx.log(
        `indexed ${path}${fromCache ? ' (from cache)' : ''} in ${Date.now() - t0} ms: ${index.functions().length} functions, build-id ${index.buildId ?? 'none'}`,
      );
      return index;
    };
    const first = !this.firstIndexShown;
    this.firstIndexShown = true;
    const ix = await vscode.window
      .withProgress(
        {
          location: first ? vscode.ProgressLocation.Notification : vscode.ProgressLocation.Window,
          title: `ProbeLens: indexing ${basename(path)}`,
        },
        (progress) => run(progress),
      )
      .then(undefined, (e: unknown) => {
        this.ctx.log(`indexing ${path} failed: ${(e as Error).message}`);
        // The worker kept the editor responsive; the user still has to learn why this binary has no lenses.
        const open = e instanceof IndexLimitError ? 'Open Setting' : undefined;
        void vscode.window.showErrorMessage(`ProbeLens: ${(e as Error).message}`, ...(open ? [open] : [])).then((pick) => {
          if (pick && e instanceof IndexLimitError) void vscode.commands.executeCommand('workbench.action.openSettings', e.setting);
        });
        throw e;
      });
    this.changed.fire({ binary: path, rebuilt: false });
    return ix;
  }

  private watch(path: string): void {
    if (this.watchers.has(path)) return;
    const w = vscode.workspace.createFileSystemWatcher(new vscode.RelativePattern(vscode.Uri.file(dirname(path)), basename(path)));
    let timer: NodeJS.Timeout | undefined;
    // A link step writes the file in several goes; index once it has settled.
    const onChange = () => {
      if (timer) clearTimeout(timer);
      timer = setTimeout(() => void this.reindex(path), 750);
    };
    const subs = [w, w.onDidChange(onChange), w.onDidCreate(onChange), { dispose: () => timer && clearTimeout(timer) }];
    this.watchers.set(path, vscode.Disposable.from(...subs));
  }

  private async reindex(path: string): Promise<void> {
    if (!isElfFile(path)) return;
    this.indexes.delete(path);
    this.ready.delete(path);
    this.failed.delete(path);
    try {
      await this.index(path);
      // Even an identical rebuild is a new file (linkers unlink and recreate): uprobes stay on the old inode.
      this.changed.fire({ binary: path, rebuilt: true });
    } catch {
      // logged by build()
    }
  }

  /** The binary whose DWARF mentions `localFile`: the pinned one if it does, else the first candidate that does. */
  async forSource(localFile: string): Promise<SourceBinary | undefined> {
    const buildFile = localToBuild(localFile, this.ctx.config.pathMappings, this.ctx.workspaceFolder);
    const order: string[] = [];
    if (this.pinned) order.push(this.pinned);
    for (const c of (await this.candidates()).slice(0, MAX_AUTO_INDEX)) if (!order.includes(c.path)) order.push(c.path);
    for (const binary of order) {
      let index: BinaryIndex;
      try {
        index = await this.index(binary);
      } catch {
        continue;
      }
      if (index.functionsInFile(buildFile).length > 0 || index.sourceFiles().includes(buildFile)) return { binary, index, buildFile };
    }
    // Nothing built from this file yet: look again later (the user may be about to build), not on every keystroke.
    if (Date.now() - this.discoveredAt > 10_000) this.candidatesCache = undefined;
    return undefined;
  }

  /** "ProbeLens: Select Binary": pick one of the discovered binaries (or browse) and pin it for this workspace. */
  async select(): Promise<string | undefined> {
    this.rediscover();
    const found = await this.candidates();
    type Item = vscode.QuickPickItem & { path?: string; action?: 'browse' | 'unpin' };
    const items: Item[] = found.map((b) => ({
      label: b.label,
      description: b.kind === 'shared-library' ? 'shared library' : 'executable',
      path: b.path,
      detail: b.path === this.pinned ? '$(pinned) pinned for this workspace' : undefined,
    }));
    items.push({ label: '$(folder-opened) Browse…', action: 'browse' });
    if (this.pinned) items.push({ label: '$(pinned-dirty) Unpin (choose by source file again)', action: 'unpin' });
    const pick = await vscode.window.showQuickPick(items, {
      title: 'ProbeLens: binary to trace',
      placeHolder: found.length
        ? 'Pick the binary built from this workspace'
        : 'No ELF binaries found: browse for one, or set probelens.binaries',
    });
    if (!pick) return undefined;
    if (pick.action === 'unpin') {
      await this.pin(undefined);
      return undefined;
    }
    let path = pick.path;
    if (pick.action === 'browse') {
      const uris = await vscode.window.showOpenDialog({ canSelectMany: false, openLabel: 'Trace this binary' });
      path = uris?.[0]?.fsPath;
      if (path && !isElfFile(path)) {
        void vscode.window.showErrorMessage(`ProbeLens: ${path} is not an ELF file; pick the compiled program or shared library.`);
        return undefined;
      }
    }
    if (!path) return undefined;
    await this.pin(path);
    void this.index(path);
    return path;
  }

  dispose(): void {
    for (const w of this.watchers.values()) w.dispose();
    this.changed.dispose();
  }
}

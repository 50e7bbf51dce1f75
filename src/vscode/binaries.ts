// The workspace's binaries: found by the user's globs or by discovery anywhere in the tree, one optionally
// pinned per workspace, indexed in the background (a notification the first time), re-indexed when the file
// changes. A source file belongs to the build whose DWARF names it (after `probelens.pathMappings`): a cheap
// scan of every candidate's unit names and line-table files decides which one is indexed, so a tree with
// dozens of binaries indexes only the one the open file is in. What was decided for each file is published
// (onDidResolve) so the status bar can say "no binary built from object.c" instead of staying silent.
// A binary not in the cache is indexed first for the open file (its own units, in the worker), whose lenses
// are drawn from that, while the whole index builds behind it (model/indexOrder.ts); what needs the rest of the
// binary (arming, the editor's trace commands) waits for the whole index.
// Tests: test/e2e/binaryDiscovery.test.ts, test/e2e/indexLimit.test.ts, test/e2e/openFileFirst.test.ts
import { stat } from 'node:fs/promises';
import { basename, dirname } from 'node:path';
import * as vscode from 'vscode';
import type { BinaryIndex } from '../core/index/binaryIndex';
import { readBinaryIdentity } from '../core/index/identity';
import { loadIndex } from '../core/index/load';
import { IndexLimitError } from '../core/index/worker/limits';
import { chooseBinaries, groupBuilds, type Build } from '../core/workspace/choose';
import { discoverWorkspace, elfType, isElfFile, workspaceLabel, type FoundBinary } from '../core/workspace/discover';
import { ScanCache, type BinaryScan } from '../core/workspace/scan';
import type { Ctx } from './ctx';
import { IndexOrder, type IndexStage } from './model/indexOrder';
import { localToBuild } from './model/pathMapping';
import { BinaryWatcher } from './binaryWatcher';

const PINNED_KEY = 'probelens.pinnedBinary';

export interface SourceBinary {
  binary: string;
  index: BinaryIndex;
  /** the document's path as the binary's DWARF names it */
  buildFile: string;
  /** `index` is the whole binary's; else only the units naming buildFile (the whole index is still building) */
  whole: boolean;
}

/** What is known about the binary of one source file (its local path). */
export type Resolution =
  | { state: 'searching'; file: string }
  | { state: 'found'; file: string; binary: string; label: string; pinned: boolean; others: string[] }
  | { state: 'none'; file: string; candidates: number; unreadable: Array<{ label: string; reason: string }> };

export class Binaries implements vscode.Disposable {
  private readonly indexes = new Map<string, Promise<BinaryIndex>>();
  private readonly ready = new Map<string, BinaryIndex>();
  private readonly watchers = new Map<string, vscode.Disposable>();
  /** Builds that failed, shown to the user once: not retried on every lens refresh until the file or a limit changes. */
  private readonly failed = new Map<string, unknown>();
  private readonly scanCache = new ScanCache(() => ({ debugDirs: this.ctx.config.debugDirs }));
  private readonly resolved = new Map<string, Promise<SourceBinary | undefined>>();
  private readonly resolutions = new Map<string, Resolution>();
  private candidatesCache?: Promise<FoundBinary[]>;
  private firstIndexShown = false;
  private readonly order = new IndexOrder<BinaryIndex>({
    ready: (path) => this.ready.get(path),
    started: (path) => this.indexes.has(path) || this.failed.has(path),
    whole: (path) => this.index(path),
    forFile: (path, file) => this.loadForFile(path, file),
    isWhole: (ix) => ix.data.onlyFile === undefined,
    adopt: (path, ix) => {
      this.indexes.set(path, Promise.resolve(ix));
      this.ready.set(path, ix);
      this.watch(path);
      this.order.drop(path);
    },
    loaded: (path) => this.changed.fire({ binary: path, rebuilt: false }),
    // Drawing the open file's lenses comes first; a window without lenses does not wait.
    waitForUseMs: () => (this.ctx.config.codeLensEnabled ? 10_000 : undefined),
  });
  private readonly changed = new vscode.EventEmitter<{ binary: string; rebuilt: boolean }>();
  private readonly resolvedEvent = new vscode.EventEmitter<Resolution>();
  /** An index was built or rebuilt (`rebuilt`: the file changed under it), or the set of binaries changed. */
  readonly onDidChangeIndex = this.changed.event;
  /** What is known about a source file's binary changed. */
  readonly onDidResolve = this.resolvedEvent.event;

  constructor(private readonly ctx: Ctx) {
    ctx.push(
      vscode.workspace.onDidChangeConfiguration((e) => {
        if (e.affectsConfiguration('probelens.binaries') || e.affectsConfiguration('probelens.debugDirs')) this.rediscover();
        if (e.affectsConfiguration('probelens.index') || e.affectsConfiguration('probelens.debugDirs')) {
          this.failed.clear();
          this.changed.fire({ binary: '', rebuilt: false });
        }
        if (e.affectsConfiguration('probelens.binaries') || e.affectsConfiguration('probelens.pathMappings')) {
          this.resolved.clear();
          this.changed.fire({ binary: '', rebuilt: false });
        }
      }),
    );
    // A build that writes a new binary (or relinks one not yet indexed) changes which file maps where.
    ctx.push(
      new BinaryWatcher(
        (path) => this.isKnown(path),
        (paths) => {
          ctx.log(`binaries changed on disk: ${paths.map((p) => basename(p)).join(', ')}: looking again`);
          this.rediscover();
          this.changed.fire({ binary: '', rebuilt: false });
        },
      ),
    );
  }

  get pinned(): string | undefined {
    return this.ctx.extension.workspaceState.get<string>(PINNED_KEY);
  }

  async pin(path: string | undefined): Promise<void> {
    await this.ctx.extension.workspaceState.update(PINNED_KEY, path);
    this.resolved.clear();
    this.changed.fire({ binary: path ?? '', rebuilt: false });
  }

  /** The last known resolution of a local source file. */
  resolution(localFile: string): Resolution | undefined {
    return this.resolutions.get(localFile);
  }

  /** Binaries of the workspace, newest first. */
  candidates(): Promise<FoundBinary[]> {
    this.candidatesCache ??= (async () => {
      const globs = this.ctx.config.binaries;
      const found: FoundBinary[] = [];
      for (const f of vscode.workspace.workspaceFolders ?? []) {
        if (f.uri.scheme !== 'file') continue;
        const d = await discoverWorkspace(f.uri.fsPath, globs);
        found.push(...d.binaries);
        this.ctx.log(
          `binaries in ${f.uri.fsPath}: ${d.binaries.length} found in ${d.elapsedMs} ms (${d.entries} entries looked at${d.truncated ? `; stopped early: the ${d.truncated} budget ran out, set probelens.binaries to look in the right place` : ''})${globs.length ? `, probelens.binaries: ${globs.join(', ')}` : ''}`,
        );
      }
      return found;
    })();
    return this.candidatesCache;
  }

  /** Forget the discovery result (a build may have produced new binaries). */
  rediscover(): void {
    this.candidatesCache = undefined;
    this.resolved.clear();
  }

  private known = new Set<string>();
  private isKnown(path: string): boolean {
    return this.known.has(path);
  }

  /** Every candidate scanned (cached until its file changes); the editor stays responsive between files. */
  private async scans(): Promise<BinaryScan[]> {
    const cands = await this.candidates();
    this.known = new Set(cands.map((c) => c.path));
    const t0 = Date.now();
    const out: BinaryScan[] = [];
    // Copies of one build (same build-id, read from the first page of the file) are scanned once.
    const byId = new Map<string, BinaryScan>();
    for (const c of cands) {
      const id = (() => {
        try {
          return readBinaryIdentity(c.path);
        } catch {
          return undefined;
        }
      })();
      const same = id?.buildId ? byId.get(id.buildId) : undefined;
      const st = same && (await stat(c.path).catch(() => undefined));
      if (same && st) {
        out.push({ ...same, path: c.path, size: st.size, mtimeMs: st.mtimeMs, dev: st.dev, ino: st.ino });
        continue;
      }
      const s = await this.scanCache.get(c.path).catch(() => undefined);
      if (s) out.push(s);
      if (s?.buildId) byId.set(s.buildId, s);
      await new Promise((r) => setImmediate(r));
    }
    const ms = Date.now() - t0;
    if (ms > 200) this.ctx.log(`scanned the source files of ${out.length} binaries in ${ms} ms`);
    return out;
  }

  /** The kernel images (`vmlinux*`) among the workspace's binaries, with their build-ids (no index is built). */
  async kernelImages(): Promise<Array<{ path: string; buildId?: string }>> {
    const out: Array<{ path: string; buildId?: string }> = [];
    for (const c of await this.candidates()) {
      if (!/^vmlinux/.test(basename(c.path))) continue;
      const s = await this.scanCache.get(c.path).catch(() => undefined);
      out.push({ path: c.path, ...(s?.buildId ? { buildId: s.buildId } : {}) });
    }
    return out;
  }

  /** The index of `path` if it is built already (never starts a build). */
  cached(path: string): BinaryIndex | undefined {
    return this.ready.get(path);
  }

  /** Where the binary's index stands: `open-file-ready` while lenses come from the open file's own units. */
  stage(path: string): IndexStage | 'failed' {
    return this.failed.has(path) ? 'failed' : this.order.stage(path);
  }

  /** The lenses of an open file were computed from its own units: the whole index of `path` may start. */
  lensesComputed(path: string): void {
    this.order.use(path);
  }

  /** The whole index of `path`, built if needed. */
  index(path: string): Promise<BinaryIndex> {
    if (this.failed.has(path)) return Promise.reject(this.failed.get(path));
    let p = this.indexes.get(path);
    if (!p) {
      p = this.build(path);
      this.indexes.set(path, p);
      p.then(
        (ix) => {
          this.ready.set(path, ix);
          this.order.drop(path);
          this.changed.fire({ binary: path, rebuilt: false });
        },
        (e: unknown) => {
          this.indexes.delete(path);
          this.failed.set(path, e);
          this.changed.fire({ binary: path, rebuilt: false });
        },
      );
      this.watch(path);
    }
    return p;
  }

  /**
   * The index for one source file: the cached whole index when there is one, else only the units naming
   * `buildFile` (never cached). Its failure is not shown: the whole build, which follows, reports its own.
   */
  private async loadForFile(path: string, buildFile: string): Promise<BinaryIndex> {
    const t0 = Date.now();
    this.ctx.log(`loading the index of ${path} for the open file ${basename(buildFile)}`);
    try {
      const { index, fromCache } = await loadIndex(path, {
        inWorker: true,
        limits: this.ctx.config.indexLimits,
        debugDirs: this.ctx.config.debugDirs,
        debuginfodUrls: this.ctx.config.debuginfodUrls,
        onlyFile: buildFile,
      });
      const part = index.data.onlyFile !== undefined;
      this.ctx.log(
        part
          ? `indexed ${path} for the open file ${basename(buildFile)} (its own units; the whole binary follows) in ${Date.now() - t0} ms: ${index.functionsInFile(buildFile).length} functions in ${basename(buildFile)}`
          : `indexed ${path}${fromCache ? ' (from cache)' : ''} in ${Date.now() - t0} ms: ${index.functions().length} functions, build-id ${index.buildId ?? 'none'}`,
      );
      return index;
    } catch (e) {
      this.ctx.log(
        `indexing ${path} for the open file ${basename(buildFile)} failed: ${(e as Error).message}; waiting for the whole index`,
      );
      throw e;
    }
  }

  private async build(path: string): Promise<BinaryIndex> {
    const run = async (progress?: vscode.Progress<{ message?: string }>) => {
      const t0 = Date.now();
      this.ctx.log(`loading the whole index of ${path}`);
      let fetchedShown = 0;
      const { index, fromCache } = await loadIndex(path, {
        inWorker: true,
        limits: this.ctx.config.indexLimits,
        debugDirs: this.ctx.config.debugDirs,
        debuginfodUrls: this.ctx.config.debuginfodUrls,
        onDebugFetch: (p) => {
          // A report per 4 MiB, not per chunk.
          if (p.bytes && p.bytes < fetchedShown + 4 * 2 ** 20) return;
          fetchedShown = p.bytes;
          const mib = (n: number) => (n / 2 ** 20).toFixed(1);
          progress?.report({ message: `fetching debug info from ${p.url}: ${mib(p.bytes)}${p.total ? ` of ${mib(p.total)}` : ''} MiB` });
          if (!p.bytes) this.ctx.log(`${path}: no debug file here; fetching it from ${p.url} by its build-id`);
        },
        onProgress: (message) => {
          progress?.report({ message });
          // How much of a rebuilt binary's DWARF came from the unit cache.
          if (message.startsWith('reused ')) this.ctx.log(`${path}: ${message}`);
        },
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
    this.order.drop(path);
    this.resolved.clear();
    try {
      await this.index(path);
      // Even an identical rebuild is a new file (linkers unlink and recreate): uprobes stay on the old inode.
      this.changed.fire({ binary: path, rebuilt: true });
    } catch {
      // logged by build()
    }
  }

  /**
   * The binary whose DWARF names `localFile`: the pinned one if it does, else the best build that does. Its
   * index may be the file's own units only (`whole: false`) while the whole index builds; see wholeSource().
   */
  async forSource(localFile: string): Promise<SourceBinary | undefined> {
    const r = await this.resolvedSource(localFile);
    if (!r || r.whole) return r;
    const ready = this.ready.get(r.binary);
    return ready ? { ...r, index: ready, whole: true } : r;
  }

  /** forSource() with the binary's whole index, waiting for it (what a query across units needs). */
  async wholeSource(localFile: string): Promise<SourceBinary | undefined> {
    const r = await this.forSource(localFile);
    if (!r || r.whole) return r;
    return { ...r, index: await this.index(r.binary), whole: true };
  }

  private resolvedSource(localFile: string): Promise<SourceBinary | undefined> {
    const buildFile = localToBuild(localFile, this.ctx.config.pathMappings, this.ctx.workspaceFolder);
    let p = this.resolved.get(buildFile);
    if (!p) {
      p = this.resolve(localFile, buildFile);
      this.resolved.set(buildFile, p);
      // Nothing built from this file yet: look again later (the user may be about to build; the watcher
      // also notices new binaries), not on every keystroke.
      void p.then((r) => !r && setTimeout(() => this.resolved.get(buildFile) === p && this.resolved.delete(buildFile), 10_000));
    }
    return p;
  }

  private publish(r: Resolution): void {
    this.resolutions.set(r.file, r);
    this.resolvedEvent.fire(r);
  }

  private async resolve(localFile: string, buildFile: string): Promise<SourceBinary | undefined> {
    const root = this.ctx.workspaceFolder ?? '/';
    const contains = (index: BinaryIndex) => index.functionsInFile(buildFile).length > 0 || index.sourceFiles().includes(buildFile);
    if (!this.resolutions.has(localFile) || this.resolutions.get(localFile)?.state !== 'found')
      this.publish({ state: 'searching', file: localFile });
    const pinned = this.pinned;
    if (pinned) {
      try {
        const index = await this.order.forFile(pinned, buildFile);
        if (contains(index)) {
          this.publish({ state: 'found', file: localFile, binary: pinned, label: workspaceLabel(root, pinned), pinned: true, others: [] });
          return { binary: pinned, index, buildFile, whole: index.data.onlyFile === undefined };
        }
      } catch {
        // logged by build(); fall back to discovery
      }
    }
    const scans = await this.scans();
    const choice = chooseBinaries(scans, buildFile);
    for (const b of choice.builds) {
      const binary = b.primary.path;
      let index: BinaryIndex;
      try {
        index = await this.order.forFile(binary, buildFile);
      } catch {
        continue;
      }
      if (!contains(index)) continue;
      const others = choice.builds.filter((o) => o !== b).map((o) => workspaceLabel(root, o.primary.path));
      this.publish({ state: 'found', file: localFile, binary, label: workspaceLabel(root, binary), pinned: false, others });
      return { binary, index, buildFile, whole: index.data.onlyFile === undefined };
    }
    this.publish({
      state: 'none',
      file: localFile,
      candidates: scans.length,
      unreadable: choice.unreadable.map((b) => ({
        label: workspaceLabel(root, b.primary.path),
        reason: b.primary.noDebugReason ?? 'no debug info',
      })),
    });
    return undefined;
  }

  /** "ProbeLens: Select Binary": pick one of the distinct builds (or browse) and pin it for this workspace. */
  async select(): Promise<string | undefined> {
    this.rediscover();
    const root = this.ctx.workspaceFolder ?? '/';
    const active = vscode.window.activeTextEditor?.document.uri;
    const buildFile = active?.scheme === 'file' ? localToBuild(active.fsPath, this.ctx.config.pathMappings, this.ctx.workspaceFolder) : '';
    const scans = await this.scans();
    const forFile = new Set(buildFile ? chooseBinaries(scans, buildFile).builds : []);
    const builds = groupBuilds(scans);
    const ordered = [...forFile, ...builds.filter((b) => ![...forFile].some((f) => f.primary.path === b.primary.path))];
    type Item = vscode.QuickPickItem & { path?: string; action?: 'browse' | 'unpin' };
    const describe = (b: Build): string => {
      const kind =
        b.primary.kind === 'shared-library' ? 'shared library' : b.primary.kind === 'kernel-module' ? 'kernel module' : 'executable';
      if ([...forFile].some((f) => f.primary.path === b.primary.path)) return `${kind} · built from ${basename(buildFile)}`;
      return b.primary.debug === 'none' ? `${kind} · no debug info` : kind;
    };
    const items: Item[] = ordered.map((b) => ({
      label: workspaceLabel(root, b.primary.path),
      description: describe(b),
      path: b.primary.path,
      detail:
        [
          b.primary.path === this.pinned ? '$(pinned) pinned for this workspace' : '',
          b.copies.length > 1
            ? `same build as ${b.copies
                .slice(1)
                .map((c) => basename(c.path))
                .join(', ')}`
            : '',
          b.primary.debug === 'none' ? (b.primary.noDebugReason ?? '') : '',
        ]
          .filter(Boolean)
          .join(' · ') || undefined,
    }));
    items.push({ label: '$(folder-opened) Browse…', action: 'browse' });
    if (this.pinned) items.push({ label: '$(pinned-dirty) Unpin (choose by source file again)', action: 'unpin' });
    const pick = await vscode.window.showQuickPick(items, {
      title: 'ProbeLens: binary to trace',
      placeHolder: ordered.length
        ? 'Pick the binary built from this workspace'
        : 'No ELF binaries found in the workspace: browse for one, or set probelens.binaries',
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
      if (path && elfType(path) === undefined) {
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
    this.resolvedEvent.dispose();
  }
}

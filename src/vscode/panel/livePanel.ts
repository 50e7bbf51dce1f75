// The live panel's VS Code side: one WebviewPanel (nonce CSP, our bundle and CSS from dist/), wired to a
// PanelFeed that holds the session's hits, and the requests the webview makes (export, open source).
// The webview is not retained while hidden: it reloads when shown again, says `ready`, and the feed
// replays its state, which also covers the panel being restored after a window reload (the serializer).
// Tests: test/e2e/narrowPanel.test.ts, test/e2e/traceLine.test.ts, test/e2e/hitLatency.test.ts
import * as vscode from 'vscode';
import { unhandled, type ExportFormat, type FromWebview, type ToWebview } from '../../shared/protocol';
import { renderPanelHtml } from './html';
import type { PanelFeed } from './panelFeed';

export interface SourceLocation {
  file: string;
  /** 1-based */
  line: number;
}

export interface LivePanelDeps {
  feed: PanelFeed;
  /** where a probe sits in the source when the feed's ProbeInfo does not say (e.g. asks the binary index) */
  resolveSource?(probe: string): SourceLocation | undefined;
}

export class LivePanel implements vscode.Disposable {
  static readonly viewType = 'probelens.livePanel';
  private static current: LivePanel | undefined;
  private readonly disposables: vscode.Disposable[] = [];
  private isDisposed = false;

  /** Show the panel, creating it on first use. */
  static createOrShow(context: vscode.ExtensionContext, deps: LivePanelDeps): LivePanel {
    if (LivePanel.current) {
      LivePanel.current.panel.reveal(undefined, true);
      return LivePanel.current;
    }
    const panel = vscode.window.createWebviewPanel(
      LivePanel.viewType,
      'ProbeLens: Live Hits',
      { viewColumn: vscode.ViewColumn.Beside, preserveFocus: true },
      LivePanel.webviewOptions(context),
    );
    LivePanel.current = new LivePanel(panel, context, deps);
    return LivePanel.current;
  }

  /** Restores the panel after a window reload (needs the `onWebviewPanel:probelens.livePanel` activation event). */
  static registerSerializer(context: vscode.ExtensionContext, deps: LivePanelDeps): vscode.Disposable {
    return vscode.window.registerWebviewPanelSerializer(LivePanel.viewType, {
      deserializeWebviewPanel: async (panel: vscode.WebviewPanel) => {
        panel.webview.options = LivePanel.webviewOptions(context);
        LivePanel.current?.dispose();
        LivePanel.current = new LivePanel(panel, context, deps);
      },
    });
  }

  private static webviewOptions(context: vscode.ExtensionContext): vscode.WebviewPanelOptions & vscode.WebviewOptions {
    return {
      enableScripts: true,
      retainContextWhenHidden: false,
      localResourceRoots: [vscode.Uri.joinPath(context.extensionUri, 'dist')],
    };
  }

  private constructor(
    private readonly panel: vscode.WebviewPanel,
    context: vscode.ExtensionContext,
    private readonly deps: LivePanelDeps,
  ) {
    const webview = panel.webview;
    const dist = vscode.Uri.joinPath(context.extensionUri, 'dist');
    webview.html = renderPanelHtml({
      cspSource: webview.cspSource,
      scriptUri: webview.asWebviewUri(vscode.Uri.joinPath(dist, 'webview.js')).toString(),
      styleUri: webview.asWebviewUri(vscode.Uri.joinPath(dist, 'webview.css')).toString(),
    });
    this.disposables.push(
      webview.onDidReceiveMessage((m: FromWebview) => this.onMessage(m)),
      panel.onDidChangeViewState(() => {
        // A hidden webview is torn down (no retained context); it re-attaches with `ready` when shown.
        if (!panel.visible) this.deps.feed.detach();
      }),
      panel.onDidDispose(() => this.dispose()),
    );
  }

  private post(msg: ToWebview): void {
    void this.panel.webview.postMessage(msg);
  }

  private onMessage(m: FromWebview): void {
    switch (m.type) {
      case 'ready':
        this.deps.feed.attach((msg) => this.post(msg));
        break;
      case 'clear':
        this.deps.feed.clear();
        break;
      case 'drawn':
        this.deps.feed.drawn(m.batches);
        break;
      case 'export':
        this.exportHits(m.format, m.filter).then(
          (result) => this.post({ type: 'response', requestId: m.requestId, ok: true, result }),
          (e: unknown) =>
            this.post({ type: 'response', requestId: m.requestId, ok: false, error: e instanceof Error ? e.message : String(e) }),
        );
        break;
      case 'openSource':
        void this.openSource(m.probe, m.file, m.line);
        break;
      default:
        unhandled(m);
    }
  }

  private async exportHits(format: ExportFormat, filter: string): Promise<string> {
    const { text, hits } = this.deps.feed.exportText(format, filter);
    const stamp = new Date().toISOString().replace(/[:.]/g, '-');
    const folder = vscode.workspace.workspaceFolders?.[0]?.uri;
    const name = `probelens-hits-${stamp}.${format}`;
    const target = await vscode.window.showSaveDialog({
      defaultUri: folder ? vscode.Uri.joinPath(folder, name) : undefined,
      // eslint-disable-next-line probelens/name-records -- the save dialog's own shape, read by VS Code, keys fixed here
      filters: format === 'json' ? { JSON: ['json'] } : { CSV: ['csv'] },
      saveLabel: `Export ${hits} hits`,
    });
    if (!target) return 'export cancelled';
    await vscode.workspace.fs.writeFile(target, Buffer.from(text, 'utf8'));
    return `exported ${hits} hits to ${target.fsPath}`;
  }

  private async openSource(probe: string, file?: string, line?: number): Promise<void> {
    const loc = file && line ? { file, line } : this.deps.resolveSource?.(probe);
    if (!loc) {
      void vscode.window.showWarningMessage(
        `ProbeLens: no source location is known for probe ${probe}; rebuild the binary with debug info (-g) so its DWARF names the line.`,
      );
      return;
    }
    const pos = new vscode.Position(Math.max(0, loc.line - 1), 0);
    await vscode.window.showTextDocument(vscode.Uri.file(loc.file), {
      viewColumn: vscode.ViewColumn.One,
      selection: new vscode.Range(pos, pos),
      preserveFocus: false,
    });
  }

  dispose(): void {
    if (this.isDisposed) return;
    this.isDisposed = true;
    if (LivePanel.current === this) LivePanel.current = undefined;
    this.deps.feed.detach();
    for (const d of this.disposables.splice(0)) d.dispose();
    this.panel.dispose();
  }
}

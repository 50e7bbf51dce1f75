// Feeds the live panel (src/vscode/panel, another module's webview) from the tracing sessions: hits in the
// protocol's shape, the probes with their local source lines (and whether each is counted in the kernel), the session
// state and the kernel's loss counts.
// Tests: test/e2e/narrowPanel.test.ts, test/e2e/traceLine.test.ts
import * as vscode from 'vscode';
import { PROBELENS_VERSION } from '../core/version';
import type { ProbeInfo } from '../shared/protocol';
import type { Ctx } from './ctx';
import { buildToLocal } from './model/pathMapping';
import { LivePanel, type LivePanelDeps } from './panel/livePanel';
import { PanelFeed } from './panel/panelFeed';
import type { Tracing } from './tracing';

export class PanelHost implements vscode.Disposable {
  readonly feed = new PanelFeed({ version: PROBELENS_VERSION });
  private lost = 0;
  private mismatch = 0;

  constructor(
    private readonly ctx: Ctx,
    private readonly tracing: Tracing,
  ) {
    ctx.push(
      // The session's hits go to the panel's table as they are; its figures come from the sessions' aggregates,
      // which have counted the hit (and paired it: threads and goroutines) before it gets here.
      tracing.onHit((hit) => {
        this.watchSessions();
        this.feed.post([hit]);
      }),
    );
    ctx.push(tracing.onDidChange(() => this.sync()));
    ctx.push(LivePanel.registerSerializer(ctx.extension, this.deps()));
  }

  private deps(): LivePanelDeps {
    return {
      feed: this.feed,
      resolveSource: (probe) =>
        this.probes().find((p) => p.name === probe && p.file && p.line) as { file: string; line: number } | undefined,
    };
  }

  open(): void {
    this.sync();
    LivePanel.createOrShow(this.ctx.extension, this.deps());
  }

  /**
   * One entry per probe name, its first site's line (a function inlined at 4,000 sites is one probe of 4,000 points:
   * it is looked at once, and the settings are read once, not per point).
   */
  private probes(): ProbeInfo[] {
    const out = new Map<string, ProbeInfo>();
    const mappings = this.ctx.config.pathMappings;
    const folder = this.ctx.workspaceFolder;
    for (const r of this.tracing.allRuns()) {
      const s = r.session;
      for (const p of s?.probes ?? []) {
        const name = s!.probeName(p);
        if (out.has(name)) continue;
        const file = p.file ? buildToLocal(p.file, mappings, folder) : undefined;
        out.set(name, { name, file, line: p.line, ...(r.aggSpec !== undefined ? { aggregated: true as const } : {}) });
      }
    }
    return [...out.values()];
  }

  /** The panel reads the figures of every session started (a session's aggregates are there from its start). */
  private watchSessions(): void {
    for (const r of this.tracing.allRuns()) if (r.session?.aggregates) this.feed.watch(r.session.aggregates);
  }

  /** Called on state changes and by the live timer. */
  sync(): void {
    const runs = this.tracing.allRuns();
    this.watchSessions();
    this.feed.setProbes(this.probes());
    // Figures counted in the kernel change without a hit (sync runs when they moved): read them again.
    if (runs.some((r) => r.aggSpec !== undefined && r.session)) this.feed.statsChanged();
    const failed = runs.filter((r) => r.state === 'failed');
    const state = !this.tracing.isTracing
      ? runs.length
        ? 'stopped'
        : 'idle'
      : runs.some((r) => r.state === 'starting')
        ? 'starting'
        : failed.length === runs.length && runs.length
          ? 'error'
          : 'tracing';
    const hosts = [...new Set(runs.map((r) => r.target.label))];
    this.feed.setSession({
      state,
      detail: failed.length
        ? failed.map((r) => `${r.target.label}: ${r.error}`).join('; ')
        : hosts.length
          ? `${hosts.length === 1 ? hosts[0] : `${hosts.length} hosts`}`
          : undefined,
    });
    // Events lost come without a hit: the figures are sent again when the count moved.
    let lost = 0;
    for (const r of runs) lost += r.session?.aggregates?.snapshot().lost ?? 0;
    if (lost !== this.lost) {
      this.lost = lost;
      this.feed.statsChanged();
    }
    let mismatch = 0;
    for (const r of runs) mismatch += r.session ? r.session.mismatch : (r.mismatch ?? 0);
    if (mismatch !== this.mismatch) {
      this.mismatch = mismatch;
      this.feed.setMismatch(mismatch);
    }
  }

  dispose(): void {
    this.feed.dispose();
  }
}

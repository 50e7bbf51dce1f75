// Feeds the live panel (src/vscode/panel, another module's webview) from the tracing sessions: hits in the
// protocol's shape, the probes with their local source lines, the session state and the kernel's loss counts.
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
  private known = new Map<string, string>();

  constructor(
    private readonly ctx: Ctx,
    private readonly tracing: Tracing,
  ) {
    ctx.push(
      // The session's hits go to the panel as they are: latency is already paired (threads and goroutines).
      tracing.onHit((hit) => {
        // A probe edited into a running trace can hit before the next sync: learn its sites first.
        if (!this.known.has(hit.probe)) this.syncGroups();
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

  private probes(): ProbeInfo[] {
    const out: ProbeInfo[] = [];
    for (const r of this.tracing.allRuns()) {
      for (const p of r.session?.probes ?? []) {
        const file = p.file ? buildToLocal(p.file, this.ctx.config.pathMappings, this.ctx.workspaceFolder) : undefined;
        if (!out.some((o) => o.name === p.event)) out.push({ name: p.event, file, line: p.line });
      }
    }
    return out;
  }

  /**
   * Each event → the probe (spec) it is a site of, named by the spec's entry-site event (the bare function
   * name): the panel counts a function probe once, over all its sites, and breaks it down per site.
   */
  private groups(): Map<string, string> {
    const out = new Map<string, string>();
    for (const r of this.tracing.allRuns()) {
      const probes = r.session?.probes ?? [];
      const name = new Map<string, string>();
      for (const p of probes) if (!p.site || p.site.kind === 'entry') if (!name.has(p.spec)) name.set(p.spec, p.event);
      for (const p of probes) if (!name.has(p.spec)) name.set(p.spec, p.event);
      for (const p of probes) out.set(p.event, name.get(p.spec) as string);
    }
    return out;
  }

  private syncGroups(): void {
    this.known = this.groups();
    this.feed.setProbeGroups(this.known);
  }

  /** Called on state changes and by the live timer. */
  sync(): void {
    const runs = this.tracing.allRuns();
    this.syncGroups();
    this.feed.setProbes(this.probes());
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
    let lost = 0;
    for (const r of runs) lost += r.session?.aggregates?.snapshot().lost ?? 0;
    if (lost !== this.lost) {
      this.lost = lost;
      this.feed.setLost(lost);
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

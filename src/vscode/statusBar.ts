// The status bar item: the active targets and, while tracing, the hit rate.
// Tests: test/e2e/probeSet.test.ts
import * as vscode from 'vscode';
import { formatCount, hitRate } from './model/format';
import type { Targets } from './targets';
import type { Tracing } from './tracing';

export class StatusBar implements vscode.Disposable {
  private readonly item = vscode.window.createStatusBarItem('probelens.status', vscode.StatusBarAlignment.Left, 50);
  private prev: { t: number; total: number } | undefined;

  constructor(
    private readonly tracing: Tracing,
    private readonly targets: Targets,
  ) {
    this.item.name = 'ProbeLens';
    this.item.command = 'probelens.selectTargets';
  }

  /** Shown once a C/C++/Rust/Go editor has been seen (activation alone shows nothing). */
  show(): void {
    this.refresh();
    this.item.show();
  }

  refresh(): void {
    const names = this.targets
      .active()
      .map((t) => t.label)
      .join(', ');
    if (!this.tracing.isTracing) {
      this.prev = undefined;
      this.item.text = `$(debug-disconnect) ProbeLens: ${names}`;
      this.item.tooltip = `ProbeLens targets: ${names} (not tracing). Click to choose targets.`;
      return;
    }
    let total = 0;
    for (const r of this.tracing.allRuns()) {
      if (!r.session?.aggregates) continue;
      for (const n of Object.values(r.session.aggregates.snapshot().hits)) total += n;
    }
    const now = { t: Date.now(), total };
    const rate = hitRate(this.prev, now);
    this.prev = now;
    const failed = this.tracing.allRuns().filter((r) => r.state === 'failed').length;
    this.item.text = `$(pulse) ProbeLens: ${names} · ${formatCount(Math.round(rate))} hits/s${failed ? ` · $(error) ${failed}` : ''}`;
    this.item.tooltip = `Tracing on ${names}: ${formatCount(total)} hits so far. Click to choose targets.`;
  }

  dispose(): void {
    this.item.dispose();
  }
}

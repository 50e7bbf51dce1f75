// Code lenses above the functions of C, C++, Rust and Go files: "Trace", "Trace returns", "Latency", live
// counts while tracing, and why a function cannot be probed. The computation is model/lenses.ts.
import { basename } from 'node:path';
import * as vscode from 'vscode';
import type { Binaries } from './binaries';
import { command } from './commands';
import type { Ctx } from './ctx';
import { lensesForFunctions, type LiveSpec } from './model/lenses';
import { latencyForSpecs } from './model/stats';
import type { Tracing } from './tracing';

export const SOURCE_LANGUAGES = ['c', 'cpp', 'rust', 'go'];

export class ProbeCodeLenses implements vscode.CodeLensProvider {
  private readonly changed = new vscode.EventEmitter<void>();
  readonly onDidChangeCodeLenses = this.changed.event;

  constructor(
    private readonly ctx: Ctx,
    private readonly binaries: Binaries,
    private readonly tracing: Tracing,
  ) {
    ctx.push(binaries.onDidChangeIndex(() => this.changed.fire()));
    ctx.push(tracing.onDidChange(() => this.changed.fire()));
    ctx.push(vscode.workspace.onDidChangeConfiguration((e) => e.affectsConfiguration('probelens.codeLens') && this.changed.fire()));
    ctx.push(this.changed);
  }

  /** Called by the live refresh timer (at most a few times a second) when counts moved. */
  refresh(): void {
    this.changed.fire();
  }

  async provideCodeLenses(doc: vscode.TextDocument): Promise<vscode.CodeLens[]> {
    if (!this.ctx.config.codeLensEnabled || doc.uri.scheme !== 'file') return [];
    let src;
    try {
      src = await this.binaries.forSource(doc.uri.fsPath);
    } catch {
      return [];
    }
    if (!src) return [];
    const { index, binary, buildFile } = src;
    const key = this.tracing.keyOf(binary);
    const views = this.tracing.views(key);
    const inSet = new Set((this.tracing.set.binaries[key] ?? []).map((e) => e.spec));
    const live = (specs: string[]): LiveSpec | undefined => {
      if (!specs.every((s) => inSet.has(s))) return undefined;
      const state = this.tracing.state(key, specs[0]);
      const st = this.tracing.stats(key, specs[0], views);
      const lat = specs.length > 1 ? latencyForSpecs(specs, views) : undefined;
      // The lens sums its specs' counts: a lower bound if any of them is one.
      const lowerBound = specs.some((s) => this.tracing.stats(key, s, views).lowerBound);
      return { state, hits: st.hits, p50Ns: lat?.p50, calls: lat?.count, ...(lowerBound ? { lowerBound } : {}) };
    };
    const lensOpts = this.ctx.config.codeLens;
    const models = lensesForFunctions(
      index.functionsInFile(buildFile),
      {
        ...lensOpts,
        isGo: index.isGo,
        lineText: (l) => (l >= 1 && l <= doc.lineCount ? doc.lineAt(l - 1).text : undefined),
        ambiguous: (name) => index.function(name).length > 1,
        src: basename(buildFile),
      },
      live,
    );
    return models
      .filter((m) => m.line <= doc.lineCount)
      .map((m) => {
        const range = new vscode.Range(m.line - 1, 0, m.line - 1, 0);
        if (m.kind === 'unprobeable') {
          return new vscode.CodeLens(
            range,
            command('probelens.explainUnprobeable', m.title.replace(/^\$\([^)]*\)\s*/, ''), m.function, m.reason ?? ''),
          );
        }
        return new vscode.CodeLens(
          range,
          command('probelens.addProbes', m.title, { binary, specs: m.specs, file: doc.uri.fsPath, line: m.line }),
        );
      });
  }
}

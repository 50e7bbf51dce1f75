// Code lenses above the functions of C, C++, Rust and Go files: "Trace", "Trace returns", "Latency", live
// counts while tracing, and why a function cannot be probed. The computation is model/lenses.ts. A C file of a
// kernel tree without a vmlinux gets its lenses from the target's running kernel (targetKernels.ts).
// Tests: test/e2e/traceLens.test.ts, test/e2e/lensesLanguages.test.ts, test/e2e/redisLens.test.ts, test/e2e/kernelLens.test.ts
import { basename } from 'node:path';
import * as vscode from 'vscode';
import type { Binaries } from './binaries';
import { command } from './commands';
import type { Ctx } from './ctx';
import { BTF_KEY, BTF_WORDS } from './model/kernelTree';
import { lensesForFunctions, type LensModel, type LiveSpec } from './model/lenses';
import { latencyForSpecs } from './model/stats';
import { percentiles } from '../core/session/latency';
import type { TargetKernels } from './targetKernels';
import type { Tracing } from './tracing';

export const SOURCE_LANGUAGES = ['c', 'cpp', 'rust', 'go'];

const NOT_YET = Symbol('not yet');

export class ProbeCodeLenses implements vscode.CodeLensProvider {
  private readonly changed = new vscode.EventEmitter<void>();
  /** Files whose binary is still being looked for or indexed: their lenses are asked for again when it is known. */
  private readonly waiting = new Set<string>();
  /** One-file indexes whose lenses were logged (once each). */
  private readonly fromOwnUnits = new WeakSet<object>();
  /** Binary and file whose lenses came from its own units, until the whole index's lenses for it are logged. */
  private readonly wholeToLog = new Set<string>();
  readonly onDidChangeCodeLenses = this.changed.event;

  constructor(
    private readonly ctx: Ctx,
    private readonly binaries: Binaries,
    private readonly tracing: Tracing,
    private readonly kernels: TargetKernels,
  ) {
    ctx.push(binaries.onDidChangeIndex(() => this.changed.fire()));
    ctx.push(kernels.onDidChange(() => this.changed.fire()));
    ctx.push(tracing.onDidChange(() => this.changed.fire()));
    ctx.push(vscode.workspace.onDidChangeConfiguration((e) => e.affectsConfiguration('probelens.codeLens') && this.changed.fire()));
    ctx.push(this.changed);
  }

  private answered(file: string): void {
    this.waiting.delete(file);
    this.changed.fire();
  }

  /** Called by the live refresh timer (at most a few times a second) when counts moved. */
  refresh(): void {
    this.changed.fire();
  }

  async provideCodeLenses(doc: vscode.TextDocument): Promise<vscode.CodeLens[]> {
    if (!this.ctx.config.codeLensEnabled || doc.uri.scheme !== 'file') return [];
    let src;
    try {
      // The editor spaces its lens requests by how long the last ones took: a request waiting for discovery and
      // indexing would delay the next one by seconds. Answer at once and ask again when the binary is known.
      const pending = this.binaries.forSource(doc.uri.fsPath);
      const now = await Promise.race([pending, new Promise<typeof NOT_YET>((r) => setImmediate(() => r(NOT_YET)))]);
      if (now === NOT_YET) {
        const file = doc.uri.fsPath;
        if (!this.waiting.has(file)) {
          this.waiting.add(file);
          void pending.then(
            () => this.answered(file),
            () => this.answered(file),
          );
        }
        return [];
      }
      src = now;
    } catch {
      return [];
    }
    if (!src) return this.kernelLenses(doc);
    const { index, binary, buildFile } = src;
    const live = this.liveFor(this.tracing.keyOf(binary));
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
    if (!src.whole && !this.fromOwnUnits.has(index)) {
      this.fromOwnUnits.add(index);
      this.wholeToLog.add(`${binary}\0${buildFile}`);
      this.ctx.log(`${models.length} lenses of ${basename(buildFile)} from its own units of ${binary} (the whole index follows)`);
      this.binaries.lensesComputed(binary);
    } else if (src.whole && this.wholeToLog.size > 0 && this.wholeToLog.delete(`${binary}\0${buildFile}`)) {
      // The same count as the line above, or the two indexes disagree about this file (the e2e tier compares them).
      this.ctx.log(`${models.length} lenses of ${basename(buildFile)} from the whole index of ${binary}`);
    }
    return this.toLenses(models, binary, doc);
  }

  /** A kernel tree's C file without a vmlinux: lenses from the target's BTF and kallsyms. */
  private async kernelLenses(doc: vscode.TextDocument): Promise<vscode.CodeLens[]> {
    if (doc.languageId !== 'c') return [];
    const models = await this.kernels.lenses(doc.uri.fsPath, doc.getText(), this.ctx.config.codeLens, this.liveFor(BTF_KEY));
    return this.toLenses(models, this.tracing.pathOf(BTF_KEY), doc, BTF_WORDS);
  }

  /** What a lens shows while its specs are traced (undefined for specs not all in the probe set). */
  private liveFor(key: string): (specs: string[]) => LiveSpec | undefined {
    const views = this.tracing.views(key);
    const inSet = new Set((this.tracing.set.binaries[key] ?? []).map((e) => e.spec));
    return (specs: string[]): LiveSpec | undefined => {
      if (!specs.every((s) => inSet.has(s))) return undefined;
      const state = this.tracing.state(key, specs[0]);
      const st = this.tracing.stats(key, specs[0], views);
      const lat = specs.length > 1 ? latencyForSpecs(specs, views) : undefined;
      // The lens sums its specs' counts: a lower bound if any of them is one.
      const lowerBound = specs.some((s) => this.tracing.stats(key, s, views).lowerBound);
      // A kernel function's lens says where its probes came from (vmlinux DWARF, or BTF and kallsyms).
      const kernelSource = st.kernelSource;
      return {
        state,
        hits: st.hits,
        p50Ns: lat && percentiles(lat).p50,
        calls: lat?.count,
        ...(lowerBound ? { lowerBound } : {}),
        ...(kernelSource ? { kernelSource } : {}),
      };
    };
  }

  private toLenses(models: LensModel[], binary: string, doc: vscode.TextDocument, tooltip?: string): vscode.CodeLens[] {
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
        const c = command('probelens.addProbes', m.title, { binary, specs: m.specs, file: doc.uri.fsPath, line: m.line });
        return new vscode.CodeLens(range, tooltip ? { ...c, tooltip: `${m.specs.join(' + ')}: ${tooltip}` } : c);
      });
  }
}

// Inline results: after each armed probe's line `● 1,204 hits · last a=3 b=-7 · p50 2.1µs`, a gutter icon, a
// hover with the last hits, per-host counts and the latency histogram (and a link that moves the probe into the kernel
// or back to the stream), and problems as diagnostics on the line.
// Tests: test/e2e/traceLens.test.ts, test/e2e/probeSet.test.ts, test/e2e/sshTarget.test.ts
import * as vscode from 'vscode';
import type { Ctx } from './ctx';
import { decorationText, hoverMarkdown, toggleLink, TOGGLE_COMMANDS } from './model/format';
import { RedrawMemo } from './model/redrawMemo';
import type { Tracing } from './tracing';

export class InlineResults implements vscode.Disposable {
  private readonly armedType: vscode.TextEditorDecorationType;
  private readonly otherType: vscode.TextEditorDecorationType;
  private readonly diagnostics = vscode.languages.createDiagnosticCollection('probelens');
  /** The diagnostics last set, as text. */
  private said = '';
  /** What each editor was last given: the live timer's redraws of unchanged counts send nothing. */
  private readonly drawn = new RedrawMemo();

  constructor(
    private readonly ctx: Ctx,
    private readonly tracing: Tracing,
  ) {
    const media = vscode.Uri.joinPath(ctx.extension.extensionUri, 'media');
    const after = { margin: '0 0 0 2em', color: new vscode.ThemeColor('editorCodeLens.foreground'), fontStyle: 'italic' };
    this.armedType = vscode.window.createTextEditorDecorationType({
      gutterIconPath: vscode.Uri.joinPath(media, 'probe-armed.svg'),
      gutterIconSize: '70%',
      after,
      rangeBehavior: vscode.DecorationRangeBehavior.ClosedClosed,
    });
    this.otherType = vscode.window.createTextEditorDecorationType({
      gutterIconPath: vscode.Uri.joinPath(media, 'probe-idle.svg'),
      gutterIconSize: '70%',
      after,
      rangeBehavior: vscode.DecorationRangeBehavior.ClosedClosed,
    });
    ctx.push(vscode.window.onDidChangeVisibleTextEditors(() => this.refresh()));
    ctx.push(tracing.onDidChange(() => this.refresh()));
  }

  /** Redraws every visible editor (called on state changes and by the live timer). */
  refresh(): void {
    const enabled = this.ctx.config.inlineResults;
    type Item = { armed: boolean; opts: vscode.DecorationOptions; drawn: string };
    const byFile = new Map<string, Item[]>();
    const diags = new Map<string, vscode.Diagnostic[]>();
    for (const key of Object.keys(this.tracing.set.binaries)) {
      const views = this.tracing.views(key);
      // Several probes on one line (Trace and Trace returns above one function) share the line's text.
      const perLine = new Map<string, { file: string; line: number; texts: string[]; hovers: string[]; armed: boolean }>();
      for (const entry of this.tracing.set.binaries[key]) {
        const loc = this.tracing.location(key, entry.spec);
        if (!loc) continue;
        const state = this.tracing.state(key, entry.spec);
        const st = state === 'armed' || state === 'stale' || state === 'stopped' ? this.tracing.stats(key, entry.spec, views) : undefined;
        const problems = this.tracing.problems(key, entry.spec);
        const lk = `${loc.file}\0${loc.line}`;
        const pl = perLine.get(lk) ?? { file: loc.file, line: loc.line, texts: [], hovers: [], armed: false };
        pl.texts.push(decorationText(st, state, problems[0]));
        pl.hovers.push(`${hoverMarkdown(entry.spec, st, state, problems)}\n\n${toggleLink(key, entry.spec, !!entry.aggregate)}`);
        pl.armed ||= state === 'armed';
        perLine.set(lk, pl);
        for (const p of problems) {
          const list = diags.get(loc.file) ?? [];
          const sev = state === 'error' ? vscode.DiagnosticSeverity.Error : vscode.DiagnosticSeverity.Warning;
          const d = new vscode.Diagnostic(new vscode.Range(loc.line - 1, 0, loc.line - 1, 1000), `${entry.spec}: ${p}`, sev);
          d.source = 'ProbeLens';
          list.push(d);
          diags.set(loc.file, list);
        }
      }
      for (const pl of perLine.values()) {
        const list = byFile.get(pl.file) ?? [];
        const text = pl.texts.join('   ');
        const hover = new vscode.MarkdownString(pl.hovers.join('\n\n---\n\n'));
        hover.supportThemeIcons = true;
        // Only the toggle links run: the hover's other text is escaped (escapeMarkdown), so it holds no link of its own.
        hover.isTrusted = { enabledCommands: TOGGLE_COMMANDS };
        list.push({
          armed: pl.armed,
          drawn: `${pl.line}\0${text}\0${hover.value}`,
          opts: {
            range: new vscode.Range(pl.line - 1, Number.MAX_SAFE_INTEGER, pl.line - 1, Number.MAX_SAFE_INTEGER),
            hoverMessage: hover,
            renderOptions: { after: { contentText: text } },
          },
        });
        byFile.set(pl.file, list);
      }
    }
    for (const editor of vscode.window.visibleTextEditors) {
      const items = enabled ? (byFile.get(editor.document.uri.fsPath) ?? []) : [];
      for (const [type, name, armed] of [
        [this.armedType, 'armed', true],
        [this.otherType, 'other', false],
      ] as const) {
        const mine = items.filter((i) => i.armed === armed);
        if (this.drawn.changed(editor, name, mine.map((i) => i.drawn).join('\n'), editor.document.version))
          editor.setDecorations(
            type,
            mine.map((i) => i.opts),
          );
      }
    }
    // Problems change rarely, counts with every redraw: the diagnostics (markers the editor redraws, the Problems
    // view) are replaced only when they differ.
    const said = JSON.stringify([...diags].map(([file, list]) => [file, list.map((d) => [d.range.start.line, d.severity, d.message])]));
    if (said !== this.said) {
      this.said = said;
      this.diagnostics.clear();
      for (const [file, list] of diags) this.diagnostics.set(vscode.Uri.file(file), list);
    }
  }

  dispose(): void {
    this.armedType.dispose();
    this.otherType.dispose();
    this.diagnostics.dispose();
  }
}

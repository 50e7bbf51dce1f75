// The editor's right-click entries: "Trace this function" (the one around the cursor), "Trace this line" (a
// line probe fetching the variables the user picks among those visible there) and "Trace with arguments…".
// Tests: test/e2e/traceLine.test.ts, test/e2e/traceArgs.test.ts
import { basename } from 'node:path';
import * as vscode from 'vscode';
import type { BinaryIndex } from '../core/index/binaryIndex';
import type { IndexedFunction } from '../core/index/model';
import { resolvePoint } from '../core/probes/resolve';
import { parsePoint, parseSpec } from '../core/probes/spec';
import { siteContext, variablesAtSite } from '../core/probes/variables';
import type { Binaries, SourceBinary } from './binaries';
import type { Ctx } from './ctx';
import { pointFor } from './model/lenses';
import { fieldChoices } from './model/structFields';
import type { Tracing } from './tracing';

export class EditorCommands {
  constructor(
    private readonly ctx: Ctx,
    private readonly binaries: Binaries,
    private readonly tracing: Tracing,
  ) {}

  private async here(): Promise<{ editor: vscode.TextEditor; src: SourceBinary; line: number } | undefined> {
    const editor = vscode.window.activeTextEditor;
    if (!editor || editor.document.uri.scheme !== 'file') {
      void vscode.window.showWarningMessage('ProbeLens: open a C, C++, Rust or Go source file first.');
      return undefined;
    }
    // A point's sites and its `@SRC` depend on every unit (inlined copies, same-name functions): the whole index.
    const src = await vscode.window.withProgress(
      { location: vscode.ProgressLocation.Window, title: 'ProbeLens: indexing the binary' },
      () => this.binaries.wholeSource(editor.document.uri.fsPath),
    );
    if (!src) {
      void vscode.window.showWarningMessage(
        `ProbeLens: no indexed binary was built from ${basename(editor.document.uri.fsPath)}. Build it with debug info (-g), or pick it with "ProbeLens: Select Binary" (and set probelens.pathMappings if it was built elsewhere).`,
      );
      return undefined;
    }
    return { editor, src, line: editor.selection.active.line + 1 };
  }

  private functionAt(index: BinaryIndex, file: string, line: number): IndexedFunction | undefined {
    const f = index.functionAt(file, line);
    if (!f) void vscode.window.showWarningMessage(`ProbeLens: no function of ${basename(index.path)} contains line ${line}.`);
    else if (!f.probeable) {
      void vscode.window.showWarningMessage(`ProbeLens: ${f.name} cannot be probed (${f.reason ?? 'no code of its own'}).`);
      return undefined;
    }
    return f;
  }

  private point(index: BinaryIndex, fn: IndexedFunction, buildFile: string): string {
    return pointFor(fn, { ambiguous: (n) => index.function(n).length > 1, src: basename(buildFile) });
  }

  /** The file as the spec names it: its base name when that is unique in the binary, else the full path. */
  private srcName(index: BinaryIndex, buildFile: string): string {
    const base = basename(buildFile);
    return index.sourceFiles().filter((f) => f === base || f.endsWith(`/${base}`)).length === 1 ? base : buildFile;
  }

  async traceFunction(): Promise<void> {
    const h = await this.here();
    if (!h) return;
    const fn = this.functionAt(h.src.index, h.src.buildFile, h.line);
    if (!fn) return;
    await this.tracing.add(h.src.binary, [`${this.point(h.src.index, fn, h.src.buildFile)} $params`]);
  }

  async traceLine(): Promise<void> {
    const h = await this.here();
    if (!h) return;
    const { index, buildFile, binary } = h.src;
    const point = `${this.srcName(index, buildFile)}:${h.line}`;
    let sites;
    try {
      sites = resolvePoint(parsePoint(point), index);
    } catch (e) {
      void vscode.window.showErrorMessage(`ProbeLens: ${(e as Error).message}`);
      return;
    }
    if (sites.length === 0) {
      const near = index.probeableLines(buildFile).filter((l) => Math.abs(l - h.line) <= 5);
      void vscode.window.showWarningMessage(
        `ProbeLens: line ${h.line} has no code of its own${near.length ? ` (lines nearby that do: ${near.join(', ')})` : ''}.`,
      );
      return;
    }
    const vars = await variablesAtSite(index, sites[0], this.ctx.config.debugDirs).catch((e: unknown) => {
      this.ctx.log(`variables at ${point}: ${(e as Error).message}`);
      return [];
    });
    type Item = vscode.QuickPickItem & { name: string };
    const items: Item[] = vars.map((v) => {
      const usable = !/^(optimized out|unavailable)/.test(v.location);
      return {
        name: v.name,
        label: v.name,
        description: `${v.type} · ${v.kind}`,
        detail: usable ? `at ${v.location}` : `$(warning) ${v.location}`,
        picked: usable,
      };
    });
    let chosen: string[] = [];
    if (items.length) {
      const picks = await vscode.window.showQuickPick(items, {
        canPickMany: true,
        title: `ProbeLens: trace ${point}`,
        placeHolder: 'Variables to capture at this line (none: just count hits)',
      });
      if (!picks) return;
      chosen = picks.map((p) => p.name);
    }
    await this.tracing.add(binary, [[point, ...chosen].join(' ')]);
  }

  async traceWithArguments(): Promise<void> {
    const h = await this.here();
    if (!h) return;
    const { index, buildFile, binary } = h.src;
    const fn = this.functionAt(index, buildFile, h.line);
    if (!fn) return;
    const point = this.point(index, fn, buildFile);
    type Item = vscode.QuickPickItem & { arg: string };
    const items: Item[] = fn.params.map((p) => ({
      arg: p.name,
      label: p.name,
      description: p.type,
      detail: p.location === 'optimized out' ? '$(warning) optimized out at entry' : `at ${p.location}`,
      picked: p.location !== 'optimized out',
    }));
    // Fields behind struct pointers and of structs passed by value, from the DWARF types.
    try {
      const site = resolvePoint(parsePoint(point), index)[0];
      const vars = site ? await variablesAtSite(index, site, this.ctx.config.debugDirs) : [];
      const { access } = await siteContext(index, this.ctx.config.debugDirs);
      for (const c of fieldChoices(
        vars.filter((v) => v.kind === 'param'),
        (o) => access.dwarf.typeOf(o),
      )) {
        items.push({ arg: c.arg, label: c.arg, description: c.type, picked: false });
      }
    } catch (e) {
      this.ctx.log(`fields of ${fn.name}'s parameters: ${(e as Error).message}`);
    }
    items.push({ arg: '$retval', label: '$retval', description: 'the return value (adds a return probe)', picked: false });
    const picks = await vscode.window.showQuickPick(items, { canPickMany: true, title: `ProbeLens: trace ${fn.name} with…` });
    if (!picks) return;
    const entryArgs = picks.filter((p) => p.arg !== '$retval').map((p) => p.arg);
    const text = await vscode.window.showInputBox({
      title: `ProbeLens: probe spec for ${fn.name}`,
      prompt: 'perf-probe syntax: name, p->field, s.field, x:s32, NEW=ARG. Edit freely.',
      value: [point, ...entryArgs].join(' '),
      validateInput: (s) => {
        try {
          parseSpec(s);
          return undefined;
        } catch (e) {
          return (e as Error).message;
        }
      },
    });
    if (!text) return;
    const specs = [text.trim()];
    if (picks.some((p) => p.arg === '$retval')) specs.push(`${point}%return $retval`);
    await this.tracing.add(binary, specs);
  }
}

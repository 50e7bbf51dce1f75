// Says, for the source file in the active editor, which binary ProbeLens traces it in — or that there is none
// and what to do about it. A status bar item always shows the state; the first time a file has no binary, a
// notification offers *Select Binary…* (once per window: a user who dismissed it still has the status bar).
// Tests: test/e2e/binaryDiscovery.test.ts
import { basename } from 'node:path';
import * as vscode from 'vscode';
import type { Binaries, Resolution } from './binaries';
import { BTF_WORDS } from './model/kernelTree';
import { SOURCE_LANGUAGES } from './codeLens';
import { unreachable } from '../shared/unreachable';

export class BinaryStatus implements vscode.Disposable {
  private readonly item = vscode.window.createStatusBarItem('probelens.binary', vscode.StatusBarAlignment.Left, 49);
  private readonly subs: vscode.Disposable[] = [];
  private notified = false;

  /** `btf`: the workspace is a kernel tree traced by the target's BTF (no binary is expected then). */
  constructor(
    private readonly binaries: Binaries,
    private readonly btf: () => boolean = () => false,
  ) {
    this.item.name = 'ProbeLens binary';
    this.item.command = 'probelens.selectBinary';
    this.subs.push(
      binaries.onDidResolve((r) => {
        if (r.file === this.activeFile()) this.show(r);
        if (r.state === 'none') this.notify(r);
      }),
      vscode.window.onDidChangeActiveTextEditor(() => this.refresh()),
      binaries.onDidChangeIndex(() => this.refresh()),
    );
    this.refresh();
  }

  private activeFile(): string | undefined {
    const doc = vscode.window.activeTextEditor?.document;
    if (!doc || doc.uri.scheme !== 'file' || !SOURCE_LANGUAGES.includes(doc.languageId)) return undefined;
    return doc.uri.fsPath;
  }

  refresh(): void {
    const file = this.activeFile();
    if (!file) {
      this.item.hide();
      return;
    }
    const r = this.binaries.resolution(file);
    if (r) this.show(r);
    else {
      // Not asked yet (lenses off, say): ask, which publishes the answer.
      this.show({ state: 'searching', file });
      void this.binaries.forSource(file).catch(() => undefined);
    }
  }

  private show(r: Resolution): void {
    const name = basename(r.file);
    switch (r.state) {
      case 'searching':
        this.item.text = `$(sync~spin) ProbeLens: looking for the binary of ${name}`;
        this.item.tooltip = `Looking through the workspace's binaries for one whose debug info names ${name}.`;
        this.item.backgroundColor = undefined;
        break;
      case 'found': {
        const stage = this.binaries.stage(r.binary);
        const building = stage === 'open-file-ready' || stage === 'indexing';
        const doing = stage === 'open-file-ready' ? `: indexing (${name} ready)` : stage === 'indexing' ? ': indexing' : '';
        this.item.text = `${building ? '$(sync~spin)' : '$(file-binary)'} ${basename(r.label)}${r.others.length ? ` (+${r.others.length})` : ''}${doing}`;
        const progress =
          stage === 'open-file-ready'
            ? ` Its lenses come from the units built from ${name}; the rest of the binary is still being indexed, and probes are armed once it is.`
            : stage === 'indexing'
              ? ' The binary is being indexed.'
              : '';
        this.item.tooltip = `${name} is traced in ${r.label}${r.pinned ? ' (pinned)' : ''}.${progress}${r.others.length ? ` Also built into: ${r.others.join(', ')}.` : ''} Click to choose another binary.`;
        this.item.backgroundColor = undefined;
        break;
      }
      case 'none':
        if (this.btf()) {
          this.item.text = `$(server) ProbeLens: kernel by the target's BTF`;
          this.item.tooltip = `No vmlinux in this kernel tree: ${name}'s functions are probed by name, ${BTF_WORDS}.`;
          this.item.backgroundColor = undefined;
          break;
        }
        this.item.text = `$(warning) ProbeLens: no binary built from ${name}`;
        this.item.tooltip = `${noneDetail(r)} Click to select a binary.`;
        this.item.backgroundColor = new vscode.ThemeColor('statusBarItem.warningBackground');
        break;
      default:
        unreachable(r, 'binary resolution');
    }
    // Screen readers (and the e2e tests) read the whole sentence, not just the short text.
    this.item.accessibilityInformation = { label: String(this.item.tooltip) };
    this.item.show();
  }

  private notify(r: Extract<Resolution, { state: 'none' }>): void {
    // Files outside the workspace (a system header opened by "Go to Definition") are not the user's build.
    if (this.notified || this.btf() || !vscode.workspace.getWorkspaceFolder(vscode.Uri.file(r.file))) return;
    this.notified = true;
    void vscode.window
      .showWarningMessage(`ProbeLens: no binary built from ${basename(r.file)}. ${noneDetail(r)}`, 'Select Binary…')
      .then((pick) => pick && vscode.commands.executeCommand('probelens.selectBinary'));
  }

  dispose(): void {
    for (const s of this.subs) s.dispose();
    this.item.dispose();
  }
}

function noneDetail(r: Extract<Resolution, { state: 'none' }>): string {
  if (r.unreadable.length > 0) {
    const shown = r.unreadable.slice(0, 3).map((u) => `${u.label}: ${u.reason}`);
    return `${r.unreadable.length} binar${r.unreadable.length === 1 ? 'y' : 'ies'} could not be checked — ${shown.join('; ')}${r.unreadable.length > 3 ? '; …' : ''}. Rebuild with -g or install the debug files, or select the binary.`;
  }
  return r.candidates > 0
    ? `None of the workspace's ${r.candidates} binaries has debug info naming it: build it with -g, set probelens.pathMappings if it was built elsewhere, or select the binary.`
    : 'The workspace has no ELF program or library yet: build it with -g, or select the binary.';
}

// Composes ProbeLens's editor features on one Ctx: binaries, targets, tracing, lenses, inline results, the
// probes view, the status bar, the live panel and the commands. Nothing is indexed until a C, C++, Rust or Go
// editor is visible; a single timer redraws live numbers at most a few times a second while hits arrive.
// Tests: test/e2e/showVersion.test.ts, test/e2e/traceLens.test.ts
import * as vscode from 'vscode';
import { registerAggregation } from './aggregation';
import { registerProcesses } from './processes';
import { Binaries } from './binaries';
import { BinaryStatus } from './binaryStatus';
import { ProbeCodeLenses, SOURCE_LANGUAGES } from './codeLens';
import { registerCommand, showVersionCommand } from './commands';
import { Ctx } from './ctx';
import { InlineResults } from './decorations';
import { EditorCommands } from './editorCommands';
import { PanelHost } from './panelHost';
import { ProbesView } from './probesView';
import { StatusBar } from './statusBar';
import { TargetKernels } from './targetKernels';
import { LOCAL_ID, Targets } from './targets';
import { Tracing } from './tracing';
import { INLINE_GAP_MS, Pacer } from './model/pacer';

/** The longest a hit waits for its count beside the line (one redraw per gap at most). */

export function activateFeatures(context: vscode.ExtensionContext): void {
  const ctx = new Ctx(context);
  const binaries = ctx.push(new Binaries(ctx));
  const targets = ctx.push(new Targets(ctx));
  const tracing = ctx.push(new Tracing(ctx, binaries, targets));
  const kernels = ctx.push(new TargetKernels(ctx, binaries, targets));
  tracing.kernelLocation = (spec) => kernels.location(spec);
  const lenses = new ProbeCodeLenses(ctx, binaries, tracing, kernels);
  const inline = ctx.push(new InlineResults(ctx, tracing));
  const view = new ProbesView(tracing, targets, kernels);
  const status = ctx.push(new StatusBar(tracing, targets));
  const panel = ctx.push(new PanelHost(ctx, tracing));
  const editor = new EditorCommands(ctx, binaries, tracing);

  ctx.push(
    vscode.languages.registerCodeLensProvider(
      SOURCE_LANGUAGES.map((language) => ({ language, scheme: 'file' })),
      lenses,
    ),
  );
  ctx.push(vscode.window.createTreeView('probelens.probes', { treeDataProvider: view, showCollapseAll: true }));
  ctx.push(
    tracing.onDidChange(() => {
      view.refresh();
      status.refresh();
      void vscode.commands.executeCommand('setContext', 'probelens.tracing', tracing.isTracing);
    }),
  );
  ctx.push(kernels.onDidChange(() => view.refresh()));
  ctx.push(
    targets.onDidChange(() => {
      view.refresh();
      status.refresh();
    }),
  );

  // The first source editor wakes everything up: the probe set is read and the status bar appears.
  let awake = false;
  const wake = () => {
    if (awake || !vscode.window.visibleTextEditors.some((e) => SOURCE_LANGUAGES.includes(e.document.languageId))) return;
    awake = true;
    status.show();
    ctx.push(new BinaryStatus(binaries, () => !!kernels.currentChoice && 'btf' in kernels.currentChoice));
    void tracing.load();
    // The Probes view shows each target's kernel before anything is traced (when the workspace has one).
    void kernels.refresh();
  };
  ctx.push(vscode.window.onDidChangeVisibleTextEditors(wake));
  wake();

  let timer: NodeJS.Timeout | undefined;
  const schedule = () => {
    if (timer) clearTimeout(timer);
    timer = setTimeout(tick, ctx.config.refreshMs);
  };
  const tick = () => {
    timer = undefined;
    if (tracing.takeDirty()) {
      lenses.refresh();
      inline.refresh();
      view.refresh();
      panel.sync();
    }
    status.refresh();
    if (tracing.isTracing) schedule();
  };
  ctx.push(tracing.onDidChange(() => tracing.isTracing && !timer && schedule()));
  ctx.push({ dispose: () => timer && clearTimeout(timer) });
  // The counts beside traced lines follow the hits closely (within INLINE_GAP_MS), the rest at refreshMs.
  const inlinePacer = new Pacer(INLINE_GAP_MS, () => inline.refresh());
  ctx.push(tracing.onHit(() => inlinePacer.poke()));
  ctx.push({ dispose: () => inlinePacer.dispose() });

  ctx.push(showVersionCommand());
  ctx.push(registerCommand('probelens.selectBinary', () => binaries.select()));
  ctx.push(
    registerCommand('probelens.addProbes', async (args) => {
      await tracing.add(args.binary, args.specs);
    }),
  );
  ctx.push(
    registerCommand('probelens.explainUnprobeable', (fn, reason) =>
      vscode.window.showInformationMessage(
        `ProbeLens: ${fn} cannot be probed: ${reason}. Fully inlined functions have no entry of their own: trace a line inside a caller, or build with -O0 / mark it noinline.`,
      ),
    ),
  );
  ctx.push(registerCommand('probelens.traceFunction', () => editor.traceFunction()));
  ctx.push(registerCommand('probelens.traceLine', () => editor.traceLine()));
  ctx.push(registerCommand('probelens.traceWithArguments', () => editor.traceWithArguments()));
  ctx.push(
    registerCommand('probelens.startTracing', async () => {
      if (!Object.keys(tracing.set.binaries).length) await tracing.load();
      await tracing.start();
    }),
  );
  ctx.push(registerCommand('probelens.stopTracing', () => tracing.stop()));
  ctx.push(
    registerCommand('probelens.addSshTarget', async () => {
      const t = await targets.addSsh();
      if (t && tracing.isTracing) await tracing.start();
    }),
  );
  ctx.push(registerCommand('probelens.selectTargets', () => targets.selectActive()));
  ctx.push(registerCommand('probelens.removeTarget', (n) => targets.remove(n.targetId)));
  ctx.push(
    registerCommand('probelens.cleanUpTarget', async (n) => {
      const t = targets.get(n?.targetId ?? LOCAL_ID);
      if (!t) return;
      await vscode.window.withProgress(
        { location: vscode.ProgressLocation.Notification, title: `ProbeLens: cleaning up ${t.label}` },
        async () => {
          // The agent's HELLO sweeps every probelens_* group and instance whose owner it can prove gone, and names
          // those it cannot judge (owners in PID namespaces its /proc does not show), which it keeps.
          try {
            const undecided = await targets.withAgent(t, async (agent) => agent.hello.undecided);
            ctx.log(`cleaned up ${t.label}: leftovers of dead ProbeLens sessions removed`);
            for (const u of undecided) ctx.log(`cleaned up ${t.label}: kept ${u.group}: cannot tell whether its owner is alive (${u.why})`);
            void vscode.window.showInformationMessage(
              undecided.length
                ? `ProbeLens: ${t.label}: kept ${undecided.length} leftover${undecided.length === 1 ? '' : 's'} whose owner may be alive in another PID namespace (${undecided.map((u) => u.group).join(', ')}); clean up where that namespace is visible, or remove one with "probelens cleanup --force GROUP".`
                : `ProbeLens: ${t.label} has no leftovers of dead sessions.`,
            );
          } catch (e) {
            ctx.log(`clean up ${t.label}: ${(e as Error).message}`);
            void vscode.window.showErrorMessage(`ProbeLens (${t.label}): ${(e as Error).message}`);
          }
        },
      );
    }),
  );
  ctx.push(registerCommand('probelens.enableProbe', (n) => tracing.setEnabled(n.binaryKey, n.spec, true)));
  ctx.push(registerCommand('probelens.disableProbe', (n) => tracing.setEnabled(n.binaryKey, n.spec, false)));
  ctx.push(registerCommand('probelens.removeProbe', (n) => tracing.remove(n.binaryKey, n.spec)));
  registerAggregation(ctx, tracing);
  registerProcesses(ctx, tracing, targets);
  ctx.push(
    registerCommand('probelens.revealProbe', async (n) => {
      const loc = tracing.location(n.binaryKey, n.spec);
      if (!loc) return;
      const pos = new vscode.Position(loc.line - 1, 0);
      await vscode.window.showTextDocument(vscode.Uri.file(loc.file), { selection: new vscode.Range(pos, pos) });
    }),
  );
  ctx.push(registerCommand('probelens.openLivePanel', () => panel.open()));
  ctx.push(registerCommand('probelens.showOutput', () => ctx.output.show(true)));
}

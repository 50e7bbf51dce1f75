// The kernel of each active target, read before anything is traced, when the workspace has a kernel: a vmlinux
// among its binaries, or a kernel tree without one (then its lenses come from the target's BTF and kallsyms).
// Each active target's release and build-id are read by one fixed program (core/target/kernelInfo.ts) when it
// becomes active or the targets change, for the Probes view's kernel row; in a tree without a vmlinux its BTF,
// kallsyms, kprobe blacklist and traceable functions too (core/session/runningKernel.ts, fixed `cat`s), read again
// only when the kernel's release or build-id changed. A failure to read is shown on the row, never thrown.
// Tests: test/e2e/kernelLens.test.ts
import { readdir } from 'node:fs/promises';
import { basename } from 'node:path';
import * as vscode from 'vscode';
import type { RunningKernel } from '../core/probes/kernelBtf';
import { fetchRunningKernel } from '../core/session/runningKernel';
import { describeBuildIdMatch, readKernelInfo } from '../core/target/kernelInfo';
import type { Target } from '../core/target/target';
import type { Binaries } from './binaries';
import type { Ctx } from './ctx';
import { cDefinitions, isKernelTreeRoot, type CDefinition } from './model/cDefinitions';
import {
  btfLenses,
  kernelFunctionStatus,
  kernelSymbolOf,
  type KernelFunctionStatus,
  type KernelRowState,
  type KernelSourceChoice,
} from './model/kernelTree';
import type { LensModel, LiveSpec } from './model/lenses';
import { parseSpec } from '../core/probes/spec';
import type { TargetEntry, Targets } from './targets';

/** A vmlinux session's target kernel, read before arming: which one it is, and whether the vmlinux is its build. */
export interface RunKernel {
  release: string;
  buildId?: string;
  vmlinuxBuildId?: string;
  matches: boolean;
  /** `build-id … matches the vmlinux`, or both ids when they differ */
  text: string;
}

/** The kernel `target` runs, against the vmlinux's build-id; undefined (logged) when it cannot be read. */
export async function readRunKernel(
  target: Target,
  entry: TargetEntry,
  vmlinuxBuildId: string | undefined,
  log: (line: string) => void,
): Promise<RunKernel | undefined> {
  try {
    const k = await readKernelInfo(target, { sudo: entry.sudo });
    const m = describeBuildIdMatch(k.buildId, vmlinuxBuildId);
    log(`${entry.label} runs kernel ${k.release}: ${m.text}`);
    return { release: k.release, buildId: k.buildId, vmlinuxBuildId, matches: m.matches, text: m.text };
  } catch (e) {
    log(`${entry.label}: reading its kernel release failed: ${(e as Error).message}`);
    return undefined;
  }
}

interface TargetKernel {
  /** Which read this is (a newer one replaces it). */
  generation: number;
  row: KernelRowState;
  running?: RunningKernel;
  /** symbol → status, from `running` */
  statuses: Map<string, KernelFunctionStatus | undefined>;
}

export class TargetKernels implements vscode.Disposable {
  private readonly kernels = new Map<string, TargetKernel>();
  private readonly changed = new vscode.EventEmitter<void>();
  /** A target's kernel was read (or could not be). */
  readonly onDidChange = this.changed.event;
  private choiceP?: Promise<KernelSourceChoice | undefined>;
  private choiceNow?: KernelSourceChoice;
  private generation = 0;
  /** Kernel symbol → where the workspace defines it, from the files whose lenses were drawn. */
  private readonly defined = new Map<string, { file: string; line: number }>();

  constructor(
    private readonly ctx: Ctx,
    private readonly binaries: Binaries,
    private readonly targets: Targets,
  ) {
    ctx.push(targets.onDidChange(() => void this.refresh()));
    ctx.push(
      vscode.workspace.onDidChangeConfiguration((e) => {
        if (!['binaries', 'kernelTree'].some((k) => e.affectsConfiguration(`probelens.${k}`))) return;
        this.choiceP = undefined;
        void this.refresh();
      }),
    );
    ctx.push(binaries.onDidChangeIndex(({ rebuilt }) => rebuilt && ((this.choiceP = undefined), void this.refresh())));
  }

  /** What the workspace traces the kernel with: its vmlinux, the target's BTF (a kernel tree without one), or nothing. */
  choice(): Promise<KernelSourceChoice | undefined> {
    this.choiceP ??= (async () => {
      const images = await this.binaries.kernelImages().catch(() => []);
      let c: KernelSourceChoice | undefined;
      if (images.length) c = { vmlinux: { name: basename(images[0].path), buildId: images[0].buildId } };
      else if (await this.isKernelTree()) c = { btf: true };
      this.choiceNow = c;
      return c;
    })();
    return this.choiceP;
  }

  /** The choice once known (the Probes view draws synchronously). */
  get currentChoice(): KernelSourceChoice | undefined {
    return this.choiceNow;
  }

  private async isKernelTree(): Promise<boolean> {
    const setting = this.ctx.config.kernelTree;
    if (setting !== 'auto') return setting === 'yes';
    const root = this.ctx.workspaceFolder;
    if (!root) return false;
    return isKernelTreeRoot(new Set(await readdir(root).catch(() => [])));
  }

  /** Reads every active target's kernel again (when the workspace has a kernel). */
  async refresh(): Promise<void> {
    const choice = await this.choice();
    const active = this.targets.active();
    for (const id of [...this.kernels.keys()]) if (!active.some((t) => t.id === id)) this.kernels.delete(id);
    if (!choice) {
      this.changed.fire();
      return;
    }
    await Promise.all(active.map((t) => this.read(t, 'btf' in choice)));
  }

  private async read(t: TargetEntry, btf: boolean): Promise<void> {
    const old = this.kernels.get(t.id);
    const mine: TargetKernel = { generation: ++this.generation, row: { state: 'reading' }, statuses: new Map() };
    // What was read stays shown (and usable) while it is read again.
    this.kernels.set(t.id, old ? { ...old, generation: mine.generation } : mine);
    if (!old) this.changed.fire();
    const current = () => this.kernels.get(t.id)?.generation === mine.generation;
    let target;
    try {
      target = await this.targets.open(t);
      const info = await readKernelInfo(target, { sudo: t.sudo });
      const row: KernelRowState = { state: 'read', release: info.release, ...(info.buildId ? { buildId: info.buildId } : {}) };
      const same = old?.row.state === 'read' && old.row.release === info.release && old.row.buildId === info.buildId;
      let running = same ? old?.running : undefined;
      if (btf && !running) {
        try {
          running = await fetchRunningKernel(target, t.sudo);
        } catch (e) {
          row.btfError = (e as Error).message;
        }
      }
      if (!current()) return;
      this.kernels.set(t.id, {
        generation: mine.generation,
        row,
        running,
        statuses: old && running === old.running ? old.statuses : new Map(),
      });
      this.ctx.log(
        `${t.label} runs kernel ${info.release}${info.buildId ? ` (build-id ${info.buildId})` : ''}${btf ? (running ? ': its BTF and kallsyms read' : `: ${row.btfError}`) : ''}`,
      );
    } catch (e) {
      if (!current()) return;
      this.kernels.set(t.id, { generation: mine.generation, row: { state: 'failed', error: (e as Error).message }, statuses: new Map() });
      this.ctx.log(`${t.label}: reading its kernel failed: ${(e as Error).message}`);
    } finally {
      void target?.close();
    }
    this.changed.fire();
  }

  /** The Probes view's row of a target, when the workspace has a kernel. */
  row(targetId: string): KernelRowState | undefined {
    return this.choiceNow ? this.kernels.get(targetId)?.row : undefined;
  }

  /** What the first active target whose running kernel was read says of `symbol`. */
  private status(symbol: string): KernelFunctionStatus | undefined {
    for (const t of this.targets.active()) {
      const k = this.kernels.get(t.id);
      if (!k?.running) continue;
      if (!k.statuses.has(symbol)) k.statuses.set(symbol, kernelFunctionStatus(k.running, symbol));
      return k.statuses.get(symbol);
    }
    return undefined;
  }

  /**
   * Lenses of a C file of a kernel tree without a vmlinux, from its definitions and the targets' running kernel;
   * none until a target's kernel has been read (onDidChange then asks again).
   */
  async lenses(
    file: string,
    text: string,
    opts: { trace: boolean; returns: boolean; latency: boolean },
    live: (specs: string[]) => LiveSpec | undefined,
  ): Promise<LensModel[]> {
    const choice = await this.choice();
    if (!choice || !('btf' in choice)) return [];
    if (!this.kernels.size) void this.refresh();
    const defs: CDefinition[] = cDefinitions(text);
    const status = (s: string) => this.status(s);
    for (const d of defs) {
      const got = kernelSymbolOf(d, status);
      if (got) this.defined.set(got.symbol, { file, line: d.line });
    }
    return btfLenses(defs, status, opts, live);
  }

  /** Where the workspace defines the function of a running-kernel spec (for the counts beside its line). */
  location(spec: string): { file: string; line: number } | undefined {
    try {
      const p = parseSpec(spec).point;
      return p.kind === 'function' ? this.defined.get(p.func) : undefined;
    } catch {
      return undefined;
    }
  }

  dispose(): void {
    this.changed.dispose();
  }
}

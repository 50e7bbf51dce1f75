// The Probes view: targets → sessions (one binary on that target) → probes, with state and hit counts. In a
// workspace with a kernel (a vmlinux, or a kernel tree traced by the target's BTF) each target first lists its
// kernel, read before anything is traced (targetKernels.ts): its release, and whether its build-id is the
// vmlinux's (both ids when not; arming is then refused), or that there is no vmlinux and BTF is used.
// Inline actions: enable/disable/remove on probes, clean up and remove on targets; start/stop in the title. A probe's
// context menu counts it in the kernel ("Aggregate in the Kernel") or streams it again ("Stream Hits").
// Tests: test/e2e/probeSet.test.ts, test/e2e/sshTarget.test.ts, test/e2e/traceLine.test.ts, test/e2e/kernelLens.test.ts
import { basename } from 'node:path';
import * as vscode from 'vscode';
import { command, type ProbeNodeArg, type SessionNodeArg, type TargetNodeArg } from './commands';
import { formatCount } from './model/format';
import { BTF_KEY, BTF_WORDS, kernelRow } from './model/kernelTree';
import type { TargetKernels } from './targetKernels';
import type { TargetEntry, Targets } from './targets';
import type { Tracing } from './tracing';
import { nameRecord } from '../shared/names';

interface KernelNode {
  kind: 'kernel';
  targetId: string;
}
type ProbeNode = ProbeNodeArg & { targetId: string };
type Node = TargetNodeArg | SessionNodeArg | KernelNode | ProbeNode;

const STATE_ICON: Record<string, string> = nameRecord({
  armed: 'pass-filled',
  pending: 'circle-large-outline',
  error: 'error',
  stale: 'history',
  disabled: 'circle-slash',
  starting: 'loading~spin',
  failed: 'error',
  stopped: 'debug-stop',
  idle: 'circle-large-outline',
});

export class ProbesView implements vscode.TreeDataProvider<Node> {
  private readonly changed = new vscode.EventEmitter<Node | undefined>();
  readonly onDidChangeTreeData = this.changed.event;

  constructor(
    private readonly tracing: Tracing,
    private readonly targets: Targets,
    private readonly kernels: TargetKernels,
  ) {}

  refresh(): void {
    this.changed.fire(undefined);
  }

  getChildren(node?: Node): Node[] {
    if (!node) return this.targets.all().map((t) => ({ kind: 'target', targetId: t.id }));
    if (node.kind === 'target') {
      const kernel: Node[] = this.kernels.row(node.targetId) ? [{ kind: 'kernel', targetId: node.targetId }] : [];
      return kernel.concat(
        Object.keys(this.tracing.set.binaries).map((binaryKey) => ({ kind: 'session', targetId: node.targetId, binaryKey })),
      );
    }
    if (node.kind === 'session') {
      return (this.tracing.set.binaries[node.binaryKey] ?? []).map((e) => ({
        kind: 'probe',
        binaryKey: node.binaryKey,
        spec: e.spec,
        targetId: node.targetId,
      }));
    }
    return [];
  }

  /** The binary's streaming run on the target, else one of its kernel-counting runs there. */
  private run(targetId: string, key: string) {
    const runs = this.tracing.runsOf(key).filter((r) => r.target.id === targetId);
    return runs.find((r) => r.aggSpec === undefined) ?? runs[0];
  }

  getTreeItem(node: Node): vscode.TreeItem {
    if (node.kind === 'target') {
      const t = this.targets.get(node.targetId) as TargetEntry;
      const active = this.targets.active().some((a) => a.id === t.id);
      const item = new vscode.TreeItem(t.label, vscode.TreeItemCollapsibleState.Expanded);
      item.id = `target:${t.id}`;
      item.description = `${t.kind === 'local' ? 'this machine' : 'SSH'}${t.sudo ? ' · sudo -n' : ''}${active ? '' : ' · not traced'}`;
      item.iconPath = new vscode.ThemeIcon(t.kind === 'local' ? 'vm' : 'remote');
      item.contextValue = `target.${t.kind}${active ? '.active' : ''}`;
      return item;
    }
    if (node.kind === 'session') {
      const r = this.run(node.targetId, node.binaryKey);
      const state = r ? (r.stale && r.state === 'armed' ? 'stale' : r.state) : 'idle';
      const item = new vscode.TreeItem(basename(node.binaryKey), vscode.TreeItemCollapsibleState.Expanded);
      item.id = `session:${node.targetId}:${node.binaryKey}`;
      const only = this.tracing.chosenProcess(node.targetId, node.binaryKey);
      item.description =
        state +
        (only ? ` · PID ${only.pid} only${only.nsPid !== only.pid ? ` (${only.nsPid} in its namespace)` : ''}` : '') +
        (r?.error ? ` · ${r.error}` : '') +
        (node.binaryKey === BTF_KEY ? ` · ${BTF_WORDS}` : '');
      item.tooltip = `${this.tracing.pathOf(node.binaryKey)}\n${item.description}`;
      item.iconPath = new vscode.ThemeIcon(STATE_ICON[state] ?? 'circle-large-outline');
      item.contextValue = `session.${state}${node.binaryKey === BTF_KEY ? '.kernel' : ''}`;
      return item;
    }
    if (node.kind === 'kernel') {
      const k = this.kernels.row(node.targetId) ?? { state: 'reading' };
      const choice = this.kernels.currentChoice ?? { btf: true };
      const row = kernelRow(k, choice);
      const item = new vscode.TreeItem(row.label, vscode.TreeItemCollapsibleState.None);
      item.id = `kernel:${node.targetId}`;
      item.description = row.description;
      item.tooltip =
        k.state === 'read'
          ? [
              `running kernel ${k.release}`,
              `build-id ${k.buildId ?? 'none'}`,
              'vmlinux' in choice
                ? `${choice.vmlinux.name}: build-id ${choice.vmlinux.buildId ?? 'none'}`
                : `no vmlinux: probes come ${BTF_WORDS}`,
              row.description,
            ].join('\n')
          : row.description;
      item.iconPath = new vscode.ThemeIcon(k.state === 'reading' ? 'loading~spin' : row.ok ? 'pass' : 'warning');
      item.contextValue = row.ok ? 'kernel.matches' : 'kernel.differs';
      return item;
    }
    const state = this.tracing.state(node.binaryKey, node.spec);
    const live = this.tracing.runsOf(node.binaryKey).some((r) => r.target.id === node.targetId && r.session);
    const host = this.targets.get(node.targetId)?.label;
    const views = live ? this.tracing.views(node.binaryKey).filter((v) => v.host === host) : [];
    const hits = this.tracing.stats(node.binaryKey, node.spec, views).hits;
    const aggregate = !!this.tracing.set.binaries[node.binaryKey]?.find((e) => e.spec === node.spec)?.aggregate;
    const item = new vscode.TreeItem(node.spec, vscode.TreeItemCollapsibleState.None);
    item.id = `probe:${node.targetId}:${node.binaryKey}:${node.spec}`;
    item.description = `${state}${views.length ? ` · ${formatCount(hits)} ${hits === 1 ? 'hit' : 'hits'}` : ''}${
      aggregate ? (this.tracing.canAggregate(node.targetId) === false ? ' · streamed (no hist triggers)' : ' · in the kernel') : ''
    }`;
    const problems = this.tracing.problems(node.binaryKey, node.spec);
    item.tooltip = [node.spec, item.description, ...problems].join('\n');
    item.iconPath = new vscode.ThemeIcon(STATE_ICON[state] ?? 'circle-large-outline');
    item.contextValue = `${state === 'disabled' ? 'probe.disabled' : 'probe.enabled'}.${aggregate ? 'aggregated' : 'streamed'}`;
    item.command = command('probelens.revealProbe', 'Show in Source', { kind: 'probe', binaryKey: node.binaryKey, spec: node.spec });
    return item;
  }
}

// "ProbeLens: Trace Only a Process…": the processes on a target that run the local build (its executable, or a library
// they map, holds the build's GNU build-id) in any mount and PID namespace, a container's too, with the PID on the
// target and the PID the process sees; the one picked is traced alone, on its own copy of the build.
// Tests: test/e2e/containerProcess.test.ts
import { basename } from 'node:path';
import * as vscode from 'vscode';
import { buildIdBytes, mappedName } from '../core/session/tracedProcess';
import type { BuildProcess } from '../core/tracefs/agentClient';
import { registerCommand, type SessionNodeArg } from './commands';
import type { Ctx } from './ctx';
import { BTF_KEY } from './model/kernelTree';
import type { Targets } from './targets';
import type { Tracing } from './tracing';

/** One quick-pick row per process, and one for every process of the build at its path. */
function processItems(
  rows: readonly BuildProcess[],
  chosen: BuildProcess | undefined,
  path: string,
): Array<vscode.QuickPickItem & { process?: BuildProcess }> {
  return [
    { label: `${chosen ? '' : '$(check) '}Every process`, description: `the build at ${path}` },
    ...rows.map((p) => ({
      label: `${chosen?.pid === p.pid ? '$(check) ' : ''}PID ${p.pid}`,
      description: p.nsPid === p.pid ? 'in this PID namespace' : `PID ${p.nsPid} in its own PID namespace`,
      detail: `its build: ${p.path}`,
      process: p,
    })),
  ];
}

export function registerProcesses(ctx: Ctx, tracing: Tracing, targets: Targets): void {
  ctx.push(
    registerCommand('probelens.chooseProcess', async (node) => {
      const where = node ?? (await pickSession(tracing, targets));
      if (!where) return;
      const t = targets.get(where.targetId);
      if (!t) return;
      const binary = tracing.pathOf(where.binaryKey);
      const id = buildIdBytes(binary);
      if (!id) {
        void vscode.window.showErrorMessage(
          `ProbeLens: ${basename(binary)} has no GNU build-id: the processes running it cannot be told from others'.`,
        );
        return;
      }
      let rows: BuildProcess[];
      try {
        rows = await vscode.window.withProgress(
          { location: vscode.ProgressLocation.Notification, title: `ProbeLens: processes of ${basename(binary)} on ${t.label}` },
          () => targets.withAgent(t, (agent) => agent.processes(id.offset, id.length, id.hex, mappedName(binary))),
        );
      } catch (e) {
        ctx.log(`processes on ${t.label}: ${(e as Error).message}`);
        void vscode.window.showErrorMessage(`ProbeLens (${t.label}): ${(e as Error).message}`);
        return;
      }
      ctx.log(`${t.label}: ${rows.length} process${rows.length === 1 ? '' : 'es'} run ${binary}'s build (build-id ${id.hex})`);
      if (!rows.length) {
        void vscode.window.showInformationMessage(
          `ProbeLens: no process on ${t.label} runs ${basename(binary)}'s build (build-id ${id.hex}).`,
        );
        return;
      }
      const chosen = tracing.chosenProcess(t.id, where.binaryKey);
      const pick = await vscode.window.showQuickPick(processItems(rows, chosen, binary), {
        title: `ProbeLens: trace ${basename(binary)} on ${t.label} in`,
        matchOnDescription: true,
        matchOnDetail: true,
      });
      if (!pick) return;
      await tracing.chooseProcess(t.id, where.binaryKey, pick.process);
    }),
  );
}

/** From the palette: the probe set's binary on an active target, asked only when there is more than one. */
async function pickSession(tracing: Tracing, targets: Targets): Promise<SessionNodeArg | undefined> {
  const keys = Object.keys(tracing.set.binaries).filter((k) => k !== BTF_KEY);
  const rows = targets.active().flatMap((t) => keys.map((k) => ({ targetId: t.id, binaryKey: k, label: `${basename(k)} on ${t.label}` })));
  if (!rows.length) {
    void vscode.window.showInformationMessage('ProbeLens: trace a function first; then choose the process to trace it in.');
    return undefined;
  }
  const pick = rows.length === 1 ? rows[0] : await vscode.window.showQuickPick(rows, { title: 'ProbeLens: which binary, on which target' });
  return pick && { kind: 'session', targetId: pick.targetId, binaryKey: pick.binaryKey };
}

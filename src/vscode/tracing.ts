// The workspace's tracing: the probe set (`.vscode/probelens.json`), and while tracing one TraceSession per
// (active target, binary). Adding, removing, enabling or disabling a probe — from the editor, the Probes view
// or a hand edit (or checkout) of the file — is applied in place to that binary's sessions on every target:
// only the probes concerned are touched, the others keep counting. A spec the compiler or the kernel refuses
// is marked in error and nothing else changes. A binary rebuilt under armed probes marks them stale.
// It needs VS Code, so it is driven in code-server by the e2e tests; what it shows is computed by src/vscode/model,
// whose tests are in test/unit/vscode/model.
// A kernel image (vmlinux) is traced the same way, as kprobes; its run also says which kernel the target runs.
// A probe toggled to aggregate is counted in the kernel (hist triggers) by a session of its own per target, so
// toggling, adding or removing it touches nothing else; on a target whose kernel has no hist triggers it streams
// with the rest, and says so.
// The running kernel without a vmlinux (key `kernel`, model/kernelTree.ts) is a session compiled from its BTF.
// Tests: test/e2e/liveEdit.test.ts, test/e2e/probeSet.test.ts, test/e2e/traceLens.test.ts, test/e2e/traceLine.test.ts,
//   test/e2e/sshTarget.test.ts, test/e2e/kernelLens.test.ts, test/e2e/aggregateToggle.test.ts
import { basename } from 'node:path';
import * as vscode from 'vscode';
import type { BinaryIndex } from '../core/index/binaryIndex';
import { resolvePoint } from '../core/probes/resolve';
import { siteCounts } from '../core/probes/sites';
import { parseSpec } from '../core/probes/spec';
import { TraceSession } from '../core/session/traceSession';
import { describeDisabled, describeFileChange, describeGuard, type FileChange } from '../core/session/fileWatch';
import { knownCaps, someTargetArmsPerSite } from '../core/session/targetCaps';
import { isKernelImage, isKernelModule } from '../core/probes/kernel';
import { siteContext } from '../core/probes/variables';
import type { Target } from '../core/target/target';
import type { BuildProcess } from '../core/tracefs/agentClient';
import type { Hit } from '../core/tracefs/hitParser';
import type { Binaries } from './binaries';
import type { Ctx, Scope } from './ctx';
import { BTF_KEY } from './model/kernelTree';
import { buildToLocal, remoteBinaryPath } from './model/pathMapping';
import {
  addProbe,
  aggregatedSpecs,
  binaryFromKey,
  binaryKey,
  changedBinaries,
  emptyProbeSet,
  enabledSpecs,
  planEdits,
  removeProbe,
  setProbeAggregate,
  setProbeEnabled,
  streamedEntries,
  type ProbeSet,
} from './model/probeSet';
import { ProbeSetFile } from './probeSetFile';
import { noHistNote } from './model/aggregateOffer';
import { allowedSites, siteQuestion } from './model/siteLimit';
import { statsForSpec, type ProbeState, type SessionView, type SpecStats } from './model/stats';
import { readRunKernel } from './targetKernels';
import type { TargetEntry, Targets } from './targets';
import { noteArmed, noteRefused, runId, viewOf, type Run, type SpecLocation } from './run';

export class Tracing implements vscode.Disposable {
  set: ProbeSet = emptyProbeSet();
  private readonly runs = new Map<string, Run>();
  /** Specs the user agreed to arm although they have more sites than the limit, with their size. */
  private readonly agreedSites = new Map<string, number>();
  private connections = new Map<string, Promise<Target>>();
  /** A binary's streaming run on a target (runId) → the one process traced there (chooseProcess). */
  private readonly processes = new Map<string, BuildProcess>();
  private tracing = false;
  /** Where the workspace defines a running-kernel spec's function (TargetKernels.location). */
  kernelLocation: (spec: string) => SpecLocation | undefined = () => undefined;
  private generation = 0;
  private readonly changed = new vscode.EventEmitter<void>();
  /** Probe set, run state or counts changed (hit-driven changes are coalesced by the listeners' timers). */
  readonly onDidChange = this.changed.event;
  private readonly hitListeners = new Set<(hit: Hit, run: Run) => void>();
  private readonly locations = new Map<string, SpecLocation | null>();
  /** Counts moved since the last `takeDirty()`. */
  private dirty = false;
  /** Per run, the probed files whose change was already said (a restarted watcher may report one again). */
  private readonly fileNotices = new WeakMap<Run, Set<string>>();
  private readonly file: ProbeSetFile;
  /** The kernel-counting runs' figures at the last takeDirty(), in short. */
  private kernelFigures = '';
  /** Target id → whether its kernel has hist triggers, once a session there has said. */
  private readonly hist = new Map<string, boolean>();

  constructor(
    private readonly ctx: Ctx,
    private readonly binaries: Binaries,
    private readonly targets: Targets,
  ) {
    ctx.push(
      binaries.onDidChangeIndex(({ binary, rebuilt }) => {
        this.locations.clear();
        if (!rebuilt) return;
        let any = false;
        for (const r of this.runs.values()) {
          if (r.binary === binary && r.state === 'armed') {
            r.stale = true;
            any = true;
          }
        }
        if (any) {
          ctx.log(`${binary} was rebuilt: its armed probes are stale (they watch the old build); Start Tracing re-arms them`);
          void vscode.window
            .showWarningMessage(`ProbeLens: ${basename(binary)} was rebuilt; armed probes are stale.`, 'Re-arm')
            .then((c) => c && this.start());
        }
        this.changed.fire();
      }),
    );
    this.file = new ProbeSetFile(ctx, (next, file) => this.onFileEdit(next, file));
  }

  get isTracing(): boolean {
    return this.tracing;
  }

  /** The process the user chose to trace `key` in on target `targetId` (ProbeLens: Trace Only a Process…). */
  chosenProcess(targetId: string, key: string): BuildProcess | undefined {
    return this.processes.get(runId(targetId, key));
  }

  /**
   * Traces `key` on `targetId` in one process only (undefined: in every process of the build at its path): its
   * probes go on that process's copy of the build, a container's too, filtered by its PID. Re-arms if tracing.
   */
  async chooseProcess(targetId: string, key: string, p: BuildProcess | undefined): Promise<void> {
    if (p) this.processes.set(runId(targetId, key), p);
    else this.processes.delete(runId(targetId, key));
    this.changed.fire();
    const t = this.targets.active().find((a) => a.id === targetId);
    if (this.tracing && t) await this.rearmOn(t, key);
  }

  onHit(f: (hit: Hit, run: Run) => void): vscode.Disposable {
    this.hitListeners.add(f);
    return { dispose: () => this.hitListeners.delete(f) };
  }

  /** Counts moved since the last call: hits or loss arrived, or the kernel's figures (which come without hits) moved. */
  takeDirty(): boolean {
    const d = this.dirty;
    this.dirty = false;
    const kernel = [...this.runs.values()]
      .filter((r) => r.aggSpec !== undefined && r.session?.state === 'armed')
      .map((r) => {
        const s = r.session!.aggregates.snapshot();
        return `${Object.values(s.hits).join(',')}/${Object.values(s.latency).map((l) => l.count)}/${s.lost}`;
      })
      .join(';');
    const moved = kernel !== this.kernelFigures;
    this.kernelFigures = kernel;
    return d || moved;
  }

  allRuns(): Run[] {
    return [...this.runs.values()];
  }

  // ---- the probe set file ----

  async load(): Promise<void> {
    this.set = (await this.file.load()) ?? this.set;
    this.changed.fire();
  }

  private save(): Promise<void> {
    return this.file.save(this.set);
  }

  /** The file changed on disk (a hand edit, a `git checkout`): the new set replaces the old, applied in place. */
  private async onFileEdit(next: ProbeSet, file: string): Promise<void> {
    const keys = changedBinaries(this.set, next);
    this.set = next;
    this.ctx.log(`${file} changed on disk: applying it to ${keys.length ? keys.join(', ') : 'nothing (no probe changed)'}`);
    this.changed.fire();
    if (this.tracing) await Promise.all(keys.map((k) => this.apply(k)));
  }

  keyOf(binary: string): string {
    return binaryKey(binary, this.ctx.workspaceFolder);
  }

  pathOf(key: string): string {
    return binaryFromKey(key, this.ctx.workspaceFolder);
  }

  // ---- editing the set ----

  async add(binary: string, specs: string[]): Promise<void> {
    if (!(await this.agreeToSites(binary, specs))) return;
    const key = this.keyOf(binary);
    for (const s of specs) addProbe(this.set, key, s);
    await this.save();
    this.changed.fire();
    if (!this.tracing) return this.start();
    // Arming is what the user asked for: a spec refused before is tried again.
    for (const r of this.runsOf(key)) for (const s of specs) r.specErrors.delete(s);
    await this.apply(key);
  }

  /**
   * Asks before adding a spec that arms more than the site limit on a target where each site is its own event
   * (the CLI needs --max-sites for it there).
   */
  private async agreeToSites(binary: string, specs: string[]): Promise<boolean> {
    if (this.keyOf(binary) === BTF_KEY) return true; // one site per spec
    let index: BinaryIndex;
    try {
      index = await this.binaries.index(binary);
    } catch {
      return true; // arming reports the index problem itself
    }
    // Only where each site is an event of its own does teardown grow with the sites (a target without immediates).
    const q = someTargetArmsPerSite() ? siteQuestion(siteCounts(specs, index)) : undefined;
    if (!q) return true;
    const arm = 'Arm all sites';
    if ((await vscode.window.showWarningMessage(`ProbeLens: ${q.message}`, { modal: true }, arm)) !== arm) return false;
    for (const c of q.over) this.agreedSites.set(c.spec, c.sites);
    return true;
  }

  async remove(key: string, spec: string): Promise<void> {
    if (!removeProbe(this.set, key, spec)) return;
    await this.save();
    this.changed.fire();
    if (this.tracing) await this.apply(key);
  }

  async setEnabled(key: string, spec: string, enabled: boolean): Promise<void> {
    if (!setProbeEnabled(this.set, key, spec, enabled)) return;
    await this.save();
    this.changed.fire();
    if (this.tracing) await this.apply(key);
  }

  /** Counts `spec` in the kernel (`on`) or streams it again, in place on every target. */
  async setAggregate(key: string, spec: string, on: boolean): Promise<void> {
    if (!setProbeAggregate(this.set, key, spec, on)) return;
    await this.save();
    this.changed.fire();
    for (const t of this.targets.active())
      if (on && this.hist.get(t.id) === false) void vscode.window.showWarningMessage(`ProbeLens: ${noHistNote(t.label)}.`);
    if (this.tracing) await this.apply(key);
  }

  /** Whether the target can count in the kernel, as far as known (unknown: try, and fall back if it cannot). */
  canAggregate(targetId: string): boolean | undefined {
    return this.hist.get(targetId);
  }

  // ---- sessions ----

  /** "Start Tracing": arm the whole set on every active target. */
  async start(): Promise<void> {
    const keys = Object.keys(this.set.binaries).filter((k) => enabledSpecs(this.set, k).length > 0);
    if (keys.length === 0) {
      void vscode.window.showInformationMessage(
        'ProbeLens: no probes to arm yet. Click "Trace" above a function, or right-click a line → "Trace this line".',
      );
      return;
    }
    await this.stop();
    // Runs on targets no longer traced (a refusal there, the numbers they had) are not this tracing's.
    const active = new Set(this.targets.active().map((t) => t.id));
    for (const [id, r] of this.runs) if (!active.has(r.target.id)) this.runs.delete(id);
    this.tracing = true;
    this.ctx.renewSessionScope();
    this.changed.fire();
    await Promise.all(keys.map((k) => this.rearm(k)));
  }

  /** Stop every session; each agent removes its probes and instance before it exits. */
  async stop(): Promise<void> {
    const runs = [...this.runs.values()];
    this.tracing = false;
    this.generation++;
    await Promise.all(runs.map((r) => this.stopRun(r)));
    this.ctx.renewSessionScope();
    this.connections = new Map();
    this.changed.fire();
  }

  private async stopRun(r: Run): Promise<void> {
    const s = r.session;
    r.session = undefined;
    if (s?.aggregates) r.final = viewOf(r, s);
    if (s) {
      try {
        const sum = await s.stop();
        r.mismatch = sum.mismatch;
        // Kernel probes' missed calls are known only at the stop: the final figures take them.
        if (sum.missed && s.aggregates) r.final = viewOf(r, s);
        const missed = Object.entries(sum.missed ?? {}).map(([probe, n]) => `${n} of ${probe}`);
        this.ctx.log(
          `stopped on ${sum.host}: ${Object.values(sum.hits).reduce((a, b) => a + b, 0)} hits, ${sum.lost} lost${missed.length ? ` (calls the kernel missed: ${missed.join(', ')}; a return probe with every instance in use, or a hit inside another probe's handler)` : ''}${sum.mismatch ? `, mismatch ${sum.mismatch} (received + lost differs from the kernel's count)` : ''}`,
        );
      } catch (e) {
        this.ctx.log(
          `stopping on ${r.target.label} failed (${(e as Error).message}); the agent cleans up by itself when its client is gone`,
        );
        s.abandon();
      }
    }
    if (r.state !== 'failed') r.state = 'stopped';
  }

  private connection(t: TargetEntry, scope: Scope): Promise<Target> {
    let c = this.connections.get(t.id);
    if (!c) {
      c = this.targets.open(t);
      this.connections.set(t.id, c);
      c.then(
        (target) => scope.add(() => target.close()),
        () => this.connections.delete(t.id),
      );
    }
    return c;
  }

  /**
   * Brings one binary's sessions on every active target in line with the set, in place: a running session
   * gets only the additions, removals and toggles; a target without one gets a new session.
   */
  private async apply(key: string): Promise<void> {
    await Promise.all(
      this.targets.active().map(async (t) => {
        const run = this.runs.get(runId(t.id, key));
        const streaming = async () => {
          // A rebuilt binary's session watches the old build: new definitions would land at its offsets.
          if (run?.session?.state === 'armed' && !run.stale) return this.applyTo(run);
          // Starting: it applies the set as it is once armed (see startRun).
          if (run?.state === 'starting') return;
          await this.rearmOn(t, key);
        };
        await Promise.all([streaming(), this.applyAggregated(t, key)]);
      }),
    );
  }

  /**
   * The binary's kernel-counting runs on `t` in line with the set: one session per aggregated spec (`restart`: all
   * anew; else only those missing or failed), and the runs of specs no longer aggregated, or disabled, stopped.
   */
  private async applyAggregated(t: TargetEntry, key: string, restart = false): Promise<void> {
    const want = new Set(aggregatedSpecs(this.set, key, this.hist.get(t.id) !== false));
    const jobs: Array<Promise<void>> = [];
    for (const [id, r] of this.runs) {
      if (r.aggSpec === undefined || r.target.id !== t.id || r.binaryKey !== key) continue;
      if (!restart && r.state !== 'failed' && want.delete(r.aggSpec)) continue; // running as wanted
      this.runs.delete(id);
      jobs.push(this.stopRun(r));
    }
    for (const spec of want) jobs.push(this.rearmOn(t, key, spec));
    await Promise.all(jobs);
    this.changed.fire();
  }

  private applyTo(run: Run): Promise<void> {
    const step = run.queue.then(async () => {
      const session = run.session;
      if (!session || session.state !== 'armed') return;
      const wanted = streamedEntries(this.set, run.binaryKey, this.hist.get(run.target.id) !== false);
      if (!wanted.length) return this.dropRun(run);
      const live = [...new Set(session.probes.map((p) => p.spec))].map((spec) => ({ spec, enabled: session.isEnabled(spec) }));
      const plan = planEdits(live, wanted, new Set(run.specErrors.keys()));
      const where = run.target.label;
      for (const spec of plan.remove) {
        this.ctx.log(`${where}: removing ${spec}`);
        await session.remove(spec);
        run.specWarnings.delete(spec);
      }
      for (const spec of plan.disable) await session.setEnabled(spec, false);
      for (const spec of plan.enable) await session.setEnabled(spec, true);
      if (plan.add.length) {
        this.ctx.log(`${where}: adding ${plan.add.join(' | ')}`);
        const r = await session.add(plan.add, allowedSites(plan.add, this.agreedSites));
        noteArmed(this.ctx, run, r.added);
        for (const x of r.refused) noteRefused(this.ctx, run, x.spec, x.error);
      }
      // Specs no longer in the set keep no diagnostics.
      for (const spec of [...run.specErrors.keys()]) if (!wanted.some((w) => w.spec === spec)) run.specErrors.delete(spec);
      this.changed.fire();
    });
    run.queue = step.catch((e: unknown) => {
      this.ctx.log(`${run.target.label}: ${(e as Error).message}`);
      // An edit overtaken by Stop Tracing is not an error worth a notification.
      if (run.session?.state === 'armed') void vscode.window.showErrorMessage(`ProbeLens (${run.target.label}): ${(e as Error).message}`);
    });
    return run.queue as Promise<void>;
  }

  /** The binary has no probes left on this target: its session ends (the agent removes everything). */
  private async dropRun(run: Run): Promise<void> {
    const id = runId(run.target.id, run.binaryKey, run.aggSpec);
    if (this.runs.get(id) === run) this.runs.delete(id);
    await this.stopRun(run);
    this.changed.fire();
  }

  /** (Re)starts the sessions of one binary on every active target with its enabled specs. */
  private async rearm(key: string): Promise<void> {
    await Promise.all(this.targets.active().map((t) => Promise.all([this.rearmOn(t, key), this.applyAggregated(t, key, true)])));
  }

  /** (Re)starts the binary's streaming session on `t`, or with `aggSpec` that spec's kernel-counting one. */
  private async rearmOn(t: TargetEntry, key: string, aggSpec?: string): Promise<void> {
    const binary = this.pathOf(key);
    const kernelCounts = this.hist.get(t.id) !== false;
    const specs =
      aggSpec !== undefined ? [aggSpec] : streamedEntries(this.set, key, kernelCounts).flatMap((e) => (e.enabled ? [e.spec] : []));
    const scope = this.ctx.sessionScope;
    const id = runId(t.id, key, aggSpec);
    const old = this.runs.get(id);
    if (old) await this.stopRun(old);
    if (specs.length === 0) {
      this.runs.delete(id);
      this.changed.fire();
      return;
    }
    const run: Run = {
      target: t,
      binaryKey: key,
      binary,
      state: 'starting',
      stale: false,
      specErrors: new Map(),
      specWarnings: new Map(),
      generation: this.generation,
      queue: Promise.resolve(),
      ...(aggSpec !== undefined ? { aggSpec } : {}),
    };
    this.runs.set(id, run);
    this.changed.fire();
    let target: Target | undefined;
    try {
      const index = key === BTF_KEY ? undefined : await this.binaries.index(binary);
      target = await this.connection(t, scope);
      const image = index && (await siteContext(index, this.ctx.config.debugDirs)).access.image;
      // A module's .ko is compared with its loaded module by the session itself, not with the kernel's notes.
      if (index && image && isKernelImage(image) && !isKernelModule(image)) {
        // The session compares the build-ids itself before arming; one that cannot be read here still gets that check.
        const k = (run.kernel = await readRunKernel(target, run.target, index.buildId, (l) => this.ctx.log(`${l} (${binary})`)));
        // Kprobes placed by another build's DWARF would land mid-instruction: refused, as the CLI refuses it.
        if (k?.buildId && k.vmlinuxBuildId && !k.matches)
          throw new Error(
            `the kernel on ${t.label} (${k.release}) is not the build of ${basename(binary)}: ${k.text}; use the vmlinux of the kernel it runs`,
          );
      }
      await this.startRun(run, index, target, specs);
    } catch (e) {
      run.state = 'failed';
      run.error = (e as Error).message;
      this.ctx.log(`${t.label}: ${run.error}`);
      if (aggSpec !== undefined && target && knownCaps(target)?.has('hist') === false) return this.noHist(t, run);
      void vscode.window.showErrorMessage(`ProbeLens (${t.label}): ${run.error}`);
    }
    this.changed.fire();
  }

  /** The target cannot count in the kernel: its aggregated probes stream with the rest there (said on each). */
  private async noHist(t: TargetEntry, run: Run): Promise<void> {
    this.learnHist(t, false);
    if (this.runs.get(runId(t.id, run.binaryKey, run.aggSpec)) === run) this.runs.delete(runId(t.id, run.binaryKey, run.aggSpec));
    this.changed.fire();
    if (this.tracing) await this.apply(run.binaryKey);
  }

  /** What a session said of its target's hist triggers; a target found without them is named once, if it matters. */
  private learnHist(t: TargetEntry, can: boolean): void {
    const was = this.hist.get(t.id);
    this.hist.set(t.id, can);
    if (!can && was !== false && Object.values(this.set.binaries).some((l) => l.some((e) => e.aggregate && e.enabled)))
      void vscode.window.showWarningMessage(`ProbeLens: ${noHistNote(t.label)}.`);
  }

  /**
   * A probed file changed on the target (see core/session/fileWatch.ts): said once per file, with a Re-arm action;
   * the run's probes are stale until re-armed.
   */
  private onFileChange(run: Run, c: FileChange): void {
    if (c.disabled !== undefined) this.ctx.log(describeDisabled(c));
    const told = this.fileNotices.get(run) ?? new Set<string>();
    this.fileNotices.set(run, told);
    if (told.has(c.path)) return;
    told.add(c.path);
    run.stale = true;
    this.changed.fire();
    const text = describeFileChange(c, 'choose Re-arm');
    this.ctx.log(text);
    void vscode.window.showWarningMessage(`ProbeLens (${run.target.label}): ${text}`, 'Re-arm').then((choice) => {
      if (choice && this.tracing) void this.rearm(run.binaryKey);
    });
  }

  /** `index` undefined: the target's running kernel, compiled from its BTF and kallsyms. */
  private async startRun(run: Run, index: BinaryIndex | undefined, target: Target, specs: string[]): Promise<void> {
    const remotePath =
      index && run.target.remotePrefix && this.ctx.workspaceFolder
        ? remoteBinaryPath(run.binary, { localPrefix: this.ctx.workspaceFolder, remotePrefix: run.target.remotePrefix })
        : undefined;
    // In-kernel counting takes no pid filter: a chosen process applies to the streamed probes.
    const only = index && run.aggSpec === undefined ? this.chosenProcess(run.target.id, run.binaryKey) : undefined;
    this.ctx.log(
      `arming on ${target.describe()}: ${run.binary}${remotePath ? ` (as ${remotePath})` : ''}${only ? ` in process ${only.pid} only` : ''}: ${specs.join(' | ')}`,
    );
    // A refused spec is set aside with its diagnostic; the others arm (and later edits go into this session).
    const session = await TraceSession.start({
      target,
      sudo: run.target.sudo,
      aggregate: run.aggSpec !== undefined,
      ...(this.ctx.config.bufferKb ? { bufferKb: this.ctx.config.bufferKb } : {}),
      ...(index ? { index } : { runningKernel: true }),
      specs,
      remotePath,
      ...(only ? { pid: only.pid } : {}),
      keepGoing: true,
      maxSites: allowedSites(specs, this.agreedSites),
      debugDirs: this.ctx.config.debugDirs,
      onHit: (hit) => {
        this.dirty = true;
        for (const f of this.hitListeners) f(hit, run);
      },
      onLost: () => {
        this.dirty = true;
      },
      onFileChange: (c) => this.onFileChange(run, c),
      onFileGuard: (g) => this.ctx.log(describeGuard(g)),
    });
    this.learnHist(run.target, session.canAggregate);
    if (run.generation !== this.generation || this.runs.get(runId(run.target.id, run.binaryKey, run.aggSpec)) !== run) {
      await session.stop();
      return;
    }
    for (const x of session.refused) noteRefused(this.ctx, run, x.spec, x.error);
    if (session.probes.length === 0) {
      await session.stop();
      run.state = 'failed';
      run.error = 'no probe could be armed';
      return;
    }
    if (session.process)
      this.ctx.log(
        `${run.target.label}: pid ${session.process.pid} is process ${session.process.nsPid} in its own PID namespace; its build is armed at ${session.process.path}`,
      );
    run.session = session;
    run.state = 'armed';
    noteArmed(this.ctx, run, session.probes);
    void session.exited.then(() => {
      if (run.session === session && session.state === 'failed') {
        run.state = 'failed';
        run.error = session.error ?? `the agent on ${run.target.label} exited unexpectedly; see the ProbeLens output`;
        this.changed.fire();
      }
    });
    // Edits made while it was starting.
    void (run.aggSpec === undefined ? this.applyTo(run) : this.applyAggregated(run.target, run.binaryKey));
  }

  // ---- what the editor shows ----

  runsOf(key: string): Run[] {
    return [...this.runs.values()].filter((r) => r.binaryKey === key);
  }

  /** Live sessions' numbers, or while stopped the numbers each run had when it stopped. */
  views(key: string): SessionView[] {
    const out: SessionView[] = [];
    for (const r of this.runsOf(key)) {
      if (r.session?.aggregates) out.push(viewOf(r, r.session));
      else if (!this.tracing && r.final) out.push(r.final);
    }
    return out;
  }

  stats(key: string, spec: string, views = this.views(key)): SpecStats {
    return statsForSpec(spec, views);
  }

  state(key: string, spec: string): ProbeState {
    const entry = this.set.binaries[key]?.find((e) => e.spec === spec);
    if (!entry) return 'pending';
    if (!entry.enabled) return 'disabled';
    const runs = this.runsOf(key);
    const mine = (r: Run) => (r.aggSpec ?? spec) === spec;
    if (runs.some((r) => r.specErrors.has(spec) || (r.state === 'failed' && !r.session && mine(r)))) return 'error';
    const armed = runs.filter((r) => r.state === 'armed' && r.session?.probes.some((p) => p.spec === spec));
    if (armed.some((r) => r.stale)) return 'stale';
    // "armed" promises every active target counts: while one is still connecting or arming, calls made now would
    // be missed there, so the probe stays pending until no target is starting.
    if (armed.length && !runs.some((r) => r.state === 'starting' && mine(r))) return 'armed';
    return !this.tracing && runs.some((r) => r.final?.events.some((e) => e.spec === spec)) ? 'stopped' : 'pending';
  }

  problems(key: string, spec: string): string[] {
    const out: string[] = [];
    for (const r of this.runsOf(key)) {
      const err = r.specErrors.get(spec) ?? (r.state === 'failed' && !r.session && (r.aggSpec ?? spec) === spec ? r.error : undefined);
      if (err) out.push(`${r.target.label}: ${err}`);
      for (const w of r.specWarnings.get(spec) ?? []) out.push(`${r.target.label}: ${w}`);
      if (r.stale) out.push(`${basename(r.binary)} was rebuilt after these probes were armed: Start Tracing re-arms them`);
    }
    if (this.set.binaries[key]?.find((e) => e.spec === spec)?.aggregate)
      for (const t of this.targets.active()) if (this.hist.get(t.id) === false) out.push(noHistNote(t.label));
    return [...new Set(out)];
  }

  /** Where a spec sits in local source (from the index, after path mapping); null when it names no line. */
  location(key: string, spec: string): SpecLocation | undefined {
    const k = `${key}\0${spec}`;
    if (this.locations.has(k)) return this.locations.get(k) ?? undefined;
    if (key === BTF_KEY) return this.kernelLocation(spec);
    const index = this.binaries.cached(this.pathOf(key));
    if (!index) return undefined;
    let loc: SpecLocation | null = null;
    try {
      const site = resolvePoint(parseSpec(spec).point, index)[0];
      const file = site?.file ?? site?.fn?.file;
      const line = site?.line ?? site?.fn?.line;
      if (file && line) loc = { file: buildToLocal(file, this.ctx.config.pathMappings, this.ctx.workspaceFolder), line };
    } catch {
      loc = null;
    }
    this.locations.set(k, loc);
    return loc ?? undefined;
  }

  dispose(): void {
    // deactivate: stop without waiting; the agents' heartbeat cleans up if the host goes first.
    for (const r of this.runs.values()) r.session?.abandon();
    this.changed.dispose();
  }
}

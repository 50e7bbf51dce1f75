// The workspace's tracing: the probe set (`.vscode/probelens.json`), and while tracing one TraceSession per
// (active target, binary). Adding, removing, enabling or disabling a probe — from the editor, the Probes view
// or a hand edit (or checkout) of the file — is applied in place to that binary's sessions on every target:
// only the probes concerned are touched, the others keep counting. A spec the compiler or the kernel refuses
// is marked in error and nothing else changes. A binary rebuilt under armed probes marks them stale.
// It needs VS Code, so it is driven in code-server by the e2e tests; what it shows is computed by src/vscode/model,
// whose tests are in test/unit/vscode/model.
// A kernel image (vmlinux) is traced the same way, as kprobes; its run also says which kernel the target runs.
// The running kernel without a vmlinux (key `kernel`, model/kernelTree.ts) is a session compiled from its BTF.
// Tests: test/e2e/liveEdit.test.ts, test/e2e/probeSet.test.ts, test/e2e/traceLens.test.ts, test/e2e/traceLine.test.ts,
//   test/e2e/sshTarget.test.ts, test/e2e/kernelLens.test.ts
import { basename } from 'node:path';
import * as vscode from 'vscode';
import type { BinaryIndex } from '../core/index/binaryIndex';
import type { CompiledProbe } from '../core/probes/compiler';
import { resolvePoint } from '../core/probes/resolve';
import { formatDefinition } from '../core/probes/definition';
import { siteCounts } from '../core/probes/sites';
import { parseSpec } from '../core/probes/spec';
import { TraceSession } from '../core/session/traceSession';
import { describeDisabled, describeFileChange, type FileChange } from '../core/session/fileWatch';
import { someTargetArmsPerSite } from '../core/session/targetCaps';
import { isKernelImage, isKernelModule } from '../core/probes/kernel';
import { siteContext } from '../core/probes/variables';
import type { Target } from '../core/target/target';
import type { Hit } from '../core/tracefs/hitParser';
import type { Binaries } from './binaries';
import type { Ctx, Scope } from './ctx';
import { BTF_KEY } from './model/kernelTree';
import { buildToLocal, remoteBinaryPath } from './model/pathMapping';
import {
  addProbe,
  binaryFromKey,
  binaryKey,
  changedBinaries,
  emptyProbeSet,
  enabledSpecs,
  parseProbeSet,
  planEdits,
  removeProbe,
  serializeProbeSet,
  setProbeEnabled,
  type ProbeSet,
} from './model/probeSet';
import { allowedSites, siteQuestion } from './model/siteLimit';
import { statsForSpec, type ProbeState, type SessionView, type SpecStats } from './model/stats';
import { readRunKernel, type RunKernel } from './targetKernels';
import type { TargetEntry, Targets } from './targets';

export type RunState = 'starting' | 'armed' | 'failed' | 'stopped';

/** One TraceSession of one binary on one target. */
export interface Run {
  target: TargetEntry;
  binaryKey: string;
  binary: string;
  state: RunState;
  error?: string;
  stale: boolean;
  session?: TraceSession;
  /** the numbers of the session as it stopped, shown until the next start */
  final?: SessionView;
  /** the stopped session's summary mismatch (received + lost against the kernel's count) */
  mismatch?: number;
  /** spec → why it is not armed */
  specErrors: Map<string, string>;
  /** spec → compiler warnings (arguments left out) */
  specWarnings: Map<string, string[]>;
  generation: number;
  /** Edits of this run's session, one at a time in the order asked. */
  queue: Promise<unknown>;
  /** The binary is a kernel image: the target's kernel and how it compares with it (read before arming). */
  kernel?: RunKernel;
}

export interface SpecLocation {
  file: string;
  line: number;
}

export class Tracing implements vscode.Disposable {
  set: ProbeSet = emptyProbeSet();
  private readonly runs = new Map<string, Run>();
  /** Specs the user agreed to arm although they have more sites than the limit, with their size. */
  private readonly agreedSites = new Map<string, number>();
  private connections = new Map<string, Promise<Target>>();
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
  /** The file's text as we last wrote it: the watcher's echo of our own save is not a hand edit. */
  private lastWritten: string | undefined;
  /** Saves and reloads of the file, one at a time (a reload then sees the file as our last save left it). */
  private fileQueue: Promise<unknown> = Promise.resolve();

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
    const folder = vscode.workspace.workspaceFolders?.[0];
    if (folder) {
      const w = ctx.push(vscode.workspace.createFileSystemWatcher(new vscode.RelativePattern(folder, '.vscode/probelens.json')));
      const reload = () => void this.onFile(() => this.reloadFromDisk());
      ctx.push(w.onDidChange(reload));
      ctx.push(w.onDidCreate(reload));
      ctx.push(w.onDidDelete(reload));
    }
  }

  get isTracing(): boolean {
    return this.tracing;
  }

  onHit(f: (hit: Hit, run: Run) => void): vscode.Disposable {
    this.hitListeners.add(f);
    return { dispose: () => this.hitListeners.delete(f) };
  }

  takeDirty(): boolean {
    const d = this.dirty;
    this.dirty = false;
    return d;
  }

  allRuns(): Run[] {
    return [...this.runs.values()];
  }

  // ---- the probe set file ----

  private get setUri(): vscode.Uri | undefined {
    const f = vscode.workspace.workspaceFolders?.[0];
    return f && vscode.Uri.joinPath(f.uri, '.vscode', 'probelens.json');
  }

  async load(): Promise<void> {
    const uri = this.setUri;
    if (!uri) return;
    try {
      const bytes = await vscode.workspace.fs.readFile(uri);
      this.set = parseProbeSet(Buffer.from(bytes).toString('utf8'), uri.fsPath);
    } catch (e) {
      if (!(e instanceof vscode.FileSystemError)) void vscode.window.showErrorMessage(`ProbeLens: ${(e as Error).message}`);
    }
    this.changed.fire();
  }

  private save(): Promise<void> {
    const text = serializeProbeSet(this.set);
    return this.onFile(async () => {
      const uri = this.setUri;
      if (!uri) return;
      this.lastWritten = text;
      await vscode.workspace.fs.createDirectory(vscode.Uri.joinPath(uri, '..'));
      await vscode.workspace.fs.writeFile(uri, Buffer.from(text, 'utf8'));
    });
  }

  private onFile<T>(f: () => Promise<T>): Promise<T> {
    const r = this.fileQueue.then(f);
    this.fileQueue = r.catch(() => undefined);
    return r;
  }

  /**
   * The file changed on disk (a hand edit, a `git checkout`, or our own save): the new set replaces the old
   * and the difference is applied in place. A file that does not parse changes nothing (its error is shown).
   */
  private async reloadFromDisk(): Promise<void> {
    const uri = this.setUri;
    if (!uri) return;
    let text = '';
    try {
      text = Buffer.from(await vscode.workspace.fs.readFile(uri)).toString('utf8');
    } catch (e) {
      if (!(e instanceof vscode.FileSystemError)) throw e;
      // Deleted: no probes (an empty text parses to the empty set below).
    }
    if (text === this.lastWritten) return;
    let next: ProbeSet;
    try {
      next = text.trim() ? parseProbeSet(text, uri.fsPath) : emptyProbeSet();
    } catch (e) {
      this.ctx.log(`${(e as Error).message}; the probes stay as they were`);
      void vscode.window.showErrorMessage(`ProbeLens: ${(e as Error).message}; the probes stay as they were.`);
      return;
    }
    this.lastWritten = text;
    const keys = changedBinaries(this.set, next);
    this.set = next;
    this.ctx.log(`${uri.fsPath} changed on disk: applying it to ${keys.length ? keys.join(', ') : 'nothing (no probe changed)'}`);
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
    if (s?.aggregates) r.final = this.viewOf(r, s);
    if (s) {
      try {
        const sum = await s.stop();
        r.mismatch = sum.mismatch;
        this.ctx.log(
          `stopped on ${sum.host}: ${Object.values(sum.hits).reduce((a, b) => a + b, 0)} hits, ${sum.lost} lost${sum.mismatch ? `, mismatch ${sum.mismatch} (received + lost differs from the kernel's count)` : ''}`,
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
        const run = this.runs.get(`${t.id}\0${key}`);
        // A rebuilt binary's session watches the old build: new definitions would land at its offsets.
        if (run?.session?.state === 'armed' && !run.stale) return this.applyTo(run);
        // Starting: it applies the set as it is once armed (see startRun).
        if (run?.state === 'starting') return;
        await this.rearmOn(t, key);
      }),
    );
  }

  private applyTo(run: Run): Promise<void> {
    const step = run.queue.then(async () => {
      const session = run.session;
      if (!session || session.state !== 'armed') return;
      const wanted = this.set.binaries[run.binaryKey] ?? [];
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
        this.noteArmed(run, r.added);
        for (const x of r.refused) this.noteRefused(run, x.spec, x.error);
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
    const id = `${run.target.id}\0${run.binaryKey}`;
    if (this.runs.get(id) === run) this.runs.delete(id);
    await this.stopRun(run);
    this.changed.fire();
  }

  private noteArmed(run: Run, probes: CompiledProbe[]): void {
    for (const p of probes) {
      this.ctx.log(`  → ${run.target.label}: ${formatDefinition(p.definition)}`);
      run.specErrors.delete(p.spec);
      if (p.warnings.length) run.specWarnings.set(p.spec, [...(run.specWarnings.get(p.spec) ?? []), ...p.warnings]);
    }
  }

  private noteRefused(run: Run, spec: string, e: Error): void {
    // CompileError repeats the spec in its message; the spec is shown beside it anyway.
    const msg = e.message;
    run.specErrors.set(spec, msg.startsWith(`${spec}: `) ? msg.slice(spec.length + 2) : msg);
    this.ctx.log(`  ✗ ${spec}: ${msg}`);
  }

  /** (Re)starts the sessions of one binary on every active target with its enabled specs. */
  private async rearm(key: string): Promise<void> {
    await Promise.all(this.targets.active().map((t) => this.rearmOn(t, key)));
  }

  private async rearmOn(t: TargetEntry, key: string): Promise<void> {
    const binary = this.pathOf(key);
    const specs = enabledSpecs(this.set, key);
    const scope = this.ctx.sessionScope;
    const id = `${t.id}\0${key}`;
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
    };
    this.runs.set(id, run);
    this.changed.fire();
    try {
      const index = key === BTF_KEY ? undefined : await this.binaries.index(binary);
      const target = await this.connection(t, scope);
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
      void vscode.window.showErrorMessage(`ProbeLens (${t.label}): ${run.error}`);
    }
    this.changed.fire();
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
    this.ctx.log(`arming on ${target.describe()}: ${run.binary}${remotePath ? ` (as ${remotePath})` : ''}: ${specs.join(' | ')}`);
    // A refused spec is set aside with its diagnostic; the others arm (and later edits go into this session).
    const session = await TraceSession.start({
      target,
      sudo: run.target.sudo,
      ...(index ? { index } : { runningKernel: true }),
      specs,
      remotePath,
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
    });
    if (run.generation !== this.generation || this.runs.get(`${run.target.id}\0${run.binaryKey}`) !== run) {
      await session.stop();
      return;
    }
    for (const x of session.refused) this.noteRefused(run, x.spec, x.error);
    if (session.probes.length === 0) {
      await session.stop();
      run.state = 'failed';
      run.error = 'no probe could be armed';
      return;
    }
    run.session = session;
    run.state = 'armed';
    this.noteArmed(run, session.probes);
    void session.exited.then(() => {
      if (run.session === session && session.state === 'failed') {
        run.state = 'failed';
        run.error = session.error ?? `the agent on ${run.target.label} exited unexpectedly; see the ProbeLens output`;
        this.changed.fire();
      }
    });
    // Edits made while it was starting.
    void this.applyTo(run);
  }

  // ---- what the editor shows ----

  runsOf(key: string): Run[] {
    return [...this.runs.values()].filter((r) => r.binaryKey === key);
  }

  private viewOf(r: Run, s: TraceSession): SessionView {
    return {
      host: r.target.label,
      events: s.probes.map((p) => ({
        event: p.event,
        probe: s.probeName(p),
        spec: p.spec,
        site: p.site,
        ...(p.lowerBound ? { lowerBound: true } : {}),
        ...(p.kernelSource ? { kernelSource: p.kernelSource } : {}),
      })),
      snapshot: s.aggregates.snapshot(),
    };
  }

  /** Live sessions' numbers, or while stopped the numbers each run had when it stopped. */
  views(key: string): SessionView[] {
    const out: SessionView[] = [];
    for (const r of this.runsOf(key)) {
      if (r.session?.aggregates) out.push(this.viewOf(r, r.session));
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
    if (runs.some((r) => r.specErrors.has(spec) || (r.state === 'failed' && !r.session))) return 'error';
    const armed = runs.filter((r) => r.state === 'armed' && r.session?.probes.some((p) => p.spec === spec));
    if (armed.some((r) => r.stale)) return 'stale';
    // "armed" promises every active target counts: while one is still connecting or arming, calls made now would
    // be missed there, so the probe stays pending until no target is starting.
    if (armed.length && !runs.some((r) => r.state === 'starting')) return 'armed';
    return !this.tracing && runs.some((r) => r.final?.events.some((e) => e.spec === spec)) ? 'stopped' : 'pending';
  }

  problems(key: string, spec: string): string[] {
    const out: string[] = [];
    for (const r of this.runsOf(key)) {
      const err = r.specErrors.get(spec) ?? (r.state === 'failed' && !r.session ? r.error : undefined);
      if (err) out.push(`${r.target.label}: ${err}`);
      for (const w of r.specWarnings.get(spec) ?? []) out.push(`${r.target.label}: ${w}`);
      if (r.stale) out.push(`${basename(r.binary)} was rebuilt after these probes were armed: Start Tracing re-arms them`);
    }
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

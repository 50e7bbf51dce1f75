// The workspace's tracing: the probe set (`.vscode/probelens.json`), and while tracing one TraceSession per
// (active target, binary). Adding or removing a probe re-arms that binary's sessions with the new set (a
// session's probes are fixed when it starts). A spec the compiler or the kernel refuses is marked in error and
// the session goes on with the others. A binary rebuilt under armed probes marks them stale.
import { basename } from 'node:path';
import * as vscode from 'vscode';
import type { BinaryIndex } from '../core/index/binaryIndex';
import { CompileError } from '../core/probes/compiler';
import { resolvePoint } from '../core/probes/resolve';
import { siteCounts } from '../core/probes/sites';
import { parseSpec, SpecSyntaxError } from '../core/probes/spec';
import { DefinitionRejectedError, TraceSession } from '../core/session/traceSession';
import type { Target } from '../core/target/target';
import type { Hit } from '../core/tracefs/hitParser';
import type { Binaries } from './binaries';
import type { Ctx, Scope } from './ctx';
import { buildToLocal, remoteBinaryPath } from './model/pathMapping';
import {
  addProbe,
  binaryFromKey,
  binaryKey,
  emptyProbeSet,
  enabledSpecs,
  parseProbeSet,
  removeProbe,
  serializeProbeSet,
  setProbeEnabled,
  type ProbeSet,
} from './model/probeSet';
import { allowedSites, siteQuestion } from './model/siteLimit';
import { statsForSpec, type ProbeState, type SessionView, type SpecStats } from './model/stats';
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
  private generation = 0;
  private readonly changed = new vscode.EventEmitter<void>();
  /** Probe set, run state or counts changed (hit-driven changes are coalesced by the listeners' timers). */
  readonly onDidChange = this.changed.event;
  private readonly hitListeners = new Set<(hit: Hit, run: Run) => void>();
  private readonly locations = new Map<string, SpecLocation | null>();
  /** Counts moved since the last `takeDirty()`. */
  private dirty = false;

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

  private async save(): Promise<void> {
    const uri = this.setUri;
    if (!uri) return;
    await vscode.workspace.fs.createDirectory(vscode.Uri.joinPath(uri, '..'));
    await vscode.workspace.fs.writeFile(uri, Buffer.from(serializeProbeSet(this.set), 'utf8'));
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
    // Arming is what the user asked for: start (or re-arm this binary) even if the spec was in the set already.
    if (this.tracing) await this.rearm(key);
    else await this.start();
  }

  /** Asks before adding a spec that arms more than the site limit (the CLI needs --max-sites for it). */
  private async agreeToSites(binary: string, specs: string[]): Promise<boolean> {
    let index: BinaryIndex;
    try {
      index = await this.binaries.index(binary);
    } catch {
      return true; // arming reports the index problem itself
    }
    const q = siteQuestion(siteCounts(specs, index));
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
    if (this.tracing) await this.rearm(key);
  }

  async setEnabled(key: string, spec: string, enabled: boolean): Promise<void> {
    if (!setProbeEnabled(this.set, key, spec, enabled)) return;
    await this.save();
    this.changed.fire();
    if (this.tracing) await this.rearm(key);
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

  /** (Re)starts the sessions of one binary on every active target with its enabled specs. */
  private async rearm(key: string): Promise<void> {
    const binary = this.pathOf(key);
    const specs = enabledSpecs(this.set, key);
    const scope = this.ctx.sessionScope;
    await Promise.all(
      this.targets.active().map(async (t) => {
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
        };
        this.runs.set(id, run);
        this.changed.fire();
        try {
          const index = await this.binaries.index(binary);
          const target = await this.connection(t, scope);
          await this.startRun(run, index, target, specs);
        } catch (e) {
          run.state = 'failed';
          run.error = (e as Error).message;
          this.ctx.log(`${t.label}: ${run.error}`);
          void vscode.window.showErrorMessage(`ProbeLens (${t.label}): ${run.error}`);
        }
        this.changed.fire();
      }),
    );
  }

  private async startRun(run: Run, index: BinaryIndex, target: Target, specs: string[]): Promise<void> {
    let remaining = [...specs];
    const remotePath =
      run.target.remotePrefix && this.ctx.workspaceFolder
        ? remoteBinaryPath(run.binary, { localPrefix: this.ctx.workspaceFolder, remotePrefix: run.target.remotePrefix })
        : undefined;
    // Each refused spec is set aside and the rest retried, so one typo does not keep the others from arming.
    while (remaining.length > 0) {
      this.ctx.log(`arming on ${target.describe()}: ${run.binary}${remotePath ? ` (as ${remotePath})` : ''}: ${remaining.join(' | ')}`);
      try {
        const session = await TraceSession.start({
          target,
          sudo: run.target.sudo,
          index,
          specs: remaining,
          remotePath,
          debugDirs: this.ctx.config.debugDirs,
          maxSites: allowedSites(remaining, this.agreedSites),
          onHit: (hit) => {
            this.dirty = true;
            for (const f of this.hitListeners) f(hit, run);
          },
          onLost: () => {
            this.dirty = true;
          },
        });
        if (run.generation !== this.generation || this.runs.get(`${run.target.id}\0${run.binaryKey}`) !== run) {
          await session.stop();
          return;
        }
        run.session = session;
        run.state = 'armed';
        for (const p of session.probes) {
          this.ctx.log(`  → ${target.host}: ${p.definition}`);
          if (p.warnings.length) run.specWarnings.set(p.spec, [...(run.specWarnings.get(p.spec) ?? []), ...p.warnings]);
        }
        void session.exited.then(() => {
          if (run.session === session && session.state === 'failed') {
            run.state = 'failed';
            run.error = `the agent on ${run.target.label} exited unexpectedly; see the ProbeLens output`;
            this.changed.fire();
          }
        });
        return;
      } catch (e) {
        const spec =
          e instanceof DefinitionRejectedError
            ? e.probe.spec
            : e instanceof CompileError || e instanceof SpecSyntaxError
              ? e.spec
              : undefined;
        const match = spec !== undefined ? remaining.find((s) => s === spec || s.trim() === spec.trim()) : undefined;
        if (match === undefined) throw e;
        // CompileError repeats the spec in its message; the spec is shown beside it anyway.
        const msg = (e as Error).message;
        run.specErrors.set(match, msg.startsWith(`${match}: `) ? msg.slice(match.length + 2) : msg);
        this.ctx.log(`  ✗ ${match}: ${(e as Error).message}`);
        remaining = remaining.filter((s) => s !== match);
      }
    }
    run.state = 'failed';
    run.error = 'no probe could be armed';
  }

  // ---- what the editor shows ----

  runsOf(key: string): Run[] {
    return [...this.runs.values()].filter((r) => r.binaryKey === key);
  }

  private viewOf(r: Run, s: TraceSession): SessionView {
    return {
      host: r.target.label,
      events: s.probes.map((p) => ({ event: p.event, spec: p.spec, site: p.site })),
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

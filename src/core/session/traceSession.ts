// One target's probes from arming to cleanup: compile the specs (before the agent runs when this target's
// kernel capabilities are known), start the fixed agent, check the binary is the one indexed, define and arm
// them, parse the stream into hits and aggregates, apply edits in place while armed (add, remove, enable,
// disable: only the events concerned are touched, the others keep counting), and stop (or lose the client)
// with nothing left behind on the target.
// A session needs a target and real tracefs, so it is tested by integration tests; its counting is the
// aggregates' (test/unit/core/session/aggregates.test.ts), and how it tells an early end is unit-tested.
// Tests: test/integration/sessionLiveEdit.test.ts, test/integration/capture.test.ts, test/integration/sites.test.ts,
//   test/integration/returns.test.ts, test/integration/hitShape.test.ts, test/integration/engine-fanout.test.ts,
//   test/unit/core/session/sessionEnd.test.ts, test/vm/kernelBtf.test.ts
import { compileProbes, lineBaseName, sharePoints, SITE_ARG, type CompiledProbe } from '../probes/compiler';
import { callerNamer } from './callers';
import { checkTargetBuild } from './buildCheck';
import { tracedProcess } from './tracedProcess';
import { bindGroup, checkProbePath, eventName, kretprobeMaxactive } from '../probes/definition';
import type { ProbeSpec } from '../probes/spec';
import { checkWriters, probedPath, WatchGate, type FileChange } from './fileWatch';
import { AgentExitedError, offendingToken, TracefsAgent, type BuildProcess, type StopReport } from '../tracefs/agentClient';
import { HitParser, type Hit } from '../tracefs/hitParser';
import { RawStream } from '../tracefs/rawStream';
import { chooseStream, type StreamKind } from './streamChoice';
import { countsAtCut, lossReport } from '../tracefs/loss';
import { Aggregates, type AggregateSummary, type SourceLine } from './aggregates';
import { checkKeys } from './keys';
import { kernelFigures, planHist, pointHits, readPeriodically, ThreadProcesses, totalHits, type HistPlan } from './kernelAggregation';
import { eventsOf, pairsOf, presentHit, probeKey, schemaOf } from './points';
import { compileOptionsFor, knownCaps, rememberCaps } from './targetCaps';
import { compileKernelBtf, type RunningKernel } from '../probes/kernelBtf';
import { fetchRunningKernel } from './runningKernel';

export * from './sessionApi';
import {
  DefinitionRejectedError,
  describeEnd,
  type AddResult,
  type RefusedSpec,
  type SessionOptions,
  type SessionState,
  type SessionSummary,
} from './sessionApi';
import { nameRecord } from '../../shared/names';

const sameSpec = (a: string, b: string) => a === b || a.trim() === b.trim();

/** A C identifier: a function name shown as it is where its tracefs event had to be spelt otherwise. */
const C_NAME = /^[A-Za-z_][A-Za-z0-9_]*$/;

export class TraceSession {
  state: SessionState = 'starting';
  /** The probes defined on the target now (enabled or not), in the order they were added. */
  probes: CompiledProbe[] = [];
  /** Specs set aside at start (with `keepGoing`). */
  refused: RefusedSpec[] = [];
  aggregates!: Aggregates;
  private agent?: TracefsAgent;
  /** The sweep after the agent was killed (sweepAfterCrash): whether it removed the agent's leftovers. */
  private sweeping?: Promise<boolean>;
  private parser?: HitParser | RawStream;
  /** The stream this session reads, once armed, and why it is text when raw was not chosen or not possible. */
  stream?: StreamKind;
  streamNote?: string;
  /** With `pid`: the process it names (host and own-namespace PIDs) and where its build is armed. */
  process?: BuildProcess;
  private gate?: WatchGate;
  private traceEnded?: Promise<void>;
  private finalMismatch?: number;
  private ended?: Promise<SessionSummary>;
  /** tracefs event → its points, indexed by their SITE_ARG number (a single point at 0). */
  private readonly pointsOf = new Map<string, CompiledProbe[]>();
  private readonly records = new Map<string, number[]>();
  /** point name (a site's own name: `CompiledProbe.event`) → its point */
  private readonly byPoint = new Map<string, CompiledProbe>();
  /** spec and function → the name their hits carry as `probe` (see probeName); point name → that name */
  private readonly names = new Map<string, string>();
  private readonly probeOf = new Map<string, string>();
  /** Why the session ended before or while stopping (see SessionSummary.error). */
  private endCause?: string;
  /** Set when a partial summary has been taken: no hit is delivered after it, so its counts equal what was. */
  private closed = false;
  /** Event names ever used in this session: a removed probe's name is never reused, so counts never mix. */
  private readonly usedEvents = new Set<string>();
  private readonly disabledEvents = new Set<string>();
  /** uprobe_profile counts of removed events, read before their removal; part of the summary's kernelHits. */
  private readonly removedKernelHits = new Map<string, number>();
  /** Loss counters zeroed by removals (the kernel resets the buffer), and entries still unread at the reset. */
  private lostAtRemovals = 0;
  /** Kernel return probes defined so far: their instances share a budget (kretprobeMaxactive). */
  private kernelReturns = 0;
  /** The hist triggers of an aggregating session, and the timer that reads them. */
  private hist?: HistPlan;
  /** Aggregating: each counted thread's process (`--by pid`). */
  private readonly threadProcesses = new ThreadProcesses();
  private stopReading = (): void => undefined;
  /** The target's kernel as its BTF and kallsyms describe it (SessionOptions.runningKernel), read before compiling. */
  private kernel?: RunningKernel;
  /** Edits run one at a time, in the order they were asked for. */
  private edits: Promise<unknown> = Promise.resolve();

  private constructor(readonly opts: SessionOptions) {}

  get host(): string {
    return this.opts.target.host;
  }

  /** Starts the agent and arms every probe. On any failure the agent is stopped (nothing stays armed). */
  static async start(opts: SessionOptions): Promise<TraceSession> {
    const s = new TraceSession(opts);
    try {
      await s.arm();
    } catch (e) {
      s.state = 'failed';
      const agent = s.agent;
      await agent?.stop().catch(() => agent.kill('TERM'));
      // An agent killed while arming left what it had defined: swept as after a crash while armed.
      if (agent && e instanceof AgentExitedError && e.exitInfo.signal) await s.sweepAfterCrash(agent.group);
      throw e;
    }
    return s;
  }

  /** Whether `spec`'s events are defined here and enabled. */
  isEnabled(spec: string): boolean {
    return this.probes.some((p) => sameSpec(p.spec, spec) && !this.disabledEvents.has(p.definition.event));
  }

  /**
   * Compiles and defines `specs` on the armed session in one round trip and enables only their events; the
   * other probes keep counting. A spec the compiler or the kernel refuses is returned with its error and
   * leaves nothing behind.
   */
  /** `maxSites`: the site limit for these specs (the editor raises it for specs whose user agreed to more). */
  add(specs: Array<string | ProbeSpec>, maxSites = this.opts.maxSites): Promise<AddResult> {
    return this.edit(async () => {
      const compiled = await this.compile(specs, this.agent!.hello.caps, maxSites);
      const defined = await this.define(compiled.probes);
      const refused = [...compiled.refused, ...defined.refused];
      if (defined.accepted.length) {
        const events = eventsOf(defined.accepted);
        if (this.opts.filter) {
          for (const e of events) await this.agent!.setFilter(e, this.opts.filter);
        }
        const verdicts = await this.agent!.setEventsEnabled(events, true);
        verdicts.forEach((v, i) => {
          if (v instanceof Error) refused.push({ spec: this.pointsOf.get(events[i])!.find(Boolean)!.spec, error: v });
        });
      }
      const bad = new Set(refused.map((r) => r.spec));
      const added = defined.accepted.filter((p) => !bad.has(p.spec));
      // A spec refused on one of its sites or at enabling is taken back whole.
      for (const e of eventsOf(defined.accepted.filter((q) => bad.has(q.spec)))) await this.undefine(e);
      this.probes.push(...added);
      return { added, refused };
    });
  }

  /** Disables and removes `spec`'s events alone (their kernel counts are read first and kept for the summary). */
  remove(spec: string): Promise<void> {
    return this.edit(async () => {
      for (const e of this.eventsOfSpec(spec)) await this.undefine(e);
    });
  }

  /** `spec`'s events, which must be its alone (see SessionOptions.shareAcrossSpecs). */
  private eventsOfSpec(spec: string, filter: (p: CompiledProbe) => boolean = () => true): string[] {
    const events = eventsOf(this.probes.filter((q) => sameSpec(q.spec, spec) && filter(q)));
    for (const e of events)
      if (this.pointsOf.get(e)!.some((p) => !sameSpec(p.spec, spec)))
        throw new Error(`'${spec}' shares its tracefs event ${e} with other specs of this session: it cannot be edited alone`);
    return events;
  }

  /** Enables or disables `spec`'s events alone; counts go on from where they were. */
  setEnabled(spec: string, enabled: boolean): Promise<void> {
    return this.edit(async () => {
      const events = this.eventsOfSpec(spec, (p) => this.disabledEvents.has(p.definition.event) === enabled);
      const verdicts = await this.agent!.setEventsEnabled(events, enabled);
      verdicts.forEach((v, i) => {
        if (v instanceof Error) throw v;
        if (enabled) this.disabledEvents.delete(events[i]);
        else this.disabledEvents.add(events[i]);
      });
    });
  }

  private edit<T>(f: () => Promise<T>): Promise<T> {
    const run = this.edits.then(() => {
      if (this.state !== 'armed') throw new Error(`the session on ${this.host} is ${this.state}`);
      return f();
    });
    this.edits = run.catch(() => undefined);
    return run;
  }

  /** Compiles spec by spec (so one refusal does not hide the others) for this target's kernel. */
  private async compile(
    specs: Array<string | ProbeSpec>,
    caps: ReadonlySet<string> | undefined,
    maxSites = this.opts.maxSites,
    acrossSpecs = false,
  ): Promise<{ probes: CompiledProbe[]; refused: RefusedSpec[] }> {
    const { opts } = this;
    const capOpts = caps ? compileOptionsFor(caps) : {};
    const across = acrossSpecs && capOpts.immediates !== false;
    const probes: CompiledProbe[] = [];
    const refused: RefusedSpec[] = [];
    for (const spec of specs) {
      try {
        if (this.kernel) {
          probes.push(...compileKernelBtf([spec], this.kernel, { usedEvents: this.usedEvents }));
          continue;
        }
        if (!opts.index) throw new Error('a session needs an index or runningKernel');
        probes.push(
          ...(await compileProbes([spec], opts.index, {
            targetPath: this.process?.path ?? opts.remotePath ?? opts.index.path,
            debugDirs: opts.debugDirs,
            usedEvents: this.usedEvents,
            maxSites,
            disabledSites: opts.disabledSites,
            shareEvents: !across,
            callers: opts.keys?.some((k) => k.name === 'caller'),
            ...capOpts,
          })),
        );
      } catch (e) {
        if (!opts.keepGoing) throw e;
        refused.push({ spec: typeof spec === 'string' ? spec : spec.text, error: e instanceof Error ? e : new Error(String(e)) });
      }
    }
    return { probes: across ? sharePoints(probes, this.usedEvents) : probes, refused };
  }

  /** Binds `probes` to this session's group and defines them in one round trip; the parser learns them first. */
  private async define(probes: CompiledProbe[]): Promise<{ accepted: CompiledProbe[]; refused: RefusedSpec[] }> {
    const agent = this.agent!;
    // Kernel return probes first: of the probes at one address the kernel runs the newest first, and a return
    // probe's swaps the return address for its trampoline, which an entry's caller (`$stack0`) would then read.
    const order = (p: CompiledProbe): number => (p.definition.target.type === 'kprobe' && p.definition.kind === 'r' ? 0 : 1);
    probes = [...probes].sort((a, b) => order(a) - order(b));
    this.kernelReturns += probes.filter((p) => order(p) === 0).length;
    const maxactive = this.opts.maxactive ?? kretprobeMaxactive(this.kernelReturns);
    const bound = probes.map((p) => {
      const definition = bindGroup(p.definition, agent.group);
      return { ...p, group: agent.group, definition: order(p) === 0 ? { ...definition, maxactive } : definition };
    });
    this.track(bound);
    const verdicts = await agent.defineAll(bound.map((p) => p.definition));
    const refused: RefusedSpec[] = [];
    const accepted: CompiledProbe[] = [];
    verdicts.forEach((v, i) => {
      const p = bound[i];
      if (!v) accepted.push(p);
      else if (v.code === 'EKERNEL') {
        const msg =
          v.details
            .filter((d) => d.trim())
            .slice(-3)
            .join(' ')
            .trim() || v.message;
        refused.push({ spec: p.spec, error: new DefinitionRejectedError(this.host, p, msg, offendingToken(v.details)) });
      } else refused.push({ spec: p.spec, error: v });
    });
    const raw = this.parser instanceof RawStream ? this.parser : undefined;
    if (raw) {
      // The binary stream decodes an event by its format file, which exists once it is defined: read before enabling.
      const events = eventsOf(accepted);
      const texts = await agent.formats(events);
      events.forEach((e, i) => {
        try {
          raw.addFormats([texts[i]]);
        } catch (err) {
          for (const p of accepted)
            if (p.definition.event === e) refused.push({ spec: p.spec, error: err instanceof Error ? err : new Error(String(err)) });
        }
      });
    }
    const bad = new Set(refused.map((r) => r.spec));
    if (bad.size && !this.opts.keepGoing) throw refused[0].error;
    // Sites of a refused spec that the kernel accepted go too (never enabled, so removing them resets nothing).
    for (const e of eventsOf(accepted.filter((q) => bad.has(q.spec)))) await agent.undefine(e);
    return { accepted: accepted.filter((p) => !bad.has(p.spec)), refused };
  }

  /** The point a record came from: its event's point named by the SITE_ARG immediate (one point: the event's). */
  /** Records that arrived, per event and point (by SITE_ARG), shown or not: what the kernel's counts are checked against. */
  private countRecord(raw: Hit): void {
    const id = raw.args[SITE_ARG];
    const i = typeof id === 'number' ? id : 0;
    let per = this.records.get(raw.event);
    if (!per) this.records.set(raw.event, (per = []));
    per[i] = (per[i] ?? 0) + 1;
  }

  private pointOf(raw: Hit): CompiledProbe | undefined {
    const points = this.pointsOf.get(raw.event);
    const id = raw.args[SITE_ARG];
    return points?.[typeof id === 'number' ? id : 0];
  }

  /**
   * The name a probe's hits carry as `probe`: one per spec and function (a glob spec is a probe per function it
   * matched), over all of its points: the point of its entry site (the bare function name), else the function's
   * name, else its first point's.
   */
  probeName(p: Pick<CompiledProbe, 'spec' | 'event' | 'function'>): string {
    return this.probeOf.get(p.event) ?? this.names.get(probeKey(p)) ?? p.event;
  }

  /**
   * The probe name of a function's entry point: the function's own name where tracefs needed another for the
   * event (`__proto__`'s event is `proto`), while no other probe has it; else the event's.
   */
  private entryName(p: CompiledProbe): string {
    if ((p.kind !== 'entry' && p.kind !== 'return') || !p.function || !C_NAME.test(p.function)) return p.event;
    const own = p.kind === 'return' ? `${p.function}_return` : p.function;
    if (own === p.event || eventName(own) !== p.event.replace(/_[0-9]+$/, '')) return p.event;
    for (const taken of this.names.values()) if (taken === own) return p.event;
    return own;
  }

  /** Tells the parser and the aggregates about new events before they can fire. */
  private track(probes: CompiledProbe[]): void {
    const lines = new Map<string, SourceLine>();
    for (const p of probes)
      if (!this.names.has(probeKey(p)) && (!p.site || p.site.kind === 'entry')) this.names.set(probeKey(p), this.entryName(p));
    // A function with no entry site (inlined everywhere) is named after the function, and a line in copies of inlined
    // code after the line (`sites_L93`), never after one copy's point (a hit at another copy would carry its name),
    // while no other probe has that name.
    for (const p of probes)
      if (!this.names.has(probeKey(p))) {
        const taken = new Set(this.names.values());
        const name = p.kind === 'line' ? eventName(lineBaseName(p.file, p.line)) : p.function;
        this.names.set(probeKey(p), name && !taken.has(name) ? name : p.event);
      }
    const fresh: CompiledProbe[] = [];
    for (const p of probes) {
      let points = this.pointsOf.get(p.definition.event);
      if (!points) {
        this.pointsOf.set(p.definition.event, (points = []));
        fresh.push(p);
      }
      points[p.siteId ?? 0] = p;
      this.byPoint.set(p.event, p);
      this.probeOf.set(p.event, this.names.get(probeKey(p))!);
      if (p.file && p.line) lines.set(p.event, { file: p.file, line: p.line });
    }
    this.parser!.addEvents(fresh.map((p) => schemaOf(p, this.probeName(p))));
    this.aggregates.track(lines, pairsOf([...this.byPoint.values()]));
  }

  /** Disables and removes one tracefs event (all its points), keeping its kernel count for the summary. */
  private async undefine(event: string): Promise<void> {
    const r = await this.agent!.undefine(event);
    this.removedKernelHits.set(event, r.hits);
    this.lostAtRemovals += r.unread + r.cpus.reduce((s, c) => s + c.overrun + c.dropped + c.commitOverrun, 0);
    this.disabledEvents.delete(event);
    const gone = this.probes.filter((q) => q.definition.event === event);
    this.probes = this.probes.filter((q) => q.definition.event !== event);
    // A spec removed and added again is a new probe: its counts start over under its new event's name.
    for (const p of gone) if (!this.probes.some((q) => probeKey(q) === probeKey(p))) this.names.delete(probeKey(p));
  }

  private async arm(): Promise<void> {
    const { opts } = this;
    // Without a vmlinux the kernel describes itself: its BTF, kallsyms and kprobe blacklist, read before compiling.
    if (opts.runningKernel) this.kernel = await fetchRunningKernel(opts.target, opts.sudo, opts.specs);
    const remotePath = opts.remotePath ?? opts.index?.path ?? '/';
    if (opts.index) checkProbePath(remotePath);
    // Compiling needs no agent: it is done first, so the agent's heartbeat watchdog never waits on it. Only
    // semaphore-guarded USDT probes depend on the kernel (reference counters): when this target's capabilities
    // are not known yet they are assumed and checked once the agent has said what the kernel offers.
    const caps = knownCaps(opts.target);
    const across = !!opts.shareAcrossSpecs && !opts.keepGoing;
    let compiled = await this.compile(opts.specs, caps, opts.maxSites, across);
    const agent = (this.agent = await TracefsAgent.start(opts.target, {
      sudo: opts.sudo,
      heartbeatTimeoutSeconds: opts.heartbeatSeconds ?? 3,
    }));
    rememberCaps(opts.target, agent.hello.caps);
    if (opts.aggregate && !agent.hello.caps.has('hist'))
      throw new Error(
        `the kernel on ${this.host} has no hist triggers (its tracefs README offers no 'hist:'; CONFIG_HIST_TRIGGERS is off): it cannot aggregate in the kernel; trace without --aggregate`,
      );
    // Before anything is defined: the binary stream's definitions carry no framing secret.
    const stream = await chooseStream(agent, opts.stream);
    this.stream = stream.kind;
    this.streamNote = stream.note;
    // Kernel probes (the index is of a vmlinux or a .ko) are about the running kernel or the loaded module.
    const kernel = compiled.probes.some((p) => p.definition.target.type === 'kprobe');
    // A --pid's process may run its own copy of the build (a container's): its probes go on that copy.
    let armPath = remotePath;
    if (opts.pid !== undefined && opts.index && !kernel) {
      this.process = await tracedProcess(agent, this.host, opts.index, opts.pid);
      if (this.process && this.process.path !== remotePath) {
        armPath = this.process.path;
        this.usedEvents.clear();
        compiled = await this.compile(opts.specs, caps, opts.maxSites, across);
      }
    }
    if (opts.index && !opts.noBuildIdCheck) await checkTargetBuild(agent, this.host, opts.index, compiled.probes, armPath);
    if (!kernel && opts.index) await checkWriters(agent, this.host, armPath);
    const watchKey = (await agent.watchFiles()) ? agent.watchKey : null;
    const needsRecompile =
      (!agent.hello.caps.has('ref_ctr') &&
        compiled.probes.some((p) => p.definition.target.type === 'uprobe' && p.definition.target.refCtrOffset !== undefined)) ||
      (!agent.hello.caps.has('imm') && compiled.probes.some((p) => p.args.some((a) => a.fetch.startsWith('\\'))));
    if (!caps && needsRecompile) {
      this.usedEvents.clear();
      compiled = await this.compile(opts.specs, agent.hello.caps, opts.maxSites, across);
    }
    checkKeys(opts.keys ?? [], compiled.probes);
    this.aggregates = new Aggregates(undefined, undefined, { keys: opts.keys });
    const callerOf =
      kernel && !opts.aggregate && opts.keys?.some((k) => k.name === 'caller')
        ? await callerNamer(opts.index, opts.target, opts.sudo)
        : undefined;
    const show = (raw: Hit) => {
      if (this.closed) return;
      // Hits come in bursts released at once (after a pause a buffer's worth, merged across CPUs and let through by
      // the file watcher's gate): handling them can outlast the agent's heartbeat timeout on a loaded machine, with
      // no turn for the heartbeat timer, so the consumer says it is alive as it goes.
      agent.keepAlive();
      const point = this.pointOf(raw);
      const hit = presentHit(raw, point, point && this.probeName(point));
      if (callerOf && point?.kind === 'entry') hit.caller = callerOf(raw, point);
      if (this.process && this.process.nsPid !== this.process.pid && hit.pid === this.process.pid) hit.nsPid = this.process.nsPid;
      // Aggregates see what users see; the hidden goroutine pointer only pairs entries with returns.
      const latencyNs = this.aggregates.add(hit, raw.args);
      if (latencyNs !== undefined) hit.latencyNs = latencyNs;
      opts.onHit?.(hit);
    };
    const gate = (this.gate = watchKey
      ? new WatchGate({
          host: this.host,
          pathOf: (event) => probedPath(this.pointsOf.get(event)?.find(Boolean)?.definition),
          release: show,
          notify: (c) => opts.onFileChange?.({ ...c }),
          guarded: (g) => opts.onFileGuard?.(g),
        })
      : undefined);
    if (gate) agent.onNote((verb, words) => verb === 'WATCH' && gate.note(words));
    const reading = {
      host: this.host,
      marker: gate && watchKey ? { key: watchKey, onMarker: (ts: number, text: string) => gate.marker(ts, text) } : undefined,
      onHit: (raw: Hit) => {
        this.countRecord(raw);
        if (this.gate) this.gate.hit(raw);
        else show(raw);
      },
      onLost: (_cpu: number, n: number) => {
        if (this.closed) return;
        this.aggregates.addLost(n);
        opts.onLost?.(n);
      },
    };
    if (stream.setup) {
      const raw = new RawStream({ ...reading, ...stream.setup, lookupTgids: (tids) => agent.tgids(tids) });
      this.parser = raw;
      // trace_marker's records carry the file watcher's markers.
      if (watchKey) raw.addFormats(await agent.formats(['ftrace/print']));
      agent.onTraceData((c) => raw.push(c));
    } else {
      const parser = (this.parser = new HitParser({
        ...reading,
        events: [],
        sentinel: agent.sentinel,
        lookupTgids: (tids) => agent.tgids(tids),
      }));
      agent.onTraceLine((l) => parser.push(l));
    }
    // However the stream ends, what is still held is shown; on STOP only once its reply is in (its last check's
    // verdicts come on stderr before it, and may come after the stream's end).
    agent.onTraceEnd(() => {
      if (this.state !== 'stopping') this.gate?.end();
    });
    this.traceEnded = new Promise((res) => agent.onTraceEnd(res));
    if (opts.bufferKb) await agent.setBufferKb(opts.bufferKb);
    const defined = await this.define(compiled.probes);
    this.probes = defined.accepted;
    this.refused = [...compiled.refused, ...defined.refused];
    if (opts.pid !== undefined) await agent.filterPid(this.process?.pid ?? opts.pid);
    if (opts.filter) for (const e of eventsOf(this.probes)) await agent.setFilter(e, opts.filter);
    if (opts.aggregate) {
      const plan = (this.hist = planHist(agent.group, this.pointsOf, (p) => this.probeName(p), opts.keys));
      for (const s of plan.synths) await agent.defineSynthetic(s);
      await agent.addTriggers(plan.triggers);
    }
    await agent.arm(!!opts.aggregate);
    if (this.hist) {
      const plan = this.hist;
      const figures = (h: Map<string, string[]>) =>
        kernelFigures(h, plan, this.pointsOf, (p) => this.probeName(p), opts.keys, this.threadProcesses.known);
      const armed = () => this.state === 'armed';
      const byPid = opts.keys?.some((k) => k.name === 'pid');
      this.stopReading = readPeriodically(agent, plan, opts.aggregateEveryMs ?? 1000, armed, async (h) => {
        const k = figures(h);
        this.aggregates.setKernel(byPid && (await this.threadProcesses.learn(agent, k)) ? figures(h) : k);
      });
    }
    if (gate && !agent.watching) {
      // Nothing is watched after all (no file to watch): hits go straight through.
      this.gate = undefined;
      gate.end();
    }
    this.state = 'armed';
    void agent.exit.then((e) => {
      if (this.state !== 'armed' && this.state !== 'stopping') return;
      // An agent killed by a signal it cannot catch (KILL) removed nothing: a new one sweeps what it left.
      if (e.signal) this.sweeping ??= this.sweepAfterCrash(agent.group);
      if (this.state !== 'armed') return;
      this.state = 'failed';
      this.endCause ??= describeEnd(this.host, e, agent.silenceAllowance, agent.diagnostics);
    });
  }

  /**
   * Starts a new agent on the target, whose HELLO sweeps the leftovers of owners proven dead (the killed agent's
   * probes, instance and orphaned reader), and stops it. Says whether `group` is gone: swept now, or already by
   * another session's sweep (a dead owner's group is never judged alive). A target that cannot run one leaves them
   * to the next session's sweep.
   */
  private async sweepAfterCrash(group: string): Promise<boolean> {
    try {
      const a = await TracefsAgent.start(this.opts.target, {
        sudo: this.opts.sudo,
        heartbeatTimeoutSeconds: this.opts.heartbeatSeconds ?? 3,
      });
      await a.stop();
      return !a.hello.undecided.some((u) => u.group === group);
    } catch {
      return false;
    }
  }

  /**
   * The client is about to stop (the user's Ctrl-Z) for up to `seconds`: the agent keeps tracing meanwhile rather than
   * ending the session at its heartbeat timeout. What overflows the buffer meanwhile is reported lost when reading
   * resumes.
   */
  pause(seconds: number): Promise<void> {
    return this.agent?.pause(seconds) ?? Promise.resolve();
  }

  /**
   * Stops recording and reports counts and loss once every record has arrived; the agent then disables and
   * removes every probe and the instance by itself (`exited` settles when it is done).
   */
  stop(): Promise<SessionSummary> {
    this.ended ??= (async () => {
      // An edit in flight finishes first (its agent replies come before STOP's).
      await this.edits;
      if (this.state === 'failed') return this.partialSummary(true);
      this.state = 'stopping';
      this.stopReading();
      let report;
      try {
        report = await this.agent!.stop();
      } catch (e) {
        if (!(e instanceof AgentExitedError)) throw e;
        const how = describeEnd(this.host, e.exitInfo, this.agent!.silenceAllowance, this.agent!.diagnostics);
        this.endCause ??= `${how} while it was disarming`;
        this.state = 'failed';
        return this.partialSummary(true);
      }
      // STOP's reply comes on stderr, the drained records on stdout: count the hits once the stream has ended
      // (or the channel closed, which ends it too).
      await Promise.race([this.traceEnded, this.agent!.exit]);
      // The binary stream's last threads get their process ids from STOP's saved_tgids.
      if (this.parser instanceof RawStream) this.parser.end(report.tgids);
      else this.parser!.end();
      this.gate?.end();
      const streamLost =
        report.cpus.length > 0
          ? report.cpus.reduce((n, c) => n + c.overrun + c.dropped + c.commitOverrun + c.entries, 0)
          : this.parser!.stats.lost;
      // The file watcher's markers share the ring buffer: those it lost are in the per-CPU counters, not hits.
      const marks = this.gate?.markersLost ?? 0;
      // Aggregating, the kernel's hist counts (read between the profile's two reads) stand for the records.
      // (A STOP that reported no hist file leaves the last periodic reading in place.)
      // STOP's saved_tgids name the processes of the threads the last readings had not (`--by pid`).
      this.threadProcesses.settle(report.tgids);
      const kernel =
        this.hist &&
        (report.hist
          ? kernelFigures(report.hist, this.hist, this.pointsOf, (p) => this.probeName(p), this.opts.keys, this.threadProcesses.known)
          : this.aggregates.kernelFigures);
      if (kernel) this.aggregates.setKernel(kernel);
      const counted = (ev: string, i: number) => (kernel ? pointHits(kernel, ev, i) : (this.records.get(ev)?.[i] ?? 0));
      report = countsAtCut(report, counted, kernel ? kernel.dropped : Math.max(0, streamLost - marks) + this.lostAtRemovals);
      for (const [ev, n] of this.removedKernelHits) if (!report.kernelHits.has(ev)) report.kernelHits.set(ev, n);
      const stats = kernel ? { ...this.parser!.stats, hits: totalHits(kernel), lost: kernel.dropped } : this.parser!.stats;
      const loss = lossReport(stats, kernel ? { ...report, cpus: [] } : report, this.opts.pid !== undefined || !!this.opts.filter);
      loss.kernelHits = this.perPoint(report);
      if (this.lostAtRemovals) {
        loss.lost += this.lostAtRemovals;
        loss.unaccounted -= this.lostAtRemovals;
      }
      if (marks && loss.lost >= marks) {
        loss.lost -= marks;
        loss.unaccounted += marks;
        if (!(this.opts.pid !== undefined || this.opts.filter)) loss.mismatch = loss.unaccounted;
      }
      this.state = 'stopped';
      this.finalMismatch = loss.mismatch;
      let missed = 0;
      for (const n of loss.missed.values()) missed += n;
      // The views read lost calls from the aggregates: the kernel's misses are known only now.
      if (missed) this.aggregates.addLost(missed);
      const sum = this.aggregates.summary();
      return {
        host: this.host,
        ...(this.stream ? { stream: this.stream } : {}),
        hits: sum.hits,
        sites: sum.sites,
        latency: sum.latency,
        timings: sum.timings,
        lost: loss.lost,
        mismatch: loss.mismatch,
        kernelHits: this.byProbe(loss.kernelHits),
        ...(missed
          ? { missed: this.byProbe(new Map([...loss.missed].map(([ev, n]) => [this.pointsOf.get(ev)?.[0]?.event ?? ev, n]))) }
          : {}),
        ...(sum.aggregated ? { aggregated: sum.aggregated, pids: sum.pids } : {}),
        ...(sum.keys ? { keys: sum.keys } : {}),
        loss,
        ...(this.gate?.discarded ? { discarded: this.gate.discarded } : {}),
      };
    })();
    return this.ended;
  }

  /** Per-point counts summed per probe (events this session never defined keep their own name). */
  private byProbe(perPoint: ReadonlyMap<string, number>): Record<string, number> {
    const out: Record<string, number> = nameRecord();
    for (const [ev, n] of perPoint) {
      const name = this.probeOf.get(ev) ?? ev;
      out[name] = (out[name] ?? 0) + n;
    }
    return out;
  }

  /**
   * The kernel's counts under the names hits carry: an event's points are listed in the order they were defined,
   * which is their SITE_ARG order. A removed event keeps its total under its tracefs name.
   */
  private perPoint(report: StopReport): Map<string, number> {
    const out = new Map<string, number>();
    for (const [ev, n] of report.kernelHits) {
      const points = this.pointsOf.get(ev);
      const counts = report.pointHits?.get(ev);
      if (points && counts && points.length === counts.length && points.length > 1) counts.forEach((c, i) => out.set(points[i].event, c));
      else if (points?.length === 1) out.set(points[0].event, n);
      else out.set(ev, n);
    }
    return out;
  }

  /**
   * After stop(): this process need not wait for the agent's teardown (it may exit meanwhile; the agent finishes
   * by itself). `exited` then settles only while something else keeps this process running.
   */
  release(): void {
    this.agent?.detach();
  }

  /** Drop the connection without stopping: the agent notices (stdin EOF) and cleans up by itself. */
  abandon(): void {
    this.agent?.abandon();
  }

  /**
   * Ends the session now, whatever it is doing (a stop waiting on a long disarm included): what arrived so far
   * is summarised with `cause` as its error, and the agent is left to clean up by itself (stdin EOF; it finishes
   * a disarm it is running first).
   */
  interrupt(cause: string): SessionSummary {
    if (!this.closed) this.endCause ??= cause;
    const sum = this.partialSummarySync();
    this.agent?.detach();
    return sum;
  }

  /** Whether this target's kernel could count the session's hits itself (hist triggers: `aggregate`). */
  get canAggregate(): boolean {
    return !!this.agent?.hello.caps.has('hist');
  }

  /** Why the session ended early, once it has (see SessionSummary.error). */
  get error(): string | undefined {
    return this.endCause;
  }

  /** The summary of a session that could not stop completely: what arrived, after the stream has ended (bounded). */
  private async partialSummary(waitForStream: boolean): Promise<SessionSummary> {
    if (waitForStream && !this.closed) {
      // The agent is gone: the records it wrote before are still in the pipe; take them, but wait boundedly.
      let timer: NodeJS.Timeout | undefined;
      await Promise.race([this.traceEnded, new Promise((r) => (timer = setTimeout(r, 5000)))]);
      clearTimeout(timer);
    }
    if (this.sweeping) {
      let timer: NodeJS.Timeout | undefined;
      const swept = await Promise.race([this.sweeping, new Promise<boolean>((r) => (timer = setTimeout(() => r(false), 30_000)))]);
      clearTimeout(timer);
      if (swept && this.endCause) this.endCause += '; what it left on the target was removed';
    }
    return this.partialSummarySync();
  }

  private partialSummarySync(): SessionSummary {
    if (!this.closed) {
      this.closed = true;
      this.parser?.end();
      this.state = 'failed';
    }
    this.stopReading();
    const sum: AggregateSummary = this.aggregates?.summary() ?? { hits: nameRecord(), sites: nameRecord(), latency: nameRecord() };
    return {
      host: this.host,
      ...(this.stream ? { stream: this.stream } : {}),
      hits: sum.hits,
      sites: sum.sites,
      latency: sum.latency,
      timings: sum.timings,
      ...(sum.aggregated ? { aggregated: sum.aggregated, pids: sum.pids } : {}),
      ...(sum.keys ? { keys: sum.keys } : {}),
      lost: (this.parser?.stats.lost ?? 0) + this.lostAtRemovals,
      mismatch: 0,
      kernelHits: nameRecord(this.removedKernelHits),
      error: this.endCause ?? `the session on ${this.host} ended early`,
    };
  }

  /**
   * received + lost against the kernel's count (see LossReport.mismatch): once stopped, the summary's figure;
   * while tracing, the records that arrived and could not be read (the kernel's count comes at stop).
   */
  get mismatch(): number {
    return this.finalMismatch ?? this.parser?.stats.malformed ?? 0;
  }

  /** The probed files that changed on the target while armed (see fileWatch.ts). */
  get fileChanges(): FileChange[] {
    return [...(this.gate?.changes.values() ?? [])].map((c) => ({ ...c }));
  }

  /** Settles when the agent has exited, for whatever reason (after a stop: once it has removed every probe). */
  get exited(): Promise<unknown> {
    return this.agent?.exit ?? Promise.resolve();
  }
}

// One target's probes from arming to cleanup: start the fixed agent, check the binary is the one indexed,
// compile the specs for this session's group, define and arm them, parse the stream into hits and aggregates,
// and stop (or lose the client) with nothing left behind on the target.
import type { BinaryIndex } from '../index/binaryIndex';
import { readBinaryIdentity } from '../index/identity';
import { compileProbes, type CompiledProbe } from '../probes/compiler';
import { checkProbePath } from '../probes/definition';
import type { ProbeSpec } from '../probes/spec';
import type { Target } from '../target/target';
import { AgentError, offendingToken, TracefsAgent } from '../tracefs/agentClient';
import { HitParser, type EventSchema, type Hit, type HitValue } from '../tracefs/hitParser';
import { lossReport, type LossReport } from '../tracefs/loss';
import { Aggregates, type LatencyPair, type ProbeSite } from './aggregates';

export type SessionState = 'starting' | 'armed' | 'stopping' | 'stopped' | 'failed';

export interface SessionOptions {
  target: Target;
  /** Run the agent through `sudo -n`. */
  sudo?: boolean;
  index: BinaryIndex;
  specs: Array<string | ProbeSpec>;
  /** The binary's path on the target, when it differs from the local one. */
  remotePath?: string;
  pid?: number;
  /** Kernel event filter (events.rst syntax) over argument names and common_pid, applied to every event. */
  filter?: string;
  bufferKb?: number;
  noBuildIdCheck?: boolean;
  /** Seconds of client silence after which the agent cleans up by itself (default 3). */
  heartbeatSeconds?: number;
  debugDirs?: string[];
  /** A spec may arm at most this many sites (default 128); more is refused until raised (CLI --max-sites). */
  maxSites?: number;
  /** Site addresses ("0x…") not to arm. */
  disabledSites?: ReadonlySet<string>;
  onHit?: (hit: Hit) => void;
  onLost?: (events: number) => void;
}

export interface SessionSummary {
  host: string;
  hits: Record<string, number>;
  lost: number;
  /** received + lost − the kernel's count, negated; 0 when they agree (see LossReport.mismatch). */
  mismatch: number;
  kernelHits: Record<string, number>;
  latency: Record<string, { p50: number; p90: number; p99: number; max: number }>;
  loss?: LossReport;
}

export class BuildIdMismatchError extends Error {
  constructor(
    readonly host: string,
    readonly path: string,
    detail: string,
  ) {
    super(`binary on ${host} differs from the local build (${path}: ${detail}): rebuild or deploy it, or pass --no-build-id-check`);
    this.name = 'BuildIdMismatchError';
  }
}

export class DefinitionRejectedError extends Error {
  constructor(
    readonly host: string,
    readonly probe: CompiledProbe,
    readonly kernelMessage: string,
    readonly token: string | null,
  ) {
    super(`the kernel on ${host} rejected probe ${probe.event}${token ? ` at '${token}'` : ''}: ${kernelMessage}`);
    this.name = 'DefinitionRejectedError';
  }
}

function schemaOf(p: CompiledProbe): EventSchema {
  const retval = p.kind === 'return' ? p.args.find((a) => a.fetch === '$retval' || a.name === 'retval') : undefined;
  return {
    event: p.event,
    probe: p.event,
    kind: p.kind,
    args: p.args.map((a) => ({ name: a.name, type: a.type })),
    retvalArg: retval?.name,
  };
}

function pairsOf(probes: CompiledProbe[]): LatencyPair[] {
  const byKey = new Map<string, { entry?: string; exits: string[]; by?: string }>();
  for (const p of probes) {
    if (!p.pairKey) continue;
    const e = byKey.get(p.pairKey) ?? { exits: [] };
    if (p.kind === 'entry') e.entry = p.event;
    else if (p.kind === 'return') e.exits.push(p.event);
    if (p.pairBy === 'goroutine') e.by = 'probelens_g';
    byKey.set(p.pairKey, e);
  }
  const out: LatencyPair[] = [];
  for (const e of byKey.values()) if (e.entry && e.exits.length) out.push({ entry: e.entry, exit: e.exits, by: e.by });
  return out;
}

/** Cuts Go strings at their length, sign-extends signed bitfields, and drops ProbeLens's hidden arguments. */
function presentHit(hit: Hit, probe: CompiledProbe | undefined): Hit {
  if (!probe) return hit;
  const args: Record<string, HitValue> = {};
  for (const a of probe.args) {
    if (a.hidden) continue;
    let v = hit.args[a.name];
    if (a.lengthArg && Array.isArray(v)) {
      // A Go string: a byte preview and its length (see GO_STRING_PREVIEW in the compiler).
      const len = hit.args[a.lengthArg];
      const bytes = Buffer.from(v.map((b) => Number(b) & 0xff));
      if (typeof len === 'number' && len >= 0)
        v = bytes.subarray(0, Math.min(len, bytes.length)).toString('utf8') + (len > bytes.length ? '…' : '');
    }
    const bits = /^b([0-9]+)@/.exec(a.type);
    if (bits && a.display === 'signed' && typeof v === 'number') {
      const w = Number(bits[1]);
      if (w < 53 && v >= 2 ** (w - 1)) v -= 2 ** w;
    }
    if (v !== undefined && !(hit.kind === 'return' && a.fetch === '$retval')) args[a.name] = v;
  }
  const comm = hit.args.probelens_comm;
  const out: Hit = { ...hit, args, comm: typeof comm === 'string' && comm ? comm : hit.comm };
  if (probe.site) out.site = probe.site;
  return out;
}

export class TraceSession {
  state: SessionState = 'starting';
  probes: CompiledProbe[] = [];
  aggregates!: Aggregates;
  private agent?: TracefsAgent;
  private parser?: HitParser;
  private traceEnded?: Promise<void>;
  private finalMismatch?: number;
  private ended?: Promise<SessionSummary>;
  private readonly byEvent = new Map<string, CompiledProbe>();

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
      await s.agent?.stop().catch(() => s.agent?.kill('TERM'));
      throw e;
    }
    return s;
  }

  private async arm(): Promise<void> {
    const { opts } = this;
    const agent = (this.agent = await TracefsAgent.start(opts.target, {
      sudo: opts.sudo,
      heartbeatTimeoutSeconds: opts.heartbeatSeconds ?? 3,
    }));
    const remotePath = opts.remotePath ?? opts.index.path;
    checkProbePath(remotePath);
    if (!opts.noBuildIdCheck) {
      const id = readBinaryIdentity(opts.index.path);
      if (id.buildId && id.buildIdOffset !== undefined && id.buildIdLength !== undefined) {
        if (id.buildId !== opts.index.buildId)
          throw new BuildIdMismatchError(
            'this machine',
            opts.index.path,
            `the index is of build ${opts.index.buildId}, the file is now ${id.buildId}; re-index`,
          );
        try {
          await agent.checkBuildId(remotePath, id.buildIdOffset, id.buildIdLength, id.buildId);
        } catch (e) {
          if (e instanceof AgentError && e.code === 'EMISMATCH')
            throw new BuildIdMismatchError(this.host, remotePath, `build-id ${id.buildId} expected; ${e.details.join(' ') || e.message}`);
          throw e;
        }
      }
    }
    this.probes = await compileProbes(opts.specs, opts.index, {
      group: agent.group,
      targetPath: remotePath,
      debugDirs: opts.debugDirs,
      refCtrOffset: agent.hello.caps.has('ref_ctr_offset') || undefined,
      maxSites: opts.maxSites,
      disabledSites: opts.disabledSites,
    });
    for (const p of this.probes) this.byEvent.set(p.event, p);
    const sites = new Map<string, ProbeSite>();
    for (const p of this.probes) if (p.file && p.line) sites.set(p.event, { file: p.file, line: p.line });
    this.aggregates = new Aggregates(sites, pairsOf(this.probes));
    this.parser = new HitParser({
      host: this.host,
      events: this.probes.map(schemaOf),
      sentinel: agent.sentinel,
      onHit: (raw) => {
        const hit = presentHit(raw, this.byEvent.get(raw.event));
        // Aggregates see what users see; the hidden goroutine pointer only pairs entries with returns.
        const latencyNs = this.aggregates.add(hit, raw.args);
        if (latencyNs !== undefined) hit.latencyNs = latencyNs;
        opts.onHit?.(hit);
      },
      onLost: (_cpu, n) => {
        this.aggregates.addLost(n);
        opts.onLost?.(n);
      },
    });
    agent.onTraceLine((l) => this.parser!.push(l));
    this.traceEnded = new Promise((res) => agent.onTraceEnd(res));
    if (opts.bufferKb) await agent.setBufferKb(opts.bufferKb);
    for (const p of this.probes) {
      try {
        await agent.define(p.definition);
      } catch (e) {
        if (e instanceof AgentError && e.code === 'EKERNEL') {
          throw new DefinitionRejectedError(
            this.host,
            p,
            e.details
              .filter((d) => d.trim())
              .slice(-3)
              .join(' ')
              .trim() || e.message,
            offendingToken(e.details),
          );
        }
        throw e;
      }
    }
    if (opts.pid !== undefined) await agent.filterPid(opts.pid);
    if (opts.filter) for (const p of this.probes) await agent.setFilter(p.event, opts.filter);
    await agent.arm();
    this.state = 'armed';
    void agent.exit.then(() => {
      if (this.state === 'armed') this.state = 'failed';
    });
  }

  /** Disables and removes every probe, ends the reader, removes the instance; reports counts and loss. */
  stop(): Promise<SessionSummary> {
    this.ended ??= (async () => {
      this.state = 'stopping';
      const report = await this.agent!.stop();
      // STOP's reply comes on stderr, the drained records on stdout: count the hits once the stream has ended
      // (or the channel closed, which ends it too).
      await Promise.race([this.traceEnded, this.agent!.exit]);
      this.parser!.end();
      const loss = lossReport(this.parser!.stats, report, this.opts.pid !== undefined || !!this.opts.filter);
      this.state = 'stopped';
      this.finalMismatch = loss.mismatch;
      const sum = this.aggregates.summary();
      return {
        host: this.host,
        hits: sum.hits,
        latency: sum.latency,
        lost: loss.lost,
        mismatch: loss.mismatch,
        kernelHits: Object.fromEntries(loss.kernelHits),
        loss,
      };
    })();
    return this.ended;
  }

  /** Drop the connection without stopping: the agent notices (stdin EOF) and cleans up by itself. */
  abandon(): void {
    this.agent?.abandon();
  }

  /**
   * received + lost against the kernel's count (see LossReport.mismatch): once stopped, the summary's figure;
   * while tracing, the records that arrived and could not be read (the kernel's count comes at stop).
   */
  get mismatch(): number {
    return this.finalMismatch ?? this.parser?.stats.malformed ?? 0;
  }

  /** Settles when the agent has exited, for whatever reason. */
  get exited(): Promise<unknown> {
    return this.agent?.exit ?? Promise.resolve();
  }
}

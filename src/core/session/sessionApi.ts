// What a trace session takes and gives: its options, its summary, the specs it refused and why, and the one sentence
// that tells how its agent ended early. The session itself is traceSession.ts.
// Tests: test/unit/core/session/sessionEnd.test.ts, test/integration/hitShape.test.ts
import type { BinaryIndex } from '../index/binaryIndex';
import type { CompiledProbe } from '../probes/compiler';
import type { ProbeSpec } from '../probes/spec';
import type { ExecExit, Target } from '../target/target';
import type { Hit } from '../tracefs/hitParser';
import type { LossReport } from '../tracefs/loss';
import type { AggregateSummary, Latency, LatencySummary, SiteCount } from './aggregates';
import type { FileChange, FileGuard } from './fileWatch';
import type { KeySpec } from './keys';
import type { StreamChoice, StreamKind } from './streamChoice';

export type SessionState = 'starting' | 'armed' | 'stopping' | 'stopped' | 'failed';

export interface SessionOptions {
  target: Target;
  /** Run the agent through `sudo -n`. */
  sudo?: boolean;
  /** The binary (or vmlinux) indexed; absent with `runningKernel`. */
  index?: BinaryIndex;
  /**
   * Probe the target's running kernel by its own BTF and kallsyms, no vmlinux (`probelens trace kernel …`; see
   * probes/kernelBtf.ts): they are read from the target before compiling.
   */
  runningKernel?: boolean;
  specs: Array<string | ProbeSpec>;
  /** The binary's path on the target, when it differs from the local one. */
  remotePath?: string;
  pid?: number;
  /** Kernel event filter (events.rst syntax) over argument names and common_pid, applied to every event. */
  filter?: string;
  bufferKb?: number;
  /**
   * Instances of each kernel return probe (1–4096, CLI --maxactive): calls of its function open at once beyond
   * this are missed by the kernel and reported as lost. Default: kretprobeMaxactive (probes/definition.ts).
   */
  maxactive?: number;
  noBuildIdCheck?: boolean;
  /** Seconds of client silence after which the agent cleans up by itself (default 3). */
  heartbeatSeconds?: number;
  debugDirs?: string[];
  /** A spec may arm at most this many sites (default 128); more is refused until raised (CLI --max-sites). */
  maxSites?: number;
  /** Site addresses ("0x…") not to arm. */
  disabledSites?: ReadonlySet<string>;
  /**
   * A spec the compiler or the kernel refuses is set aside (listed in `refused`) and the others are armed;
   * without it the first refusal fails the start (the CLI's behaviour).
   */
  keepGoing?: boolean;
  /**
   * The points of all the specs armed at start share events (by argument names and types), so stopping costs
   * the kernel the same for one function or thousands. One spec of them can then not be removed or toggled alone
   * (the CLI, which never edits a running trace); specs added later get events of their own. Ignored with
   * `keepGoing`, whose refusals take a spec back alone.
   */
  shareAcrossSpecs?: boolean;
  /**
   * Count in the kernel (hist triggers; docs/contracts.md "In-kernel aggregation"): the events are not recorded,
   * their triggers count per probe, site and thread and time entry→return, read every `aggregateEveryMs` (default
   * 1000) and at stop. Refused where the target's kernel has no hist triggers. No hits are delivered.
   */
  aggregate?: boolean;
  aggregateEveryMs?: number;
  /** Count hits per key too (`--by`, keys.ts): streamed by the session, aggregated by one hist trigger per key. */
  keys?: readonly KeySpec[];
  /**
   * Which stream the agent ships: `raw` ring-buffer pages, `text` (trace_pipe), or `auto` (the default, also
   * `PROBELENS_STREAM`): raw where the target can, else text. See streamChoice.ts.
   */
  stream?: StreamChoice;
  onHit?: (hit: Hit) => void;
  onLost?: (events: number) => void;
  /** A probed file changed on the target while armed (see fileWatch.ts); called again as more is known. */
  onFileChange?: (change: FileChange) => void;
  /** Which guard each probed file has once watched (see FileGuard). */
  onFileGuard?: (guard: FileGuard) => void;
}

export interface SessionSummary {
  host: string;
  /** The stream the session used: ring-buffer pages or trace_pipe text (see TraceSession.stream). */
  stream?: StreamKind;
  hits: Record<string, number>;
  /** Records lost on the way, plus the calls kernel probes missed (`missed`). */
  lost: number;
  /**
   * probe → calls its kernel probes missed (kprobe_profile: a return probe with every instance in use, a hit inside
   * another probe's handler); part of `lost`. Absent when none.
   */
  missed?: Record<string, number>;
  /** received + lost − the kernel's count, negated; 0 when they agree (see LossReport.mismatch). */
  mismatch: number;
  kernelHits: Record<string, number>;
  latency: Record<string, LatencySummary>;
  /** The same latencies in full: what several hosts' figures are merged from. */
  timings: Record<string, Latency>;
  /** probe → its sites that were hit and their counts (the same figures as the editor's and the panel's). */
  sites: Record<string, SiteCount[]>;
  /** "kernel" when hist triggers produced the figures (see AggregateSummary). */
  aggregated?: 'kernel';
  /** In the kernel path: probe → hits per thread id. */
  pids?: AggregateSummary['pids'];
  /** probe → key → hits per value (`--by`). */
  keys?: AggregateSummary['keys'];
  loss?: LossReport;
  /** Records discarded because their file was written over (they are counted by the kernel, not in `hits`). */
  discarded?: number;
  /**
   * Why the session ended other than by a complete stop (the agent's watchdog, the connection lost, the agent
   * gone, the client interrupted): one sentence. The counts are then what arrived until that moment (every hit
   * delivered to onHit, none after), `kernelHits` only what was read before (events removed by edits), and
   * `mismatch` 0: the kernel's counts could not be read.
   */
  error?: string;
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

/** A spec the compiler or a target's kernel refused, and why. */
export interface RefusedSpec {
  spec: string;
  error: Error;
}

export interface AddResult {
  added: CompiledProbe[];
  refused: RefusedSpec[];
}

/** One sentence naming why the agent on `host` ended, from how it exited (see the agent's exit codes). */
export function describeEnd(host: string, e: ExecExit, heartbeatSeconds: number, diagnostics: readonly string[] = []): string {
  if (e.code === 142)
    return `the agent on ${host} heard nothing from ProbeLens for ${heartbeatSeconds} s (was it stopped, e.g. by Ctrl-Z, or starved of CPU?) and removed its probes`;
  if (e.code === null && e.signal === null) return `the connection to ${host} was lost`;
  if (e.signal) return `the agent on ${host} was killed (SIG${e.signal})`;
  if (e.code !== null && e.code > 128 && e.code < 192)
    return `the agent on ${host} was ended by signal ${e.code - 128} and removed its probes`;
  const tail = diagnostics.slice(-2).join(' | ');
  return `the agent on ${host} exited unexpectedly (code ${e.code})${tail ? `: ${tail}` : ''}`;
}

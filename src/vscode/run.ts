// One TraceSession of one binary on one target, as the editor's tracing keeps it (src/vscode/tracing.ts): its state,
// its errors and warnings per spec, its numbers once stopped; and how a run's session reads as a SessionView.
// A run either streams the binary's probes or counts one spec in the kernel (`aggSpec`).
// Tests: test/e2e/traceLens.test.ts, test/e2e/aggregateToggle.test.ts
import { formatDefinition } from '../core/probes/definition';
import type { CompiledProbe } from '../core/probes/compiler';
import type { TraceSession } from '../core/session/traceSession';
import type { SessionView } from './model/stats';
import type { RunKernel } from './targetKernels';
import type { TargetEntry } from './targets';

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
  /** The one spec this run counts in the kernel (hist triggers); absent: the binary's streaming session. */
  aggSpec?: string;
}

/** A run's key in `runs`: the binary's streaming session on a target, or one spec's kernel-counting session. */
export const runId = (targetId: string, key: string, aggSpec?: string) =>
  aggSpec === undefined ? `${targetId}\0${key}` : `${targetId}\0${key}\0${aggSpec}`;

export interface SpecLocation {
  file: string;
  line: number;
}

/** A run's session's numbers, as the editor's views read them, and which path produced them. */
export function viewOf(r: Run, s: TraceSession): SessionView {
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
    path: s.opts.aggregate ? 'kernel' : 'stream',
  };
}

export function noteArmed(log: { log(line: string): void }, run: Run, probes: CompiledProbe[]): void {
  for (const p of probes) {
    log.log(`  → ${run.target.label}: ${formatDefinition(p.definition)}`);
    run.specErrors.delete(p.spec);
    if (p.warnings.length) run.specWarnings.set(p.spec, [...(run.specWarnings.get(p.spec) ?? []), ...p.warnings]);
  }
}

export function noteRefused(log: { log(line: string): void }, run: Run, spec: string, e: Error): void {
  // CompileError repeats the spec in its message; the spec is shown beside it anyway.
  const msg = e.message;
  run.specErrors.set(spec, msg.startsWith(`${spec}: `) ? msg.slice(spec.length + 2) : msg);
  log.log(`  ✗ ${spec}: ${msg}`);
}

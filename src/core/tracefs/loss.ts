// What was lost between the kernel and us, from three sources that must agree (never silent):
// the stream's `CPU:N [LOST M EVENTS]` lines (live), the instance's per-CPU ring-buffer counters at stop
// (`overrun` in overwrite mode, `dropped events` when overwrite is off) and uprobe_profile's per-event hit totals.
import type { StopReport } from './agentClient';
import type { ParserStats } from './hitParser';

export interface LossReport {
  /** Events the kernel recorded as lost: the per-CPU counters when the agent reported them, else the stream's. */
  lost: number;
  streamLost: number;
  overrun: number;
  dropped: number;
  commitOverrun: number;
  /** uprobe_profile hits per event name (probes fired, recorded or not). */
  kernelHits: Map<string, number>;
  /**
   * kernel hits − received − lost: events neither delivered nor counted as lost (e.g. filtered by --filter or
   * --pid, which uprobe_profile still counts; or a stream cut short). 0 for an unfiltered, cleanly stopped run.
   */
  unaccounted: number;
  /**
   * How far received + lost is from the kernel's count, where they must be equal: for a session that filters
   * nothing, kernel hits − received − lost (negative: more records than the kernel counted). With `--pid` or
   * `--filter` the kernel also counts the events filtered out (`unaccounted`), so only the records that reached
   * us and could not be read are certain: their count. 0 when everything is accounted for.
   */
  mismatch: number;
}

/** `filtered`: the session had a pid filter or an event filter (the kernel counts hits it then does not record). */
export function lossReport(parser: ParserStats, stop: StopReport, filtered = false): LossReport {
  const sum = (f: (c: StopReport['cpus'][number]) => number) => stop.cpus.reduce((s, c) => s + f(c), 0);
  const overrun = sum((c) => c.overrun);
  const dropped = sum((c) => c.dropped);
  const commitOverrun = sum((c) => c.commitOverrun);
  const lost = stop.cpus.length > 0 ? overrun + dropped + commitOverrun : parser.lost;
  let kernelTotal = 0;
  for (const n of stop.kernelHits.values()) kernelTotal += n;
  const unaccounted = kernelTotal - parser.hits - lost;
  return {
    lost,
    streamLost: parser.lost,
    overrun,
    dropped,
    commitOverrun,
    kernelHits: stop.kernelHits,
    unaccounted,
    mismatch: filtered ? parser.malformed : unaccounted,
  };
}

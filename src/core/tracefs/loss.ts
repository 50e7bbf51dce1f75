// What was lost between the kernel and us, from three sources that must agree (never silent):
// the stream's `CPU:N [LOST M EVENTS]` lines (live), the instance's per-CPU ring-buffer counters at stop
// (`overrun` in overwrite mode, `dropped events` when overwrite is off) and uprobe_profile's per-event hit totals;
// and, for kernel probes, the calls the kernel missed before any record was made (kprobe_profile).
import type { StopReport } from './agentClient';
import type { ParserStats } from './hitParser';

export interface LossReport {
  /**
   * Events lost: the per-CPU counters when the agent reported them (else the stream's), plus the calls the kernel
   * missed (`missed`).
   */
  lost: number;
  /** Calls kernel probes missed (kprobe_profile): never recorded nor counted as hits; per event. */
  missed: Map<string, number>;
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
  // Entries still in the buffer once the reader has ended (a client too slow to drain it at a stop) never arrive.
  const unread = sum((c) => c.entries);
  const lost = stop.cpus.length > 0 ? overrun + dropped + commitOverrun + unread : parser.lost;
  let kernelTotal = 0;
  for (const n of stop.kernelHits.values()) kernelTotal += n;
  const unaccounted = kernelTotal - parser.hits - lost;
  const missed = stop.kernelMissed ?? new Map<string, number>();
  let missedTotal = 0;
  for (const n of missed.values()) missedTotal += n;
  return {
    lost: lost + missedTotal,
    missed,
    streamLost: parser.lost,
    overrun,
    dropped,
    commitOverrun,
    kernelHits: stop.kernelHits,
    unaccounted,
    mismatch: filtered ? parser.malformed : unaccounted,
  };
}

/**
 * The kernel's counts at STOP's cut. STOP stops recording at once and disarms later, so the kernel goes on
 * counting calls it no longer records: its counts are read just before the cut (`kernelHitsBefore`) and just
 * after (`kernelHits`), and the count at the cut lies between the two, point by point. Each point takes what
 * arrived from it when that lies in its range (else the nearer end), and the total is then moved, within the
 * ranges, as close as it comes to everything received plus `lost` (which no point can claim). So a session that
 * received every record has no mismatch however busy its program was at the cut, and one that missed records
 * still shows them: a total outside every range is off by the distance to it. `received(event, i)` counts the
 * records of the i-th point of an event. A report without counts from before the cut is returned as it is.
 */
export function countsAtCut(stop: StopReport, received: (event: string, point: number) => number, lost: number): StopReport {
  const before = stop.pointHitsBefore;
  if (!before || !stop.pointHits) return stop;
  const rows: Array<{ event: string; lo: number[]; hi: number[]; at: number[] }> = [];
  let got = lost;
  for (const [event, hi] of stop.pointHits) {
    const b = before.get(event);
    const lo = b && b.length === hi.length ? b.map((n, i) => Math.min(n, hi[i])) : hi;
    const at = hi.map((h, i) => {
      const r = received(event, i);
      got += r;
      return Math.max(lo[i], Math.min(h, r));
    });
    rows.push({ event, lo, hi, at });
  }
  let total = 0;
  let min = 0;
  let max = 0;
  for (const r of rows)
    for (let i = 0; i < r.at.length; i++) {
      total += r.at[i];
      min += r.lo[i];
      max += r.hi[i];
    }
  let move = Math.max(min, Math.min(max, got)) - total;
  for (const r of rows)
    for (let i = 0; i < r.at.length && move !== 0; i++) {
      const step = move > 0 ? Math.min(move, r.hi[i] - r.at[i]) : Math.max(move, r.lo[i] - r.at[i]);
      r.at[i] += step;
      move -= step;
    }
  const kernelHits = new Map(stop.kernelHits);
  const pointHits = new Map(stop.pointHits);
  for (const r of rows) {
    kernelHits.set(
      r.event,
      r.at.reduce((a, b) => a + b, 0),
    );
    pointHits.set(r.event, r.at);
  }
  return { cpus: stop.cpus, kernelHits, pointHits, ...(stop.kernelMissed ? { kernelMissed: stop.kernelMissed } : {}) };
}

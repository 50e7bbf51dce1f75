// When to offer counting a streamed probe in the kernel instead: its session is losing hits (the ring buffer
// overflowed between two looks), or the probe fires faster than the stream carries. Pure: the editor samples each
// streaming session about once a second and asks `pressure` which of its probes to name; `offerText` says it.
// Tests: test/unit/vscode/model/aggregateOffer.test.ts
import { formatCount } from '../../shared/hitText';

/**
 * Hits per second above which a probe is offered the kernel path before anything is lost: beyond it the records
 * cost the target and the editor more than the numbers are worth (the kernel counts the same figures without them).
 */
export const STREAM_RATE_LIMIT = 20_000;

/** One look at a streaming session: when (ms), its events lost so far, and each streamed spec's hits so far. */
export interface StreamSample {
  t: number;
  lost: number;
  hits: Readonly<Record<string, number>>;
}

export interface Pressure {
  spec: string;
  /** The spec's hits per second over the interval, its share of the lost events included. */
  rate: number;
  /** Events were lost meanwhile (else: only the rate is over the limit). */
  losing: boolean;
}

/**
 * The specs of one session under pressure between two samples. Loss is counted per CPU, not per probe: it is put
 * on the spec that fired most in the interval (the one whose records filled the buffer). Any spec over `limit`
 * hits/s is named too. Intervals shorter than 0.5 s say nothing (a rate over a blip is no rate).
 */
export function pressure(prev: StreamSample | undefined, now: StreamSample, limit = STREAM_RATE_LIMIT): Pressure[] {
  if (!prev) return [];
  const dt = (now.t - prev.t) / 1000;
  if (dt < 0.5) return [];
  const lost = Math.max(0, now.lost - prev.lost);
  const deltas = Object.entries(now.hits).map(([spec, n]) => ({ spec, d: Math.max(0, n - (prev.hits[spec] ?? 0)) }));
  const hottest = deltas.reduce<{ spec: string; d: number } | undefined>((a, b) => (!a || b.d > a.d ? b : a), undefined);
  const out: Pressure[] = [];
  for (const { spec, d } of deltas) {
    const losing = lost > 0 && spec === hottest?.spec;
    const rate = (d + (losing ? lost : 0)) / dt;
    if (losing || rate > limit) out.push({ spec, rate, losing });
  }
  return out;
}

/**
 * What the notification says, and whether it offers the kernel path (only where the target has hist triggers).
 * Where it has none, a fast probe that loses nothing is not worth a word: undefined.
 */
export function offerText(
  p: Pressure,
  host: string,
  canAggregate: boolean,
  limit = STREAM_RATE_LIMIT,
): { message: string; offer: boolean } | undefined {
  if (!canAggregate && !p.losing) return undefined;
  const rate = `${formatCount(Math.round(p.rate))}/s`;
  const what = p.losing
    ? `${p.spec} loses hits at ${rate}`
    : `${p.spec} fires at ${rate}, more than the stream carries (${formatCount(limit)}/s)`;
  if (canAggregate) return { message: `${what} on ${host}: aggregate it in the kernel?`, offer: true };
  return {
    message: `${what} on ${host}, whose kernel has no hist triggers to count it there: narrow the probe (a line or a function called less often, fewer arguments) to see every hit.`,
    offer: false,
  };
}

/** Said of an aggregated probe on a target that cannot count in the kernel: it streams there instead. */
export function noHistNote(host: string): string {
  return `the kernel on ${host} has no hist triggers (its tracefs README offers no 'hist:'; CONFIG_HIST_TRIGGERS is off): probes set to aggregate are streamed there instead, every hit recorded`;
}

/** Remembers which probes were offered, so each is offered once (per probe set key and spec). */
export class OfferedOnce {
  private readonly seen = new Set<string>();

  /** True the first time for this probe. */
  first(key: string, spec: string): boolean {
    const k = `${key}\0${spec}`;
    if (this.seen.has(k)) return false;
    this.seen.add(k);
    return true;
  }
}

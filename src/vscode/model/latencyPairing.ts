// Per-hit latency for the live panel: a return hit is paired with the newest open entry of the same function on
// the same thread (a stack per thread, so recursion pairs inner calls first). Go pairs by goroutine, which the
// presented hits no longer carry, so Go returns get no per-hit latency (the aggregates still have it).
import type { Hit } from '../../core/tracefs/hitParser';

export interface PairInfo {
  pairKey?: string;
  pairBy: 'tid' | 'goroutine';
  kind: 'entry' | 'return' | 'line' | 'usdt';
}

const MAX_DEPTH = 256;
const MAX_THREADS = 65536;

export class LatencyPairer {
  private readonly open = new Map<string, number[]>();

  /** `info(event)` says how an event pairs (from the session's compiled probes). */
  constructor(private readonly info: (event: string) => PairInfo | undefined) {}

  /** Feed every hit in order; returns the entry→return latency in ns for a paired return. */
  latencyNs(hit: Hit): number | undefined {
    const p = this.info(hit.event);
    if (!p?.pairKey || p.pairBy !== 'tid') return undefined;
    const key = `${hit.host}\0${hit.pid}\0${hit.tid}\0${p.pairKey}`;
    if (p.kind === 'entry') {
      let stack = this.open.get(key);
      if (!stack) {
        if (this.open.size >= MAX_THREADS) this.open.delete(this.open.keys().next().value!);
        this.open.set(key, (stack = []));
      }
      stack.push(hit.ts);
      if (stack.length > MAX_DEPTH) stack.shift();
      return undefined;
    }
    if (p.kind !== 'return') return undefined;
    const stack = this.open.get(key);
    const start = stack?.pop();
    if (stack && stack.length === 0) this.open.delete(key);
    return start === undefined ? undefined : Math.max(0, Math.round((hit.ts - start) * 1e9));
  }
}

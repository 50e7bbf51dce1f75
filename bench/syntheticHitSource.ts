// SyntheticHitSource: hits shaped like a real session's, at a fixed rate, for `bench:panel`. A handful of
// probes on three hosts; entry hits carry 0–4 arguments (ints, u64 decimal strings, pointers, strings),
// return hits a value and a latency. Runs in Node or a browser worker (no Node imports).
import type { Hit, ProbeKind } from '../src/shared/hit';

export class SyntheticHitSource {
  private timer: ReturnType<typeof setInterval> | undefined;
  private emitted = 0;
  private seq = 0;
  private readonly probes = ['parse_request', 'hash_key', 'lookup', 'send_reply', 'alloc_buf', 'free_buf', 'log_line', 'checksum'];
  private readonly hosts = ['web1', 'web2', 'db1'];

  constructor(private readonly rate: number) {}

  get count(): number {
    return this.emitted;
  }

  /** Emits every 10 ms whatever is due since the start, so a late tick catches up instead of lowering the rate. */
  start(onHits: (hits: Hit[]) => void): void {
    const t0 = performance.now();
    this.timer = setInterval(() => {
      const due = Math.floor(((performance.now() - t0) / 1000) * this.rate) - this.emitted;
      if (due <= 0) return;
      const hits = new Array<Hit>(due);
      for (let i = 0; i < due; i++) hits[i] = this.next();
      this.emitted += due;
      onHits(hits);
    }, 10);
  }

  stop(): void {
    clearInterval(this.timer);
  }

  private next(): Hit {
    const n = this.seq++;
    const p = n % this.probes.length;
    const ret = n % 3 === 2;
    const kind: ProbeKind = ret ? 'return' : 'entry';
    const args: Record<string, number | string> = {};
    if (!ret) {
      args.len = (n * 7919) % 65536;
      if (p % 2 === 0) args.key = `0x${(n * 2654435761).toString(16).slice(-12)}`;
      if (p % 3 === 0) args.id = '18446744073709551' + String(n % 1000).padStart(3, '0');
      if (p === 6) args.msg = `request ${n} done`;
    }
    return {
      host: this.hosts[n % 3],
      probe: this.probes[p],
      event: this.probes[p],
      kind,
      pid: 4000 + (n % 5),
      tid: 4000 + (n % 17),
      comm: 'server',
      cpu: n % 2,
      ts: 5000 + n / this.rate,
      args,
      ...(ret ? { retval: n % 11 === 0 ? -11 : 0, latencyNs: 200 + ((n * 48271) % 2_000_000) } : {}),
    };
  }
}

// Bounded history of hits, column-oriented in typed arrays so that 100,000 retained rows cost a fixed,
// small amount of memory and no per-hit objects. Rows are addressed by a sequence number that only grows;
// the oldest are overwritten once the ring is full and counted as dropped.

export interface RingRow {
  ts: number;
  host: number;
  probe: number;
  kind: number;
  pid: number;
  tid: number;
  comm: number;
  cpu: number;
  latencyNs: number;
  argText: string;
  retText: string;
}

export class HitRing {
  readonly capacity: number;
  /** sequence number of the oldest retained row */
  start = 0;
  /** sequence number the next row gets */
  end = 0;
  /** rows overwritten since the last clear */
  dropped = 0;

  private readonly ts: Float64Array;
  private readonly latency: Float64Array;
  private readonly ints: Int32Array; // host, probe, kind, pid, tid, comm, cpu per row
  private readonly argText: string[];
  private readonly retText: string[];

  constructor(capacity: number) {
    if (!(capacity >= 1)) throw new RangeError(`history capacity must be at least 1, got ${capacity}`);
    this.capacity = Math.floor(capacity);
    this.ts = new Float64Array(this.capacity);
    this.latency = new Float64Array(this.capacity);
    this.ints = new Int32Array(this.capacity * 7);
    this.argText = new Array<string>(this.capacity).fill('');
    this.retText = new Array<string>(this.capacity).fill('');
  }

  get size(): number {
    return this.end - this.start;
  }

  has(seq: number): boolean {
    return seq >= this.start && seq < this.end;
  }

  push(r: RingRow): number {
    const seq = this.end++;
    if (this.end - this.start > this.capacity) {
      this.start++;
      this.dropped++;
    }
    const s = seq % this.capacity;
    this.ts[s] = r.ts;
    this.latency[s] = r.latencyNs;
    const o = s * 7;
    this.ints[o] = r.host;
    this.ints[o + 1] = r.probe;
    this.ints[o + 2] = r.kind;
    this.ints[o + 3] = r.pid;
    this.ints[o + 4] = r.tid;
    this.ints[o + 5] = r.comm;
    this.ints[o + 6] = r.cpu;
    this.argText[s] = r.argText;
    this.retText[s] = r.retText;
    return seq;
  }

  /** Reads a retained row into `out` (reused by callers to avoid garbage); false when evicted or not yet written. */
  read(seq: number, out: RingRow): boolean {
    if (!this.has(seq)) return false;
    const s = seq % this.capacity;
    const o = s * 7;
    out.ts = this.ts[s];
    out.latencyNs = this.latency[s];
    out.host = this.ints[o];
    out.probe = this.ints[o + 1];
    out.kind = this.ints[o + 2];
    out.pid = this.ints[o + 3];
    out.tid = this.ints[o + 4];
    out.comm = this.ints[o + 5];
    out.cpu = this.ints[o + 6];
    out.argText = this.argText[s];
    out.retText = this.retText[s];
    return true;
  }

  clear(): void {
    // Sequence numbers keep growing across a clear so stale references (selection, anchors) never alias new rows.
    this.start = this.end;
    this.dropped = 0;
  }
}

export function emptyRow(): RingRow {
  return { ts: 0, host: 0, probe: 0, kind: 0, pid: 0, tid: 0, comm: 0, cpu: 0, latencyNs: -1, argText: '', retText: '' };
}

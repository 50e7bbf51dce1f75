// Bounded history of hits, column-oriented in typed arrays so that 100,000 retained rows cost a fixed,
// small amount of memory. Rows are addressed by a sequence number that only grows; the oldest are
// overwritten once the ring is full and counted as dropped.
//
// Argument and return-value text is not built on arrival (at 100,000 hits/s that is most of the work and
// most of the garbage): a row keeps a reference to the batch it came in and its offset there, and the text
// is made when the row is read, which happens only for rows on screen, filtering and export.
import { formatArgs } from '../../src/shared/hitFilter';
import type { HitBatch } from '../../src/shared/protocol';

/** A row as read back. Ids (host, probe, comm) index the view's string table; kind indexes HIT_KINDS. */
export interface RingRow {
  ts: number;
  host: number;
  probe: number;
  kind: number;
  pid: number;
  tid: number;
  comm: number;
  cpu: number;
  /** -1 when none */
  latencyNs: number;
  argText: string;
  retText: string;
}

/** A row as stored: its fields, and where in its batch the arguments and return value are. */
export interface RingInput {
  ts: number;
  host: number;
  probe: number;
  kind: number;
  pid: number;
  tid: number;
  comm: number;
  cpu: number;
  latencyNs: number;
  batch: HitBatch;
  row: number;
  argOffset: number;
}

const INTS = 9; // host, probe, kind, pid, tid, comm, cpu, row, argOffset

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
  private readonly ints: Int32Array;
  private readonly batches: (HitBatch | undefined)[];

  constructor(capacity: number) {
    if (!(capacity >= 1)) throw new RangeError(`history capacity must be at least 1, got ${capacity}`);
    this.capacity = Math.floor(capacity);
    this.ts = new Float64Array(this.capacity);
    this.latency = new Float64Array(this.capacity);
    this.ints = new Int32Array(this.capacity * INTS);
    this.batches = new Array<HitBatch | undefined>(this.capacity).fill(undefined);
  }

  get size(): number {
    return this.end - this.start;
  }

  has(seq: number): boolean {
    return seq >= this.start && seq < this.end;
  }

  push(r: RingInput): number {
    const seq = this.end++;
    if (this.end - this.start > this.capacity) {
      this.start++;
      this.dropped++;
    }
    const s = seq % this.capacity;
    this.ts[s] = r.ts;
    this.latency[s] = r.latencyNs;
    const o = s * INTS;
    const ints = this.ints;
    ints[o] = r.host;
    ints[o + 1] = r.probe;
    ints[o + 2] = r.kind;
    ints[o + 3] = r.pid;
    ints[o + 4] = r.tid;
    ints[o + 5] = r.comm;
    ints[o + 6] = r.cpu;
    ints[o + 7] = r.row;
    ints[o + 8] = r.argOffset;
    this.batches[s] = r.batch;
    return seq;
  }

  /** Reads a retained row into `out` (reused by callers to avoid garbage); false when evicted or not yet written. */
  read(seq: number, out: RingRow): boolean {
    if (!this.has(seq)) return false;
    const s = seq % this.capacity;
    const o = s * INTS;
    const ints = this.ints;
    out.ts = this.ts[s];
    out.latencyNs = this.latency[s];
    out.host = ints[o];
    out.probe = ints[o + 1];
    out.kind = ints[o + 2];
    out.pid = ints[o + 3];
    out.tid = ints[o + 4];
    out.comm = ints[o + 5];
    out.cpu = ints[o + 6];
    const b = this.batches[s] as HitBatch;
    const row = ints[o + 7];
    out.argText = argTextOf(b, row, ints[o + 8]);
    const rv = b.retval[row];
    out.retText = rv === null || rv === undefined ? '' : String(rv);
    return true;
  }

  clear(): void {
    // Sequence numbers keep growing across a clear so stale references (selection, anchors) never alias new rows.
    this.start = this.end;
    this.dropped = 0;
    this.batches.fill(undefined);
  }
}

export function argTextOf(b: HitBatch, row: number, argOffset: number): string {
  const names = b.shapes[b.shape[row]];
  if (names.length === 0) return '';
  return formatArgs(
    names.map((i) => b.strings[i]),
    b.args,
    argOffset,
  );
}

export function emptyRow(): RingRow {
  return { ts: 0, host: 0, probe: 0, kind: 0, pid: 0, tid: 0, comm: 0, cpu: 0, latencyNs: -1, argText: '', retText: '' };
}

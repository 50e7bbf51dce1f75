// Bounded history of hits, column-oriented in typed arrays so that 100,000 retained rows cost a fixed,
// small amount of memory. Rows are addressed by a sequence number that only grows; the oldest are
// overwritten once the ring is full and counted as dropped.
//
// Argument and return-value text is not built on arrival (at 100,000 hits/s that is most of the work and
// most of the garbage): a row keeps a reference to the batch it came in and its offset there, and the text
// is made when the row is read, which happens only for rows on screen, filtering and export.
import { formatArgs, formatHitArgs, describeSite, formatValue } from '../../src/shared/hitText';
import type { HitBatch } from '../../src/shared/protocol';
import type { HitValue } from '../../src/shared/hit';
import { nameRecord } from '../../src/shared/names';

/**
 * One retained hit as the table reads it back: the numeric fields of the `Hit`, its strings as ids into the
 * view's string table (kind indexes PROBE_KINDS), and its arguments, return value and site as display text.
 */
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
  /** where the hit's code sits ("inlined into main at a.c:12 (0x…)"), '' when the hit names no site */
  siteText: string;
  /** that site's address and kind, '' when the hit names no site */
  siteAddress: string;
  siteKind: string;
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

  /**
   * Keeps row `row` of `b` (its arguments start at `argOffset` in `b.args`); `ids` maps the batch's string
   * indices to the view's string table.
   */
  push(b: HitBatch, row: number, argOffset: number, ids: readonly number[]): number {
    const seq = this.end++;
    if (this.end - this.start > this.capacity) {
      this.start++;
      this.dropped++;
    }
    const s = seq % this.capacity;
    this.ts[s] = b.ts[row];
    this.latency[s] = b.latencyNs[row];
    const o = s * INTS;
    const ints = this.ints;
    ints[o] = ids[b.host[row]];
    ints[o + 1] = ids[b.probe[row]];
    ints[o + 2] = b.kind[row];
    ints[o + 3] = b.pid[row];
    ints[o + 4] = b.tid[row];
    ints[o + 5] = ids[b.comm[row]];
    ints[o + 6] = b.cpu[row];
    ints[o + 7] = row;
    ints[o + 8] = argOffset;
    this.batches[s] = b;
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
    // Only a hit with a return value shows one (an entry has none; null is a faulted fetch).
    out.retText = b.hasRetval[row] ? formatValue(b.retval[row] ?? null) : '';
    const site = b.site[row];
    const st = site >= 0 ? b.sites[site] : undefined;
    out.siteText = st ? describeSite(st) : '';
    out.siteAddress = st?.address ?? '';
    out.siteKind = st?.kind ?? '';
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
  const note = b.note[row] >= 0 ? b.notes[b.note[row]] : undefined;
  // A probe whose site lacks an argument, or guessed one, says so as the CLI does (`b≈7 p=(unavailable: …)`).
  if (note) {
    const args: Record<string, HitValue> = nameRecord();
    for (let k = 0; k < names.length; k++) args[b.strings[names[k]]] = b.args[argOffset + k];
    return formatHitArgs({ args, ...note });
  }
  if (names.length === 0) return '';
  return formatArgs(
    names.map((i) => b.strings[i]),
    b.args,
    argOffset,
  );
}

export function emptyRow(): RingRow {
  return {
    ts: 0,
    host: 0,
    probe: 0,
    kind: 0,
    pid: 0,
    tid: 0,
    comm: 0,
    cpu: 0,
    latencyNs: -1,
    argText: '',
    retText: '',
    siteText: '',
    siteAddress: '',
    siteKind: '',
  };
}

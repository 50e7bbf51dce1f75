// What the table shows: the bounded history (HitRing), narrowed by the filter, frozen while paused.
// Paused means "keep receiving, stop moving": batches wait in a queue bounded like the history and join
// it on resume, so the rows under the user's eyes are not evicted while they read them.
import { PROBE_KINDS } from '../../src/shared/hit';
import type { HitBatch } from '../../src/shared/protocol';
import { parseFilter, type HitFields, type HitFilter } from '../../src/shared/hitFilter';
import { Interner } from '../../src/shared/interner';
import { HitRing, emptyRow, type RingRow } from './hitRing';

export class HitView {
  readonly ring: HitRing;
  readonly strings = new Interner();
  private filter: HitFilter = parseFilter('');
  private filterText = '';
  /** sequence numbers of matching rows, oldest first, from `matchHead` on (only when a filter is set) */
  private matches: number[] = [];
  private matchHead = 0;
  private pending: HitBatch[] = [];
  private pendingRows = 0;
  private pausedDropped = 0;
  private isPaused = false;
  private readonly scratch = emptyRow();
  private readonly fields: HitFields = {
    probe: '',
    host: '',
    comm: '',
    kind: '',
    pid: 0,
    tid: 0,
    argText: '',
    retText: '',
    site: '',
    siteKind: '',
  };

  constructor(capacity: number) {
    this.ring = new HitRing(capacity);
  }

  get paused(): boolean {
    return this.isPaused;
  }

  /** hits received but not shown: overwritten in the history, or squeezed out of the pause queue */
  get dropped(): number {
    return this.ring.dropped + this.pausedDropped;
  }

  get queued(): number {
    return this.pendingRows;
  }

  get length(): number {
    return this.filter.empty ? this.ring.size : this.matches.length - this.matchHead;
  }

  get filterString(): string {
    return this.filterText;
  }

  seqAt(index: number): number {
    return this.filter.empty ? this.ring.start + index : this.matches[this.matchHead + index];
  }

  /** Row index of a sequence number in the current view, or -1 when it is filtered out or evicted. */
  indexOfSeq(seq: number): number {
    if (!this.ring.has(seq)) return -1;
    if (this.filter.empty) return seq - this.ring.start;
    let lo = this.matchHead;
    let hi = this.matches.length;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      if (this.matches[mid] < seq) lo = mid + 1;
      else hi = mid;
    }
    return lo < this.matches.length && this.matches[lo] === seq ? lo - this.matchHead : -1;
  }

  read(seq: number, out: RingRow): boolean {
    return this.ring.read(seq, out);
  }

  str(id: number): string {
    return this.strings.strings[id] ?? '';
  }

  /** Returns the number of rows that joined the history now (0 while paused). */
  receive(batch: HitBatch): number {
    if (!this.isPaused) return this.ingest(batch);
    this.pending.push(batch);
    this.pendingRows += batch.n;
    while (this.pending.length > 1 && this.pendingRows - this.pending[0].n >= this.ring.capacity) {
      const old = this.pending.shift() as HitBatch;
      this.pendingRows -= old.n;
      this.pausedDropped += old.n;
    }
    return 0;
  }

  pause(): void {
    this.isPaused = true;
  }

  /** Catches up with everything queued while paused; returns the rows added. */
  resume(): number {
    this.isPaused = false;
    let added = 0;
    for (const b of this.pending) added += this.ingest(b);
    this.pending = [];
    this.pendingRows = 0;
    return added;
  }

  setFilter(text: string): void {
    this.filterText = text;
    this.filter = parseFilter(text);
    this.matches = [];
    this.matchHead = 0;
    if (this.filter.empty) return;
    for (let seq = this.ring.start; seq < this.ring.end; seq++) {
      this.ring.read(seq, this.scratch);
      if (this.filter.matches(this.fieldsOf(this.scratch))) this.matches.push(seq);
    }
  }

  clear(): void {
    this.ring.clear();
    this.matches = [];
    this.matchHead = 0;
    this.pending = [];
    this.pendingRows = 0;
    this.pausedDropped = 0;
  }

  private fieldsOf(r: RingRow): HitFields {
    const f = this.fields;
    f.probe = this.str(r.probe);
    f.host = this.str(r.host);
    f.comm = this.str(r.comm);
    f.kind = PROBE_KINDS[r.kind] ?? '';
    f.pid = r.pid;
    f.tid = r.tid;
    f.argText = r.argText;
    f.retText = r.retText;
    f.site = r.siteAddress;
    f.siteKind = r.siteKind;
    return f;
  }

  private ingest(b: HitBatch): number {
    const ids = b.strings.map((s) => this.strings.id(s));
    const filtering = !this.filter.empty;
    let off = 0;
    for (let i = 0; i < b.n; i++) {
      const seq = this.ring.push(b, i, off, ids);
      off += b.shapes[b.shape[i]].length;
      if (filtering) {
        this.ring.read(seq, this.scratch);
        if (this.filter.matches(this.fieldsOf(this.scratch))) this.matches.push(seq);
      }
    }
    if (filtering) {
      while (this.matchHead < this.matches.length && this.matches[this.matchHead] < this.ring.start) this.matchHead++;
      // Compact now and then so the array does not grow with everything ever matched.
      if (this.matchHead > 4096 && this.matchHead * 2 > this.matches.length) {
        this.matches = this.matches.slice(this.matchHead);
        this.matchHead = 0;
      }
    }
    return b.n;
  }
}

// The client's half of the binary stream (see agent/raw.sh): the agent's stdout is a sequence of 64-byte CPU headers
// (`PLRAWCPU`, 8 decimal digits, `LOST`, 12 decimal digits, `NOWT`, 28 right-aligned: the CPU, its loss counters'
// sum and its clock when its stats were read), whole ring-buffer pages of the CPU named last, and a 64-byte round
// end (`PLRAWEND` and 56 zeros) after each round. A page's bytes 12-15 are the upper half of its commit word, 0 or
// all ones; a header's or round end's are ASCII digits: so each item is told by those bytes, exactly. Pages are
// decoded by rawHits.ts (records of our probe events → hits) and rawPages.ts; the live loss is each CPU's counters'
// growth (exact, where a page's lost-events flag often has no room for the count; the kernel zeroes them when it
// resets the buffer at an event's removal, so a drop starts over from 0).
// The pump reads the CPUs in turn, so a thread that moved between CPUs could arrive return before entry: hits (and
// the file watcher's markers) are merged in time order. A CPU's header time says that every record of that CPU
// taken before it is shipped in the pages that follow; those are all in once the next item (a header or the round
// end) arrives. So an item is released once every CPU has been drained past its time, less MERGE_SLACK. The margin is not
// what keeps a thread's order: a record is written with preemption off, so a thread's record is committed before
// it can run on another CPU and take its next one, and the next one's time, before a header's time, proves the
// earlier record counted by that CPU's stats and shipped. It is for the order across threads: a record of another
// thread still being written during the microseconds in which the kernel prints a CPU's stats (its entries before its
// clock) is shipped a round later, and its time may lie a little before the header's (a write interrupted by
// another takes its time from the ring buffer's stamps). A record later than the margin still arrives, only out of
// order with other threads' records. trace_marker records (event ftrace/print) carry the file watcher's markers,
// which end with the session's key as in the text stream. No string can end, hide or forge a record: lengths are
// explicit.
// A record holds the thread id but not the process id: hitProcesses.ts holds the first hit of a thread until the
// agent has named its process; at the end of the stream STOP's saved_tgids settle what is still held (a thread the
// kernel no longer knows: its own id, as trace_pipe prints it).
// The comm is the probe's own `probelens_comm` fetch when it has one (else `<...>`, as trace_pipe prints an unknown).
import type { Hit } from '../../shared/hit';
import type { EventSchema, ParserStats } from './hitParser';
import { checkHeaderEvent, parseEventFormat, parseHeaderPage, type EventFormat, type HeaderPage } from './rawFormat';
import { RawHitDecoder } from './rawHits';
import { RawDecodeError } from './rawPages';
import { HitProcesses, type LookupTgids } from './hitProcesses';

const HEADER_SIZE = 64;
const HEADER = /^PLRAWCPU(\d{8})LOST(\d{12})NOWT *(\d+\.\d+|-)$/;
const ROUND_END = `PLRAWEND${'0'.repeat(56)}`;
/** Seconds: how far before a CPU's header time a record it ships late may lie and still be merged in order. */
export const MERGE_SLACK = 0.002;
const PRINT_PREFIX = 'probelens_watch ';

/** A file watcher's marker waiting in the merge with the hits. */
interface Mark {
  ts: number;
  mark: string;
}

export interface RawStreamOptions {
  host: string;
  /** The instance's events/header_page and events/header_event texts (the agent's RAW reply). */
  headerPage: string;
  headerEvent: string;
  onHit: (hit: Hit) => void;
  onLost?: (cpu: number, count: number) => void;
  /** The file watcher's markers: trace_marker records `probelens_watch TEXT KEY` (see hitParser's option). */
  marker?: { key: string; onMarker: (ts: number, text: string) => void };
  /** The target's CPUs (RAW's reply): a hit is released once each has said a later time. Default: those heard of. */
  cpus?: readonly number[];
  /** Asks the target for the process ids of threads (TGID); a thread it does not name keeps its own id. */
  lookupTgids?: LookupTgids;
}

export class RawStream {
  readonly stats: ParserStats = { hits: 0, lost: 0, lostByCpu: new Map(), unparsed: 0, malformed: 0 };
  readonly header: HeaderPage;
  private readonly decoder: RawHitDecoder;
  private readonly schemas = new Map<string, EventSchema>();
  private carry: Buffer | null = null;
  private cpu = -1;
  private readonly counted = new Map<number, number>();
  /**
   * Each CPU's clock at its last header whose pages are all in (the CPU being drained keeps its previous one until
   * the next item); decoded hits and markers not yet released, which wait for every CPU to pass them.
   */
  private readonly clock = new Map<number, number>();
  private draining: { cpu: number; clock: number } | undefined;
  private pending: Array<Hit | Mark> = [];
  /** After an item that is neither a header nor a page nothing more can be placed: the rest is counted unparsed. */
  private broken = false;
  private print: { id: number; offset: number } | undefined;
  private readonly processes: HitProcesses;

  constructor(private readonly o: RawStreamOptions) {
    this.processes = new HitProcesses(o.onHit, o.lookupTgids);
    this.header = parseHeaderPage(o.headerPage);
    checkHeaderEvent(o.headerEvent);
    this.decoder = new RawHitDecoder({
      host: o.host,
      header: this.header,
      events: [],
      formats: [],
      onHit: (h) => this.hit(h),
      other: (id, sec, nsec, page, offset, length) => this.other(id, sec + nsec / 1e9, page, offset, length),
    });
  }

  /** Events about to be defined: their records are decoded once their format is known (addFormats). */
  addEvents(events: readonly EventSchema[]): void {
    for (const e of events) this.schemas.set(e.event, e);
  }

  /**
   * The format files of defined events (FMT), before they are enabled; `ftrace/print`'s tells trace_marker records.
   * Throws a FormatError for an event whose schema its format does not match.
   */
  addFormats(texts: readonly string[]): void {
    const formats: EventFormat[] = texts.map((t) => parseEventFormat(t));
    const probes: EventFormat[] = [];
    for (const f of formats) {
      if (f.name === 'print' && f.byName.has('buf') && !this.schemas.has('print')) {
        this.print = { id: f.id, offset: f.byName.get('buf')!.offset };
      } else probes.push(f);
    }
    this.decoder.addEvents(
      probes.flatMap((f) => {
        const s = this.schemas.get(f.name);
        return s ? [s] : [];
      }),
      probes,
    );
  }

  push(chunk: Buffer): void {
    if (this.broken) {
      this.stats.unparsed += chunk.length;
      return;
    }
    const buf = this.carry ? Buffer.concat([this.carry, chunk]) : chunk;
    const size = this.header.pageSize;
    let pos = 0;
    while (buf.length - pos >= HEADER_SIZE) {
      const hi = buf.readUInt32LE(pos + 12);
      if (hi === 0 || hi === 0xffffffff) {
        if (buf.length - pos < size) break;
        this.page(buf.subarray(pos, pos + size));
        pos += size;
        continue;
      }
      const item = buf.toString('latin1', pos, pos + HEADER_SIZE);
      if (item === ROUND_END) {
        this.drained();
        this.cpu = -1;
        pos += HEADER_SIZE;
        this.release();
        continue;
      }
      const m = HEADER.exec(item);
      if (!m) {
        this.broken = true;
        this.stats.malformed++;
        this.stats.unparsed += buf.length - pos;
        this.carry = null;
        return;
      }
      this.drained();
      this.cpu = Number(m[1]);
      this.lost(this.cpu, Number(m[2]));
      this.draining = { cpu: this.cpu, clock: m[3] === '-' ? Infinity : parseFloat(m[3]) };
      if (!this.clock.has(this.cpu)) this.clock.set(this.cpu, -Infinity);
      pos += HEADER_SIZE;
      this.release();
    }
    this.carry = pos < buf.length ? Buffer.from(buf.subarray(pos)) : null;
  }

  /**
   * End of stream. `tgids`: STOP's saved thread-group ids, which settle the hits still held (else each keeps its
   * thread id as pid). Bytes left over (a cut page) count as malformed.
   */
  end(tgids?: ReadonlyMap<number, number>): void {
    if (this.carry) {
      this.stats.malformed++;
      this.carry = null;
    }
    // Held hits first (each thread's hits keep their order), then the rest with STOP's ids.
    this.processes.end(tgids);
    this.release(Infinity);
  }

  /** The CPU named last has had all its pages: its header's time holds. */
  private drained(): void {
    if (this.draining) this.clock.set(this.draining.cpu, this.draining.clock);
    this.draining = undefined;
  }

  private lost(cpu: number, total: number): void {
    const before = this.counted.get(cpu) ?? 0;
    this.counted.set(cpu, total);
    const n = total >= before ? total - before : total;
    if (n === 0) return;
    this.stats.lost += n;
    this.stats.lostByCpu.set(cpu, (this.stats.lostByCpu.get(cpu) ?? 0) + n);
    this.o.onLost?.(cpu, n);
  }

  private page(page: Buffer): void {
    if (this.cpu < 0) {
      this.stats.malformed++;
      return;
    }
    try {
      this.decoder.push(page, this.cpu);
    } catch (e) {
      if (!(e instanceof RawDecodeError)) throw e;
      this.stats.malformed++;
    }
  }

  private hit(h: Hit): void {
    this.stats.hits++;
    const comm = h.args.probelens_comm;
    if (typeof comm === 'string' && comm) h.comm = comm;
    this.pending.push(h);
  }

  /** Delivers, in time order, the pending hits and markers no CPU can still precede (see the header). */
  private release(upTo?: number): void {
    if (this.pending.length === 0) return;
    let w = upTo ?? Infinity;
    if (upTo === undefined) {
      for (const c of this.o.cpus ?? this.clock.keys()) w = Math.min(w, this.clock.get(c) ?? -Infinity);
      w -= MERGE_SLACK;
    }
    const p = this.pending;
    let sorted = true;
    for (let i = 1; i < p.length && sorted; i++) sorted = p[i - 1].ts <= p[i].ts;
    if (!sorted) p.sort((a, b) => a.ts - b.ts);
    let n = 0;
    while (n < p.length && p[n].ts <= w) n++;
    if (n === 0) return;
    const out = n === p.length ? p : p.slice(0, n);
    this.pending = n === p.length ? [] : p.slice(n);
    for (const h of out) {
      if ('mark' in h) this.o.marker?.onMarker(h.ts, h.mark);
      else this.processes.deliver(h);
    }
  }

  private other(id: number, ts: number, page: Buffer, offset: number, length: number): void {
    const mk = this.o.marker;
    if (!mk || !this.print || id !== this.print.id) return;
    const start = offset + this.print.offset;
    const end = offset + length;
    if (start > end) return;
    let z = start;
    while (z < end && page[z] !== 0) z++;
    let text = page.toString('utf8', start, z);
    if (text.endsWith('\n')) text = text.slice(0, -1);
    if (!text.startsWith(PRINT_PREFIX) || !text.endsWith(` ${mk.key}`)) return;
    this.pending.push({ ts, mark: text.slice(PRINT_PREFIX.length, text.length - mk.key.length - 1) });
  }
}

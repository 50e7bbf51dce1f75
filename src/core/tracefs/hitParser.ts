// Turns trace_pipe lines into hits. Two formats seen in the wild (columns vary by kernel version and options):
//   this kernel, record-tgid on:  `  comm-123   (    120) [001] DBZff  2488.667250: ev: (0x5646a543f16a) a=-1 s="x"`
//   older kernels, no tgid:       `  comm-123   [001] d...   88.000001: ev: (0x400546) a=-1`
//   irq-info off drops the flags column; return probes print `(0xRET <- 0xFUNC)`; kprobes print `(SYMBOL+0xOFF/0xLEN)`
//   and `(SYMBOL+0xOFF/0xLEN <- FUNCTION)`; a module's symbol with its module, `(SYMBOL+0xOFF/0xLEN [MODULE])`.
// The comm (printed `%16s`, so padded with spaces) and strings are the traced program's text, printed raw: any
// byte but NUL, including newlines, `\r`, U+2028/U+2029 and text shaped like records, arguments or LOST lines.
// With a sentinel (the kernel has immediate fetchargs; see framing.ts) a record is every line up to the one that
// ends with the secret, its header is what precedes the first secret (parsed from its end: the comm comes first),
// and each string ends where the secret follows it; the only lines outside records are the kernel's own
// (`CPU:N [LOST M EVENTS]`, `[LINE TOO BIG]`), which it prints before a record, where a record's first line
// cannot be mistaken for them (it starts with the comm's padding). Without a sentinel (older kernels) records are
// parsed line by line against the schema the client defined, a string ending only where the rest of the record
// still fits (the rightmost such place): a string cannot alter the arguments fetched after it, but with a
// newline it can still end its record early and forge lines after it.
import { frameLayout, isStringType, type Sentinel } from './framing';

export type { Sentinel } from './framing';
import type { Hit, HitValue, ProbeKind } from '../../shared/hit';
import { parseTypedValue } from './values';
import { HitProcesses, type LookupTgids } from './hitProcesses';
import { nameRecord } from '../../shared/names';

export type { Hit, HitValue, ProbeKind } from '../../shared/hit';

export interface EventSchema {
  /** tracefs event name (without group). */
  event: string;
  /** The probe's user-facing name (the spec), reported as `probe`. */
  probe: string;
  kind: ProbeKind;
  /** Fetchargs in definition order: name and tracefs type (`s32`, `x64`, `string`, `u8[4]`, …; '' = untyped). */
  args: Array<{ name: string; type: string }>;
  /** Name of the arg that holds `$retval` on return probes: reported as `retval`, not in `args`. */
  retvalArg?: string;
}

export interface ParserStats {
  hits: number;
  /** Sum of `CPU:N [LOST M EVENTS]` lines seen. */
  lost: number;
  lostByCpu: Map<number, number>;
  /** Lines that were neither events of ours nor LOST lines. */
  unparsed: number;
  /** Event records that did not fit their schema (or grew past the size bound). */
  malformed: number;
}

// Line mode (no sentinel): the header is the start of a line. The `s` flag: a comm may hold `\r`, U+2028 or
// U+2029, which `.` alone does not match (lines never hold `\n`).
const HEADER =
  /^ *(.*?)-(\d+)\s+(?:\(\s*(\d+|-+)\)\s+)?\[(\d+)\]\s+(?:(\S{1,6})\s+)?(\d+(?:\.\d+)?):\s+([A-Za-z_][A-Za-z0-9_]*):\s+\((0x[0-9a-f]+|[A-Za-z_][A-Za-z0-9_.]*\+0x[0-9a-f]+\/0x[0-9a-f]+(?: \[[A-Za-z0-9_]+\])?)(?:\s+<-\s+(0x[0-9a-f]+|[A-Za-z_][A-Za-z0-9_.]*))?\)(.*)$/s;
// Framed mode: the header's fields after the CPU column (the comm before it is the program's text), matched
// from the CPU column's ` [`, the last before the first secret but a module kprobe's ` [MODULE]`.
const FRAMED_TAIL =
  /\[(\d+)\] +(?:\S{1,6} +)?(\d+(?:\.\d+)?): ([A-Za-z_][A-Za-z0-9_]*): \((?:0x[0-9a-f]+|[A-Za-z_][A-Za-z0-9_.]*\+0x[0-9a-f]+\/0x[0-9a-f]+(?: \[[A-Za-z0-9_]+\])?)(?: <- (?:0x[0-9a-f]+|[A-Za-z_][A-Za-z0-9_.]*))?\)/y;
// `CPU:N [LOST EVENTS]` (no count) when the ring buffer could not say how many.
const LOST = /^CPU:(\d+) \[LOST (?:(\d+) )?EVENTS\]$/;
// Printed instead of a record that does not fit the kernel's print buffer (trace_seq, 4 or 8 KiB).
const TOO_BIG = '[LINE TOO BIG]';
const MAX_RECORD = 64 * 1024;
/** What precedes the text of the agent's file-watcher markers (after the record's timestamp). */
const MARK = ': tracing_mark_write: probelens_watch ';

/** Per argument: ` name=`, and for strings the ` MARKER=SECRET` that ends them and whether to step over it. */
type FramePlan = Array<{ key: string; marker: string | undefined; short: string; skip: number }>;

interface Header {
  comm: string;
  tid: number;
  tgid: number | null;
  cpu: number;
  ts: number;
  schema: EventSchema;
}

export class HitParser {
  readonly stats: ParserStats = { hits: 0, lost: 0, lostByCpu: new Map(), unparsed: 0, malformed: 0 };
  private readonly schemas = new Map<string, EventSchema>();
  private readonly plans = new Map<string, FramePlan>();
  private pending: { header: Header; text: string } | null = null;
  /** Framed mode: the lines of the record being read, or null between records. */
  private record: string | null = null;
  /** Framed mode: after an over-long record, skip to the next record end before reading again. */
  private resync = false;
  private readonly tail: string | undefined;
  private readonly value: string | undefined;
  private readonly openTok: string | undefined;
  private readonly openShort: string | undefined;
  private readonly processes: HitProcesses;

  constructor(
    private readonly opts: {
      host: string;
      events: EventSchema[];
      sentinel?: Sentinel | null;
      onHit: (hit: Hit) => void;
      onLost?: (cpu: number, count: number) => void;
      /**
       * The agent's file-watcher markers (trace_marker records `probelens_watch TEXT KEY`): a line ending with
       * ` KEY` is one, wherever it comes (the key is secret, so no traced text can end a line with it).
       */
      marker?: { key: string; onMarker: (ts: number, text: string) => void };
      /**
       * Asks the target for threads' process ids: the printed `(tgid)` can be an earlier thread's (see
       * hitProcesses.ts), so each thread's first hit waits for the target's word. Absent: the printed one.
       */
      lookupTgids?: LookupTgids;
    },
  ) {
    this.processes = new HitProcesses(opts.onHit, opts.lookupTgids);
    this.addEvents(opts.events);
    const s = opts.sentinel;
    if (s) {
      this.value = `=${s.printed}`;
      this.tail = ` ${s.name}${this.value}`;
      const open = frameLayout([], s.name).open;
      this.openTok = ` ${open}${this.value}`;
      this.openShort = `${open}=`;
    }
  }

  /** Events defined after the parser was made (probes added to a running session). */
  addEvents(events: readonly EventSchema[]): void {
    for (const e of events) this.schemas.set(e.event, e);
  }

  push(line: string): void {
    const mk = this.opts.marker;
    if (mk && line.endsWith(mk.key) && this.markerLine(line, mk)) return;
    if (this.tail !== undefined) this.pushFramed(line, this.tail);
    else this.pushLine(line);
  }

  /** End of stream: a record still open (its string never closed) is counted as malformed. */
  end(): void {
    if (this.pending || this.record !== null) this.stats.malformed++;
    this.pending = null;
    this.record = null;
    this.processes.end();
  }

  private markerLine(line: string, mk: { key: string; onMarker: (ts: number, text: string) => void }): boolean {
    const at = line.lastIndexOf(MARK);
    const ts = at < 0 ? null : /(\d+(?:\.\d+)?)$/.exec(line.slice(Math.max(0, at - 32), at));
    if (!ts || line.charCodeAt(line.length - mk.key.length - 1) !== 32) return false;
    mk.onMarker(parseFloat(ts[1]), line.slice(at + MARK.length, line.length - mk.key.length - 1));
    return true;
  }

  private lostLine(line: string): boolean {
    // Records start with a space (the comm's padding): skip the regex on the hot path.
    if (line.charCodeAt(0) !== 67 /* C */) return false;
    const lost = LOST.exec(line);
    if (!lost) return false;
    const cpu = +lost[1];
    // An unknown count is at least one event; the per-CPU counters at stop give the exact figure.
    const n = lost[2] === undefined ? 1 : +lost[2];
    this.stats.lost += n;
    this.stats.lostByCpu.set(cpu, (this.stats.lostByCpu.get(cpu) ?? 0) + n);
    this.opts.onLost?.(cpu, n);
    return true;
  }

  private pushFramed(line: string, tail: string): void {
    const ends = line.endsWith(tail);
    if (this.resync) {
      this.resync = !ends;
      return;
    }
    if (this.record === null) {
      // Between records: the kernel's own lines. A record's first line starts with the comm padded to 16 bytes
      // (a comm is at most 15), so with a space: it can be neither of these.
      if (this.lostLine(line)) return;
      if (line === TOO_BIG) {
        this.stats.malformed++;
        return;
      }
      this.record = line;
    } else {
      this.record += '\n' + line;
    }
    if (!ends) {
      if (this.record.length > MAX_RECORD) {
        this.record = null;
        this.resync = true;
        this.stats.malformed++;
      }
      return;
    }
    const rec = this.record;
    this.record = null;
    if (!this.readFramed(rec)) this.stats.malformed++;
  }

  /** The fixed texts of an event's framed records, built once per event. */
  private planOf(schema: EventSchema): FramePlan {
    let plan = this.plans.get(schema.event);
    if (!plan) {
      const val = this.value!;
      const layout = frameLayout(schema.args, this.opts.sentinel!.name);
      plan = schema.args.map((a, k) => {
        // A string ends where ` MARKER=SECRET` follows: its own marker, or the record's end.
        const marker = isStringType(a.type) ? ` ${layout.after[k] ?? layout.end}${val}` : undefined;
        const name = layout.after[k] ?? layout.end;
        return { key: ` ${a.name}=`, marker, short: `${name}=`, skip: layout.after[k] ? marker!.length : 0 };
      });
      this.plans.set(schema.event, plan);
    }
    return plan;
  }

  /** One complete record (it ends with the sentinel). False if it does not fit its schema. */
  private readFramed(rec: string): boolean {
    const at = findToken(rec, 0, this.openShort!, this.openTok!);
    if (at < 0) return false;
    const header = parseFramedHeader(rec, at);
    const schema = header && this.schemas.get(header.event);
    if (!header || !schema) return false;
    const plan = this.planOf(schema);
    const out: Array<string | null> = new Array(plan.length);
    let pos = at + this.openTok!.length;
    for (let k = 0; k < plan.length; k++) {
      const { key, marker, short, skip } = plan[k];
      if (!rec.startsWith(key, pos)) return false;
      const v = pos + key.length;
      let end: number;
      if (marker !== undefined) {
        if (rec.startsWith('(fault)', v) && rec.startsWith(marker, v + 7)) {
          out[k] = null;
          end = v + 7;
        } else {
          if (rec.charCodeAt(v) !== 34 /* " */) return false;
          const q = findToken(rec, v + 1, short, marker);
          if (q < 0 || rec.charCodeAt(q - 1) !== 34 || q - 1 === v) return false;
          out[k] = rec.slice(v + 1, q - 1);
          end = q;
        }
        pos = end + skip;
      } else {
        end = rec.indexOf(' ', v);
        if (end < 0) end = rec.length;
        if (end === v) return false;
        const raw = rec.slice(v, end);
        out[k] = raw === '(fault)' ? null : raw;
        pos = end;
      }
    }
    if (rec.length - pos !== this.tail!.length) return false;
    this.emit({ ...header, schema }, out);
    return true;
  }

  private pushLine(line: string): void {
    if (this.pending) {
      this.pending.text += '\n' + line;
      if (this.pending.text.length > MAX_RECORD) {
        this.pending = null;
        this.stats.malformed++;
        return;
      }
      this.tryComplete();
      return;
    }
    if (this.lostLine(line)) return;
    const m = HEADER.exec(line);
    const schema = m ? this.schemas.get(m[7]) : undefined;
    if (!m || !schema) {
      this.stats.unparsed++;
      return;
    }
    const tgid = m[3] && /^\d+$/.test(m[3]) ? +m[3] : null;
    this.pending = { header: { comm: m[1], tid: +m[2], tgid, cpu: +m[4], ts: parseFloat(m[6]), schema }, text: m[10] };
    this.tryComplete();
  }

  /** Line mode: an unfinished string simply continues on the next line. */
  private tryComplete(): void {
    const p = this.pending!;
    const values = matchArgs(p.text, p.header.schema.args);
    if (!values) return;
    this.pending = null;
    this.emit(p.header, values);
  }

  private emit(h: Header, raw: Array<string | null>): void {
    const schema = h.schema;
    const args: Record<string, HitValue> = nameRecord();
    let retval: HitValue | undefined;
    const retName = schema.retvalArg ?? (schema.kind === 'return' ? 'retval' : undefined);
    for (let i = 0; i < schema.args.length; i++) {
      const a = schema.args[i];
      const v = parseTypedValue(raw[i], a.type);
      if (a.name === retName) retval = v;
      else args[a.name] = v;
    }
    const hit: Hit = {
      host: this.opts.host,
      probe: schema.probe,
      kind: schema.kind,
      pid: h.tgid ?? h.tid,
      tid: h.tid,
      comm: h.comm,
      cpu: h.cpu,
      ts: h.ts,
      args,
      event: schema.event,
    };
    if (retval !== undefined) hit.retval = retval;
    this.stats.hits++;
    this.processes.deliver(hit);
  }
}

/**
 * Where ` NAME=SECRET` (`full`) first occurs in `rec` from `from`: found by its short `NAME=` and then compared
 * whole (V8 searches for a long needle with a table built per call, which costs more than the record).
 */
function findToken(rec: string, from: number, short: string, full: string): number {
  for (let i = rec.indexOf(short, from + 1); i >= 0; i = rec.indexOf(short, i + 1)) {
    if (rec.startsWith(full, i - 1)) return i - 1;
  }
  return -1;
}

/**
 * The header of a framed record, `rec[0, at)`, read from its end: `(addr)`, event, timestamp, flags, `[cpu]`, then
 * leftwards `(tgid)` when record-tgid is on, `-pid`, and whatever precedes is the comm (without the `%16s`
 * padding). Reading from the end, no comm can shift a field.
 */
function parseFramedHeader(
  rec: string,
  at: number,
): { comm: string; tid: number; tgid: number | null; cpu: number; ts: number; event: string } | null {
  // The last ` [` is the CPU column's, or a kprobe's module (`(fn+0x0/0x1d0 [af_key])`), which is the one after it.
  let br = rec.lastIndexOf(' [', at);
  if (br < 0) return null;
  if (!/^ \[\d+\]/.test(rec.slice(br, br + 24))) br = rec.lastIndexOf(' [', br - 1);
  if (br < 0) return null;
  FRAMED_TAIL.lastIndex = br + 1;
  const m = FRAMED_TAIL.exec(rec);
  if (!m || FRAMED_TAIL.lastIndex !== at) return null;
  let i = br;
  while (i > 0 && rec.charCodeAt(i - 1) === 32) i--;
  let tgid: number | null = null;
  if (rec.charCodeAt(i - 1) === 41 /* ) */) {
    const open = rec.lastIndexOf('(', i - 1);
    const inner = open < 0 ? '' : rec.slice(open + 1, i - 1).trim();
    if (/^\d+$/.test(inner)) tgid = +inner;
    else if (!/^-+$/.test(inner)) return null;
    i = open;
    while (i > 0 && rec.charCodeAt(i - 1) === 32) i--;
  }
  let d = i;
  while (d > 0 && rec.charCodeAt(d - 1) >= 48 && rec.charCodeAt(d - 1) <= 57) d--;
  if (d === i || d === 0 || rec.charCodeAt(d - 1) !== 45 /* - */) return null;
  let pad = 0;
  while (pad < d - 1 && rec.charCodeAt(pad) === 32) pad++;
  return {
    comm: rec.slice(pad, d - 1),
    tid: +rec.slice(d, i),
    tgid,
    cpu: +m[1],
    ts: parseFloat(m[2]),
    event: m[3],
  };
}

/**
 * Match ` name=value` for each arg in order against the whole of `text`. Non-string values contain no spaces;
 * a string ends at the rightmost closing quote after which the rest still matches (the last one: end of text).
 * Returns the raw value texts (strings without their quotes; `null` for `(fault)`), or null if it doesn't fit.
 */
export function matchArgs(text: string, args: ReadonlyArray<{ name: string; type: string }>): Array<string | null> | null {
  const out: Array<string | null> = new Array(args.length);
  return walkArgs(text, args, out, 0, 0) ? out : null;
}

// A plain recursive function rather than a closure: this runs once per hit.
function walkArgs(
  text: string,
  args: ReadonlyArray<{ name: string; type: string }>,
  out: Array<string | null>,
  pos: number,
  k: number,
): boolean {
  if (k === args.length) return pos === text.length;
  const key = ` ${args[k].name}=`;
  if (!text.startsWith(key, pos)) return false;
  const v = pos + key.length;
  const last = k === args.length - 1;
  if (text.startsWith('(fault)', v)) {
    const after = v + 7;
    if ((last && after === text.length) || (!last && text.startsWith(` ${args[k + 1].name}=`, after))) {
      out[k] = null;
      if (walkArgs(text, args, out, after, k + 1)) return true;
    }
  }
  if (isStringType(args[k].type)) {
    if (text.charCodeAt(v) !== 34 /* " */) return false;
    if (last) {
      if (text.length - v < 2 || !text.endsWith('"')) return false;
      out[k] = text.slice(v + 1, -1);
      return true;
    }
    // Rightmost first: a string's own content then cannot override the args fetched after it.
    const next = `" ${args[k + 1].name}=`;
    for (let q = text.lastIndexOf(next); q > v; q = text.lastIndexOf(next, q - 1)) {
      out[k] = text.slice(v + 1, q);
      if (walkArgs(text, args, out, q + 1, k + 1)) return true;
    }
    return false;
  }
  let end = text.indexOf(' ', v);
  if (end < 0) end = text.length;
  if (end === v) return false;
  out[k] = text.slice(v, end);
  return walkArgs(text, args, out, end, k + 1);
}

// Turns trace_pipe lines into hits. Two formats seen in the wild (columns vary by kernel version and options):
//   this kernel, record-tgid on:  `  comm-123   (    120) [001] DBZff  2488.667250: ev: (0x5646a543f16a) a=-1 s="x"`
//   older kernels, no tgid:       `  comm-123   [001] d...   88.000001: ev: (0x400546) a=-1`
//   irq-info off drops the flags column; return probes print `(0xRET <- 0xFUNC)`.
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
import { frameLayout, isStringType, type FrameLayout } from './framing';
import { parseTypedValue, type HitValue } from './values';

export type { HitValue } from './values';

export type ProbeKind = 'entry' | 'return' | 'line' | 'usdt';

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

export interface Hit {
  host: string;
  probe: string;
  kind: ProbeKind;
  pid: number;
  tid: number;
  comm: string;
  cpu: number;
  ts: number;
  args: Record<string, HitValue>;
  retval?: HitValue;
  /** tracefs event name, for pairing entries with returns (not part of the JSON contract). */
  event: string;
}

/** The contract's NDJSON shape of a hit: `{host, probe, kind, pid, tid, comm, cpu, ts, args, retval}`. */
export function hitToJson(h: Hit): Record<string, unknown> {
  const o: Record<string, unknown> = {
    host: h.host,
    probe: h.probe,
    kind: h.kind,
    pid: h.pid,
    tid: h.tid,
    comm: h.comm,
    cpu: h.cpu,
    ts: h.ts,
    args: h.args,
  };
  if (h.retval !== undefined) o.retval = h.retval;
  return o;
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

export interface Sentinel {
  name: string;
  /** The value as trace_pipe prints it (`0x…` for the x64 immediate). */
  printed: string;
}

/** The fetcharg that ends a framed definition (see frameDefinition), and the sentinel the parser is given. */
export function sentinelFetcharg(secret: bigint, name = '__pl'): { fetcharg: string; sentinel: Sentinel } {
  const v = BigInt.asUintN(64, secret);
  return { fetcharg: `${name}=\\${v.toString(10)}:x64`, sentinel: { name, printed: `0x${v.toString(16)}` } };
}

// Line mode (no sentinel): the header is the start of a line. The `s` flag: a comm may hold `\r`, U+2028 or
// U+2029, which `.` alone does not match (lines never hold `\n`).
const HEADER =
  /^ *(.*?)-(\d+)\s+(?:\(\s*(\d+|-+)\)\s+)?\[(\d+)\]\s+(?:(\S{1,6})\s+)?(\d+(?:\.\d+)?):\s+([A-Za-z_][A-Za-z0-9_]*):\s+\((0x[0-9a-f]+)(?:\s+<-\s+(0x[0-9a-f]+))?\)(.*)$/s;
// Framed mode: the whole header, anchored at its end; the comm is whatever precedes the fixed fields (greedy:
// the kernel's fields after it hold no program text, so the rightmost fit is the real one).
const FRAMED_HEADER =
  /^([\s\S]*)-(\d+) +(?:\( *(\d+|-+)\) +)?\[(\d+)\] +(?:(\S{1,6}) +)?(\d+(?:\.\d+)?): ([A-Za-z_][A-Za-z0-9_]*): \((0x[0-9a-f]+)(?: <- (0x[0-9a-f]+))?\)$/;
// `CPU:N [LOST EVENTS]` (no count) when the ring buffer could not say how many.
const LOST = /^CPU:(\d+) \[LOST (?:(\d+) )?EVENTS\]$/;
// Printed instead of a record that does not fit the kernel's print buffer (trace_seq, 4 or 8 KiB).
const TOO_BIG = '[LINE TOO BIG]';
const MAX_RECORD = 64 * 1024;

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
  private readonly layouts = new Map<string, FrameLayout>();
  private pending: { header: Header; text: string } | null = null;
  /** Framed mode: the lines of the record being read, or null between records. */
  private record: string | null = null;
  /** Framed mode: after an over-long record, skip to the next record end before reading again. */
  private resync = false;
  private readonly tail: string | undefined;
  private readonly value: string | undefined;

  constructor(
    private readonly opts: {
      host: string;
      events: EventSchema[];
      sentinel?: Sentinel | null;
      onHit: (hit: Hit) => void;
      onLost?: (cpu: number, count: number) => void;
    },
  ) {
    for (const e of opts.events) this.schemas.set(e.event, e);
    const s = opts.sentinel;
    if (s) {
      this.value = `=${s.printed}`;
      this.tail = ` ${s.name}${this.value}`;
    }
  }

  push(line: string): void {
    if (this.tail !== undefined) this.pushFramed(line, this.tail);
    else this.pushLine(line);
  }

  /** End of stream: a record still open (its string never closed) is counted as malformed. */
  end(): void {
    if (this.pending || this.record !== null) this.stats.malformed++;
    this.pending = null;
    this.record = null;
  }

  private lostLine(line: string): boolean {
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

  private layoutOf(schema: EventSchema): FrameLayout {
    let l = this.layouts.get(schema.event);
    if (!l) this.layouts.set(schema.event, (l = frameLayout(schema.args, this.opts.sentinel!.name)));
    return l;
  }

  /** One complete record (it ends with the sentinel). False if it does not fit its schema. */
  private readFramed(rec: string): boolean {
    const val = this.value!;
    const open = ` ${this.opts.sentinel!.name}h${val}`;
    const at = rec.indexOf(open);
    if (at < 0) return false;
    const m = FRAMED_HEADER.exec(rec.slice(0, at));
    const schema = m ? this.schemas.get(m[7]) : undefined;
    if (!m || !schema) return false;
    const layout = this.layoutOf(schema);
    const args = schema.args;
    const out: Array<string | null> = new Array(args.length);
    let pos = at + open.length;
    for (let k = 0; k < args.length; k++) {
      const key = ` ${args[k].name}=`;
      if (!rec.startsWith(key, pos)) return false;
      const v = pos + key.length;
      if (isStringType(args[k].type)) {
        // The value ends where ` MARKER=SECRET` follows: the marker after it, or the record's end.
        const marker = ` ${layout.after[k] ?? layout.end}${val}`;
        let end: number;
        if (rec.startsWith('(fault)' + marker, v)) {
          out[k] = null;
          end = v + 7;
        } else {
          if (rec.charCodeAt(v) !== 34 /* " */) return false;
          const q = rec.indexOf('"' + marker, v + 1);
          if (q < 0) return false;
          out[k] = rec.slice(v + 1, q);
          end = q + 1;
        }
        pos = layout.after[k] ? end + marker.length : end;
      } else {
        let end = rec.indexOf(' ', v);
        if (end < 0) end = rec.length;
        if (end === v) return false;
        out[k] = rec.slice(v, end) === '(fault)' ? null : rec.slice(v, end);
        pos = end;
      }
    }
    if (rec.length - pos !== this.tail!.length) return false;
    const tgid = m[3] && /^\d+$/.test(m[3]) ? +m[3] : null;
    const comm = m[1].replace(/^ +/, '');
    this.emit({ comm, tid: +m[2], tgid, cpu: +m[4], ts: parseFloat(m[6]), schema }, out);
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
    const args: Record<string, HitValue> = {};
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
    this.opts.onHit(hit);
  }
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

// Turns trace_pipe lines into hits. Two formats seen in the wild (columns vary by kernel version and options):
//   this kernel, record-tgid on:  `  comm-123   (    120) [001] DBZff  2488.667250: ev: (0x5646a543f16a) a=-1 s="x"`
//   older kernels, no tgid:       `  comm-123   [001] d...   88.000001: ev: (0x400546) a=-1`
//   irq-info off drops the flags column; return probes print `(0xRET <- 0xFUNC)`.
// Strings are printed unescaped, so a traced string can contain newlines and text that looks like another event
// or a `CPU:N [LOST M EVENTS]` line. Two defences: (1) records are parsed against the schema the client defined
// (argument names in order), and a string only ends where the rest of the record still fits the schema (the rightmost such place);
// (2) when the definitions carry a per-session sentinel as their last fetcharg (an immediate value the traced
// program cannot know, see `sentinelFetcharg`), a record ends only at a line ending with that sentinel, so no
// string content can start a record or a LOST line.
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

/** The fetcharg to append to every definition, and what the parser must see at the end of each record. */
export function sentinelFetcharg(secret: bigint, name = '__pl'): { fetcharg: string; sentinel: Sentinel } {
  const v = BigInt.asUintN(64, secret);
  return { fetcharg: `${name}=\\${v.toString(10)}:x64`, sentinel: { name, printed: `0x${v.toString(16)}` } };
}

const HEADER =
  /^\s*(.*?)-(\d+)\s+(?:\(\s*(\d+|-+)\)\s+)?\[(\d+)\]\s+(?:(\S{1,6})\s+)?(\d+(?:\.\d+)?):\s+([A-Za-z_][A-Za-z0-9_]*):\s+\((0x[0-9a-f]+)(?:\s+<-\s+(0x[0-9a-f]+))?\)(.*)$/;
const LOST = /^CPU:(\d+) \[LOST (\d+) EVENTS\]$/;
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
  private pending: { header: Header; text: string } | null = null;
  private sentinelTail: string | undefined;

  constructor(
    private readonly opts: {
      host: string;
      events: EventSchema[];
      sentinel?: Sentinel | null;
      onHit: (hit: Hit) => void;
      onLost?: (cpu: number, count: number) => void;
    },
  ) {
    this.addEvents(opts.events);
  }

  /** Events defined after the parser was made (probes added to a running session). */
  addEvents(events: readonly EventSchema[]): void {
    for (const e of events) this.schemas.set(e.event, e);
  }

  push(line: string): void {
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
    const lost = LOST.exec(line);
    if (lost) {
      const cpu = +lost[1];
      const n = +lost[2];
      this.stats.lost += n;
      this.stats.lostByCpu.set(cpu, (this.stats.lostByCpu.get(cpu) ?? 0) + n);
      this.opts.onLost?.(cpu, n);
      return;
    }
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

  /** End of stream: a record still open (its string never closed) is counted as malformed. */
  end(): void {
    if (this.pending) this.stats.malformed++;
    this.pending = null;
  }

  private tryComplete(): void {
    const p = this.pending!;
    let text = p.text;
    const s = this.opts.sentinel;
    if (s) {
      const tail = (this.sentinelTail ??= ` ${s.name}=${s.printed}`);
      if (!text.endsWith(tail)) return;
      text = text.slice(0, -tail.length);
    }
    const values = matchArgs(text, p.header.schema.args);
    if (!values) {
      // Without a sentinel an unfinished string simply continues on the next line; with one, the record is
      // complete and did not fit.
      if (s) {
        this.pending = null;
        this.stats.malformed++;
      }
      return;
    }
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

function isStringType(type: string): boolean {
  return type === 'string' || type === 'ustring' || type === 'symstr';
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

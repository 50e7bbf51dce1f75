// Turns the records of ring-buffer pages (rawPages.ts) of probe events into hits, with the EventSchema the text
// parser (hitParser.ts) uses. Each value is what hitParser makes of the same record printed by trace_pipe: the
// kernel's print format (rawFormat.ts, probeConversions) says whether an argument prints as a signed or unsigned
// decimal, as 0x-hex, as a character or as a string, and this follows the same rules (values.ts): integers as
// numbers below 2^53 and decimal strings past it, hex as lowercase "0x…", a string fetch that faulted (length 0)
// as null, fixed arrays as arrays. A schema whose types do not match the kernel's description (a string the kernel
// does not print as one, an x-type printed in decimal, an array of another length) is refused when the decoder
// is made: a value is never reinterpreted.
// Lengths come from the records, so no string can end, hide or forge a record, and no framing secret is needed:
// fields the schema does not name (framing immediates, the probe address) are not read.
// A record holds the thread id (common_pid) but neither the comm nor the process id: trace_pipe prints them from
// the kernel's saved_cmdlines/saved_tgids caches. The caller supplies them (`task`), else the comm is `<...>` (as
// the kernel prints an unknown one) and the pid the thread id.
import type { Hit, HitValue } from '../../shared/hit';
import type { EventSchema } from './hitParser';
import { isStringType } from './framing';
import { FormatError, probeConversions, type EventFormat, type FieldFormat, type HeaderPage } from './rawFormat';
import { forEachRecord, RawDecodeError, readInt, readPageHead } from './rawPages';
import { nameRecord } from '../../shared/names';

const enum Op {
  Dec,
  Hex,
  Char,
  Str,
  ArrDec,
  ArrHex,
  ArrChar,
}

interface Step {
  name: string;
  op: Op;
  offset: number;
  size: number;
  signed: boolean;
  count: number;
  field: FieldFormat;
  retval: boolean;
  /** A string's last short value, its bytes and its text (see RawHitDecoder.string). */
  last?: { bytes: Buffer; length: number; text: string };
}

/** Strings up to this many bytes are compared with the step's last one before a new string is made. */
const REUSE_MAX = 32;

interface Plan {
  schema: EventSchema;
  steps: Step[];
  minSize: number;
  pidOffset: number;
}

export interface RawHitStats {
  hits: number;
  /** Events lost per the pages' commit words: stored counts, and 1 for each page that lost an unknown number. */
  lost: number;
  lostByCpu: Map<number, number>;
  /** Pages that said events were lost without saying how many (per_cpu/cpuN/stats has the figure). */
  lostUncounted: number;
  /** Records of events without a schema (another event enabled in the instance, trace_marker writes). */
  unknown: number;
  pages: number;
}

const HEX_TYPE = /^x\d+$/;
const ARRAY_TYPE = /^(.+)\[(\d+)\]$/;

function planFor(schema: EventSchema, format: EventFormat): Plan {
  const what = `event ${format.name} (id ${format.id})`;
  const conversions = probeConversions(
    format,
    schema.args.map((a) => a.name),
  );
  const retName = schema.retvalArg ?? (schema.kind === 'return' ? 'retval' : undefined);
  const steps = schema.args.map((a): Step => {
    const f = format.byName.get(a.name);
    if (!f) throw new FormatError(what, `no field '${a.name}'`);
    const c = conversions.get(a.name)!;
    const fail = (why: string) => new FormatError(what, `argument '${a.name}' of type '${a.type || 'default'}': ${why}`);
    const base = { name: a.name, offset: f.offset, size: f.elemSize, signed: f.signed, count: 1, field: f, retval: a.name === retName };
    const arr = ARRAY_TYPE.exec(a.type);
    if (isStringType(a.type) || c.kind === 'string') {
      if (!isStringType(a.type) || c.kind !== 'string')
        throw fail('the kernel prints it as ' + (c.kind === 'string' ? 'a string' : c.kind));
      if ((f.kind !== 'dataLoc' && f.kind !== 'relLoc') || !f.text || f.nested) throw fail(`its field is '${f.type}', not a string`);
      return { ...base, op: Op.Str, last: { bytes: Buffer.alloc(REUSE_MAX), length: -1, text: '' } };
    }
    if (arr || c.kind === 'array') {
      if (!arr || c.kind !== 'array') throw fail('the schema and the kernel disagree on it being an array');
      if (f.kind !== 'array' || f.count !== Number(arr[2]) || c.count !== f.count)
        throw fail(`its field is '${f.type}' of ${f.count} elements and prints ${c.count}`);
      const op = elementOp(c.elem, HEX_TYPE.test(arr[1]), f, fail);
      return { ...base, op: op === Op.Dec ? Op.ArrDec : op === Op.Hex ? Op.ArrHex : Op.ArrChar, count: f.count };
    }
    if (f.kind !== 'int') throw fail(`its field is '${f.type}'`);
    return { ...base, op: elementOp(c.kind, HEX_TYPE.test(a.type), f, fail) };
  });
  const pidOffset = format.byName.get('common_pid')!.offset;
  let minSize = pidOffset + 4;
  for (const s of steps) minSize = Math.max(minSize, s.field.offset + s.field.size);
  return { schema, steps, minSize, pidOffset };
}

function elementOp(kind: string, hexType: boolean, f: FieldFormat, fail: (why: string) => Error): Op {
  if (kind === 'hex') return Op.Hex;
  // hitParser keeps an x-typed value printed other than as 0x… as its text: refuse rather than imitate that.
  if (hexType) throw fail(`the kernel prints it as ${kind}, not as hex`);
  if (kind === 'char') {
    if (f.elemSize !== 1) throw fail(`a character of ${f.elemSize} bytes`);
    return Op.Char;
  }
  // %d of a signed field and %u of an unsigned one print the field's value; mixed, printf would reinterpret it.
  if ((kind === 'signed') !== f.signed) throw fail(`${f.signed ? 'a signed' : 'an unsigned'} field printed as ${kind}`);
  return Op.Dec;
}

function hexText(page: Uint8Array, o: number, size: number): string {
  if (size < 8) return `0x${(readInt(page, o, size, false) as number).toString(16)}`;
  const lo = (page[o] | (page[o + 1] << 8) | (page[o + 2] << 16) | (page[o + 3] << 24)) >>> 0;
  const hi = (page[o + 4] | (page[o + 5] << 8) | (page[o + 6] << 16) | (page[o + 7] << 24)) >>> 0;
  return hi === 0 ? `0x${lo.toString(16)}` : `0x${hi.toString(16)}${lo.toString(16).padStart(8, '0')}`;
}

function decValue(page: Uint8Array, o: number, size: number, signed: boolean): number | string {
  const v = readInt(page, o, size, signed);
  return typeof v === 'bigint' ? v.toString() : v;
}

/** `'%c'` as printed, decoded as a UTF-8 stream would decode that lone byte. */
function charText(b: number): string {
  return `'${b < 0x80 ? String.fromCharCode(b) : '\ufffd'}'`;
}

export class RawHitDecoder {
  readonly stats: RawHitStats = { hits: 0, lost: 0, lostByCpu: new Map(), lostUncounted: 0, unknown: 0, pages: 0 };
  private readonly plans = new Map<number, Plan>();
  private page: Buffer = Buffer.alloc(0);
  private cpu = 0;
  private readonly visit = (id: number, sec: number, nsec: number, offset: number, length: number): void =>
    this.record(id, sec, nsec, offset, length);

  constructor(
    private readonly opts: {
      host: string;
      header: HeaderPage;
      /** The events' schemas (as for HitParser) and their format files, matched by event name. */
      events: readonly EventSchema[];
      formats: readonly EventFormat[];
      onHit: (hit: Hit) => void;
      onLost?: (cpu: number, count: number) => void;
      /** The comm and process id of a thread id; undefined: `<...>` and the thread id. */
      task?: (tid: number) => { comm: string; pid: number } | undefined;
      /** A record of an event without a schema (a trace_marker write, another event): where it lies in `page`. */
      other?: (id: number, sec: number, nsec: number, page: Buffer, offset: number, length: number) => void;
    },
  ) {
    this.addEvents(opts.events, opts.formats);
  }

  /** Events defined after the decoder was made. Throws a FormatError for a schema its format does not match. */
  addEvents(events: readonly EventSchema[], formats: readonly EventFormat[]): void {
    const byName = new Map(formats.map((f) => [f.name, f]));
    for (const e of events) {
      const f = byName.get(e.event);
      if (!f) throw new FormatError(`event ${e.event}`, 'no format given for it');
      this.plans.set(f.id, planFor(e, f));
    }
  }

  /** One page of CPU `cpu`'s trace_pipe_raw. Throws a RawDecodeError for a corrupt page (hits before it are out). */
  push(page: Buffer, cpu: number): void {
    this.page = page;
    this.cpu = cpu;
    // The loss came before this page's records: said first, as trace_pipe prints its LOST line first.
    const head = readPageHead(page, this.opts.header);
    if (head.missed) {
      const n = head.lost ?? 1;
      if (head.lost === undefined) this.stats.lostUncounted++;
      this.stats.lost += n;
      this.stats.lostByCpu.set(cpu, (this.stats.lostByCpu.get(cpu) ?? 0) + n);
      this.opts.onLost?.(cpu, n);
    }
    forEachRecord(page, this.opts.header, this.visit);
    this.stats.pages++;
  }

  private record(id: number, sec: number, nsec: number, offset: number, length: number): void {
    const plan = this.plans.get(id);
    if (!plan) {
      this.stats.unknown++;
      this.opts.other?.(id, sec, nsec, this.page, offset, length);
      return;
    }
    if (length < plan.minSize)
      throw new RawDecodeError(offset, `a ${length}-byte record of '${plan.schema.event}', whose fields need ${plan.minSize}`);
    const p = this.page;
    const args: Record<string, HitValue> = nameRecord();
    let retval: HitValue | undefined;
    for (const s of plan.steps) {
      const o = offset + s.offset;
      let v: HitValue;
      switch (s.op) {
        case Op.Dec:
          v = decValue(p, o, s.size, s.signed);
          break;
        case Op.Hex:
          v = hexText(p, o, s.size);
          break;
        case Op.Char:
          v = charText(p[o]);
          break;
        case Op.Str:
          v = this.string(o, offset, length, s);
          break;
        default: {
          const a: HitValue[] = new Array(s.count);
          for (let k = 0; k < s.count; k++) {
            const e = o + k * s.size;
            a[k] = s.op === Op.ArrDec ? decValue(p, e, s.size, s.signed) : s.op === Op.ArrHex ? hexText(p, e, s.size) : charText(p[e]);
          }
          v = a;
        }
      }
      if (s.retval) retval = v;
      else args[s.name] = v;
    }
    const tid =
      p[offset + plan.pidOffset] |
      (p[offset + plan.pidOffset + 1] << 8) |
      (p[offset + plan.pidOffset + 2] << 16) |
      (p[offset + plan.pidOffset + 3] << 24);
    const task = this.opts.task?.(tid);
    const schema = plan.schema;
    const hit: Hit = {
      host: this.opts.host,
      probe: schema.probe,
      kind: schema.kind,
      pid: task ? task.pid : tid,
      tid,
      comm: task ? task.comm : '<...>',
      cpu: this.cpu,
      ts: sec + nsec / 1e9,
      args,
      event: schema.event,
    };
    if (retval !== undefined) hit.retval = retval;
    this.stats.hits++;
    this.opts.onHit(hit);
  }

  /** A string argument: the bytes its location word points at, up to the NUL; length 0 is a faulted fetch. */
  private string(o: number, offset: number, length: number, s: Step): string | null {
    const p = this.page;
    const w = (p[o] | (p[o + 1] << 8) | (p[o + 2] << 16) | (p[o + 3] << 24)) >>> 0;
    const len = w >>> 16;
    if (len === 0) return null;
    const start = (s.field.kind === 'relLoc' ? o + 4 : offset) + (w & 0xffff);
    const end = start + len;
    if (end > offset + length) throw new RawDecodeError(o, `string '${s.name}' points at ${len} bytes outside its ${length}-byte record`);
    let z = start;
    let ascii = true;
    while (z < end) {
      const b = p[z];
      if (b === 0) break;
      if (b >= 0x80) ascii = false;
      z++;
    }
    // A short string repeats from record to record (the comm, a name): the same bytes as the last one's are its text
    // again, without a new string per hit.
    const n = z - start;
    const last = s.last;
    if (last && n <= REUSE_MAX) {
      if (last.length === n) {
        let k = 0;
        while (k < n && last.bytes[k] === p[start + k]) k++;
        if (k === n) return last.text;
      }
      p.copy(last.bytes, 0, start, z);
      last.length = n;
      // ASCII (the common case) decodes faster as latin1, to the same text.
      return (last.text = p.toString(ascii ? 'latin1' : 'utf8', start, z));
    }
    return p.toString(ascii ? 'latin1' : 'utf8', start, z);
  }
}

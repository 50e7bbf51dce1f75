// The kernel's own descriptions of its binary trace data, as tracefs prints them:
//   events/header_page      the layout of a ring-buffer page (sub-buffer): a u64 timestamp, the `commit` word (the
//                           length of the data, with two flag bits for lost events) and the data, whose size
//                           gives the page size (4096 on this kernel: 16 bytes of header, 4,080 of data; an
//                           instance's own events/header_page follows its buffer_subbuf_size_kb);
//   events/header_event     the layout of a record header (type_len 5 bits, time_delta 27 bits, array 32 bits) and
//                           the type_len values of padding, time-extend and absolute time-stamp records;
//   events/GRP/EV/format    an event's id and fields (`field:TYPE NAME;\toffset:N;\tsize:N;\tsigned:N;`) and the
//                           printf format trace/trace_pipe print its records with.
// Each parser checks what it reads against what the decoder (rawPages.ts) relies on and throws a FormatError that
// says which line is wrong: an unknown or inconsistent format is never read as a guess.
// Probe events as this kernel (6.18) describes them: common_type u16 @0, common_flags u8 @2, common_preempt_count
// u8 @3, common_pid int @4; then `unsigned long __probe_ip` (entry) or `__probe_func` + `__probe_ret_ip` (return);
// then one field per fetcharg: `s64 n`, `u32 u`, `u16 x` (an x16 is a u16 whose print format is `0x%x`), `u8 a[]`
// of size 4 (a u8[4]: the count is not printed, size / element size gives it), `__data_loc char[] s` (string,
// ustring and $comm: a u32 whose low 16 bits are the offset from the record's start and high 16 bits the length
// including the NUL; length 0 is a fetch that faulted), `__data_loc char[][2]` (string arrays); an untyped
// fetcharg is `u64` printed `0x%Lx`; a bitfield `b4@2/32` is its container `u32` holding the extracted value.
// Whether a value prints as decimal or hex is only in the print format, which probeConversions() reads.
import { nameRecord } from '../../shared/names';

export class FormatError extends Error {
  constructor(what: string, message: string) {
    super(`${what}: ${message}`);
    this.name = 'FormatError';
  }
}

export interface HeaderPage {
  timestampOffset: number;
  commitOffset: number;
  /** 8 on 64-bit kernels (local_t is a long): also the size of the lost-events count stored after the data. */
  commitSize: number;
  dataOffset: number;
  /** Bytes of data a page holds. */
  dataSize: number;
  /** dataOffset + dataSize: what one read of trace_pipe_raw returns at most. */
  pageSize: number;
}

interface RawField {
  type: string;
  name: string;
  /** `[N]` after the name: N, `[]`: 0, none: undefined. */
  count: number | undefined;
  offset: number;
  size: number;
  signed: boolean;
  line: number;
}

// `field:TYPE NAME[N];\toffset:N;\tsize:N;\tsigned:N;` (header_page puts a space after `field:`).
const FIELD = /^\s*field:\s*(.+?)\s+([A-Za-z_][A-Za-z0-9_]*)(?:\[(\d*)\])?;\s*offset:(\d+);\s*size:(\d+);\s*signed:([01]);\s*$/;

function parseFieldLine(line: string, lineNo: number, what: string): RawField {
  const m = FIELD.exec(line);
  if (!m) throw new FormatError(what, `line ${lineNo} is not a field description: ${JSON.stringify(line)}`);
  return {
    type: m[1],
    name: m[2],
    count: m[3] === undefined ? undefined : m[3] === '' ? 0 : Number(m[3]),
    offset: Number(m[4]),
    size: Number(m[5]),
    signed: m[6] === '1',
    line: lineNo,
  };
}

/** events/header_page. */
export function parseHeaderPage(text: string): HeaderPage {
  const what = 'events/header_page';
  const fields = new Map<string, RawField>();
  text.split('\n').forEach((line, i) => {
    if (line.trim() === '') return;
    const f = parseFieldLine(line, i + 1, what);
    fields.set(f.name, f);
  });
  const need = (name: string): RawField => {
    const f = fields.get(name);
    if (!f) throw new FormatError(what, `no '${name}' field`);
    return f;
  };
  const ts = need('timestamp');
  const commit = need('commit');
  const data = need('data');
  if (ts.size !== 8) throw new FormatError(what, `timestamp is ${ts.size} bytes, not 8`);
  if (commit.size !== 4 && commit.size !== 8) throw new FormatError(what, `commit is ${commit.size} bytes, not 4 or 8`);
  const overlaps = (a: RawField, b: RawField) => a.offset < b.offset + b.size && b.offset < a.offset + a.size;
  if (overlaps(ts, commit) || overlaps(ts, data) || overlaps(commit, data))
    throw new FormatError(what, 'timestamp, commit and data overlap');
  if (data.offset < commit.offset || data.offset < ts.offset) throw new FormatError(what, 'data does not follow timestamp and commit');
  // The kernel aligns event records to 4 bytes from the start of the data.
  if (data.offset % 4 !== 0 || commit.offset % commit.size !== 0 || ts.offset % 8 !== 0)
    throw new FormatError(what, 'fields are not aligned as the ring buffer aligns them');
  // The two top bits of a 32-bit commit word are the lost-events flags: the length lives below them.
  if (data.size < 8 || data.size >= 1 << 30) throw new FormatError(what, `data size ${data.size} is out of range`);
  return {
    timestampOffset: ts.offset,
    commitOffset: commit.offset,
    commitSize: commit.size,
    dataOffset: data.offset,
    dataSize: data.size,
    pageSize: data.offset + data.size,
  };
}

/**
 * events/header_event: checks that records are laid out as the decoder reads them (type_len 5 bits, time_delta 27
 * bits, padding 29, time-extend 30, time-stamp 31, data type_len up to 28). Throws if not.
 */
export function checkHeaderEvent(text: string): void {
  const what = 'events/header_event';
  const expect: Array<[RegExp, string]> = [
    [/^\s*type_len\s*:\s*5 bits\s*$/m, 'type_len    :    5 bits'],
    [/^\s*time_delta\s*:\s*27 bits\s*$/m, 'time_delta  :   27 bits'],
    [/^\s*array\s*:\s*32 bits\s*$/m, 'array       :   32 bits'],
    [/^\s*padding\s*:\s*type == 29\s*$/m, 'padding     : type == 29'],
    [/^\s*time_extend\s*:\s*type == 30\s*$/m, 'time_extend : type == 30'],
    [/^\s*time_stamp\s*:\s*type == 31\s*$/m, 'time_stamp : type == 31'],
    [/^\s*data max type_len\s*==\s*28\s*$/m, 'data max type_len  == 28'],
  ];
  for (const [re, line] of expect) {
    if (!re.test(text)) throw new FormatError(what, `expected a line '${line}': this record layout is not the one decoded here`);
  }
}

export type FieldKind =
  /** A scalar integer of 1, 2, 4 or 8 bytes. */
  | 'int'
  /** A fixed array of integers (`char comm[16]`, `u8 a[]` of size 4): count elements of elemSize bytes. */
  | 'array'
  /** `__data_loc T[] name`: a u32 (length << 16 | offset from the record's start). */
  | 'dataLoc'
  /** `__rel_loc T[] name`: as dataLoc, the offset counted from the end of the field. */
  | 'relLoc';

export interface FieldFormat {
  name: string;
  /** The C type as printed, e.g. `unsigned long`, `u8`, `__data_loc char[]`. */
  type: string;
  kind: FieldKind;
  offset: number;
  size: number;
  signed: boolean;
  /** int: size; array: one element's size; dataLoc/relLoc: one element's size (1 for char[]). */
  elemSize: number;
  /** array: the number of elements; otherwise 1. */
  count: number;
  /** char arrays and char[] data: decoded as text up to the first NUL. */
  text: boolean;
  /** A `__data_loc T[][N]` field: an array of dynamic values (string arrays); not decoded here. */
  nested: boolean;
}

export interface EventFormat {
  name: string;
  id: number;
  /** The common_* fields first, then the event's own, in the file's order. */
  fields: FieldFormat[];
  byName: Map<string, FieldFormat>;
  /** The text after `print fmt: `, unparsed. */
  printFmt: string;
  /** The smallest record that holds every fixed field. */
  minSize: number;
}

const ELEM_SIZES: Record<string, number> = nameRecord({
  char: 1,
  'signed char': 1,
  'unsigned char': 1,
  bool: 1,
  _Bool: 1,
  u8: 1,
  s8: 1,
  __u8: 1,
  __s8: 1,
  short: 2,
  'unsigned short': 2,
  'signed short': 2,
  u16: 2,
  s16: 2,
  __u16: 2,
  __s16: 2,
  int: 4,
  'unsigned int': 4,
  'signed int': 4,
  unsigned: 4,
  u32: 4,
  s32: 4,
  __u32: 4,
  __s32: 4,
  pid_t: 4,
  long: 8,
  'unsigned long': 8,
  'long long': 8,
  'unsigned long long': 8,
  u64: 8,
  s64: 8,
  __u64: 8,
  __s64: 8,
  size_t: 8,
});
const CHAR_TYPES = new Set(['char', 'signed char', 'unsigned char']);

function fieldFormat(f: RawField, what: string): FieldFormat {
  const where = `line ${f.line} (${f.name})`;
  const loc = /^(__data_loc|__rel_loc)\s+(.+?)\s*\[\]\s*(\[(\d+)\])?$/.exec(f.type);
  if (loc) {
    if (f.count !== undefined) throw new FormatError(what, `${where}: a dynamic field with a count after its name`);
    if (f.size !== (loc[3] ? 4 * Number(loc[4]) : 4))
      throw new FormatError(what, `${where}: a ${loc[1]} field of ${f.size} bytes (a u32 per value was expected)`);
    const elem = loc[2];
    const elemSize = ELEM_SIZES[elem];
    if (elemSize === undefined) throw new FormatError(what, `${where}: unknown element type '${elem}'`);
    return {
      name: f.name,
      type: f.type,
      kind: loc[1] === '__data_loc' ? 'dataLoc' : 'relLoc',
      offset: f.offset,
      size: f.size,
      signed: f.signed,
      elemSize,
      count: 1,
      text: CHAR_TYPES.has(elem),
      nested: loc[3] !== undefined,
    };
  }
  if (/__data_loc|__rel_loc/.test(f.type)) throw new FormatError(what, `${where}: unreadable dynamic type '${f.type}'`);
  const known = ELEM_SIZES[f.type];
  if (f.count !== undefined) {
    // `char comm[16]` names its count; a probe's `u8 a[]` leaves it to size / element size.
    let elemSize = known;
    if (elemSize === undefined) {
      if (!f.count) throw new FormatError(what, `${where}: an array of unknown type '${f.type}' without a count`);
      elemSize = f.size / f.count;
    }
    const count = f.count || f.size / elemSize;
    if (!Number.isInteger(count) || count * elemSize !== f.size || ![1, 2, 4, 8].includes(elemSize))
      throw new FormatError(what, `${where}: ${f.size} bytes do not hold ${f.count || 'whole'} elements of '${f.type}'`);
    return {
      name: f.name,
      type: f.type,
      kind: 'array',
      offset: f.offset,
      size: f.size,
      signed: f.signed,
      elemSize,
      count,
      text: CHAR_TYPES.has(f.type),
      nested: false,
    };
  }
  // Pointers and other scalars the kernel sizes itself: integers of their printed size.
  if (![1, 2, 4, 8].includes(f.size)) throw new FormatError(what, `${where}: a scalar of ${f.size} bytes`);
  if (known !== undefined && known !== f.size && !f.type.includes('*'))
    throw new FormatError(what, `${where}: '${f.type}' of ${f.size} bytes (expected ${known})`);
  return {
    name: f.name,
    type: f.type,
    kind: 'int',
    offset: f.offset,
    size: f.size,
    signed: f.signed,
    elemSize: f.size,
    count: 1,
    text: false,
    nested: false,
  };
}

/** An event's `format` file. `what` names it in errors (e.g. its path). */
export function parseEventFormat(text: string, what = 'format'): EventFormat {
  const lines = text.split('\n');
  let name: string | undefined;
  let id: number | undefined;
  let printFmt: string | undefined;
  let inFormat = false;
  const fields: FieldFormat[] = [];
  lines.forEach((line, i) => {
    if (printFmt !== undefined) return;
    const no = i + 1;
    if (line.startsWith('name: ')) name = line.slice(6).trim();
    else if (line.startsWith('ID: ')) {
      if (!/^ID: \d+\s*$/.test(line)) throw new FormatError(what, `line ${no}: bad ID line ${JSON.stringify(line)}`);
      id = Number(line.slice(4));
    } else if (line === 'format:') inFormat = true;
    else if (line.startsWith('print fmt: ')) printFmt = line.slice(11);
    else if (line.trim() === '') return;
    else if (inFormat) fields.push(fieldFormat(parseFieldLine(line, no, what), what));
    else throw new FormatError(what, `line ${no}: unexpected ${JSON.stringify(line)}`);
  });
  if (name === undefined || name === '') throw new FormatError(what, 'no name line');
  if (id === undefined || id > 0xffff) throw new FormatError(what, id === undefined ? 'no ID line' : `ID ${id} does not fit common_type`);
  if (printFmt === undefined) throw new FormatError(what, 'no print fmt line');
  const byName = new Map<string, FieldFormat>();
  let minSize = 0;
  for (const f of fields) {
    if (byName.has(f.name)) throw new FormatError(what, `field '${f.name}' twice`);
    byName.set(f.name, f);
    minSize = Math.max(minSize, f.offset + f.size);
  }
  const sorted = [...fields].sort((a, b) => a.offset - b.offset);
  for (let i = 1; i < sorted.length; i++) {
    const p = sorted[i - 1];
    if (sorted[i].offset < p.offset + p.size) throw new FormatError(what, `fields '${p.name}' and '${sorted[i].name}' overlap`);
  }
  // The decoder reads the event id and the task from these; every event shares them.
  const type = byName.get('common_type');
  const pid = byName.get('common_pid');
  if (!type || type.kind !== 'int' || type.size !== 2 || type.signed || type.offset !== 0)
    throw new FormatError(what, 'no unsigned 2-byte common_type field at offset 0');
  if (!pid || pid.kind !== 'int' || pid.size !== 4) throw new FormatError(what, 'no 4-byte common_pid field');
  return { name, id, fields, byName, printFmt, minSize };
}

/** How trace_pipe prints one probe argument (from the event's print format). */
export type Conversion =
  | { kind: 'signed' | 'unsigned' | 'hex' | 'char' | 'string' }
  | { kind: 'array'; elem: 'signed' | 'unsigned' | 'hex' | 'char'; count: number };

/**
 * The conversion of each of `names` in a probe event's print format, e.g.
 * `"(%lx) n=%Ld s=\"%s\" a={%u,%u} x=0x%x", REC->__probe_ip, …`. Throws for one it cannot find or read.
 */
export function probeConversions(format: EventFormat, names: readonly string[]): Map<string, Conversion> {
  const what = `print fmt of ${format.name}`;
  const fmt = printFormatString(format.printFmt, what);
  const out = new Map<string, Conversion>();
  // Each argument prints as ` NAME=…` after the probe address `(%lx)` or `(%lx <- %lx)`, in definition order.
  for (const name of names) {
    const key = ` ${name}=`;
    const at = fmt.indexOf(key);
    if (at < 0) throw new FormatError(what, `no '${name}=' in ${JSON.stringify(fmt)}`);
    if (fmt.indexOf(key, at + 1) >= 0) throw new FormatError(what, `'${name}=' twice in ${JSON.stringify(fmt)}`);
    const start = at + key.length;
    let end = fmt.indexOf(' ', start);
    if (end < 0) end = fmt.length;
    const conv = fmt.slice(start, end);
    const c = readConversion(conv);
    if (!c) throw new FormatError(what, `'${name}' prints as '${conv}', which is not decoded here`);
    out.set(name, c);
  }
  return out;
}

function scalarConversion(text: string): 'signed' | 'unsigned' | 'hex' | 'char' | undefined {
  if (text === "'%c'") return 'char';
  const m = /^(0x)?%(?:hh|h|l|ll|L)?([diux])$/.exec(text);
  if (!m) return undefined;
  if (m[2] === 'x') return m[1] ? 'hex' : undefined;
  if (m[1]) return undefined;
  return m[2] === 'u' ? 'unsigned' : 'signed';
}

function readConversion(text: string): Conversion | undefined {
  if (text === '"%s"') return { kind: 'string' };
  if (text.startsWith('{') && text.endsWith('}')) {
    const parts = text.slice(1, -1).split(',');
    const elem = scalarConversion(parts[0]);
    if (!elem || parts.some((p) => scalarConversion(p) !== elem)) return undefined;
    return { kind: 'array', elem, count: parts.length };
  }
  const s = scalarConversion(text);
  return s ? { kind: s } : undefined;
}

/** The quoted format of a `print fmt:` line, with `\"` and `\\` unescaped. */
function printFormatString(printFmt: string, what: string): string {
  if (printFmt[0] !== '"') throw new FormatError(what, 'does not start with a quoted format');
  let out = '';
  for (let i = 1; i < printFmt.length; i++) {
    const c = printFmt[i];
    if (c === '"') return out;
    if (c === '\\') {
      const n = printFmt[++i];
      if (n === '"' || n === '\\') out += n;
      else if (n === 'n') out += '\n';
      else if (n === 't') out += '\t';
      else throw new FormatError(what, `unknown escape \\${n ?? ''}`);
    } else out += c;
  }
  throw new FormatError(what, 'the quoted format does not end');
}

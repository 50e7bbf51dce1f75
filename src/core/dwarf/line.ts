// The line-number program (.debug_line) for DWARF 2–5: header (v5 entry formats included), the state machine
// (op_index for VLIW, special/standard/extended opcodes, define_file in 2–4) and the queries a probe needs.
// Rows are kept column-wise in typed arrays (no per-row objects, no boxed doubles, little GC): postgres-size
// binaries have millions of rows.
import { posix } from 'node:path';
import * as K from './constants';
import { decodeString, type ByteReader } from '../binary/byteReader';
import { DwarfFormatError, isDeadAddress, readAddress, stringAt } from './format';
import type { Unit } from './unit';

// Bound once: per-access getters of a transpiled module namespace would sit on the hot path.
const { FORM, LNCT, LNE, LNS } = K;

export const ROW_STMT = 1,
  ROW_PROLOGUE_END = 2,
  ROW_EPILOGUE_BEGIN = 4,
  ROW_END_SEQUENCE = 8;

export interface LineRows {
  readonly address: Float64Array;
  /** Index into LineTable.files. */
  readonly file: Uint32Array;
  readonly line: Uint32Array;
  readonly column: Uint32Array;
  /** ROW_* bits. */
  readonly flags: Uint8Array;
  readonly discriminator: Uint32Array;
}

/** Growable column store the state machine appends to. */
class RowBuilder {
  n = 0;
  address: Float64Array;
  file: Uint32Array;
  line: Uint32Array;
  column: Uint32Array;
  flags: Uint8Array;
  discriminator: Uint32Array;
  constructor(cap: number) {
    cap = Math.max(16, cap);
    this.address = new Float64Array(cap);
    this.file = new Uint32Array(cap);
    this.line = new Uint32Array(cap);
    this.column = new Uint32Array(cap);
    this.flags = new Uint8Array(cap);
    this.discriminator = new Uint32Array(cap);
  }
  grow(): void {
    const cap = this.address.length * 2;
    const g = <T extends Float64Array | Uint32Array | Uint8Array>(a: T, b: T): T => (b.set(a), b);
    this.address = g(this.address, new Float64Array(cap));
    this.file = g(this.file, new Uint32Array(cap));
    this.line = g(this.line, new Uint32Array(cap));
    this.column = g(this.column, new Uint32Array(cap));
    this.flags = g(this.flags, new Uint8Array(cap));
    this.discriminator = g(this.discriminator, new Uint32Array(cap));
  }
  done(): LineRows {
    const n = this.n;
    return {
      address: this.address.subarray(0, n),
      file: this.file.subarray(0, n),
      line: this.line.subarray(0, n),
      column: this.column.subarray(0, n),
      flags: this.flags.subarray(0, n),
      discriminator: this.discriminator.subarray(0, n),
    };
  }
}

export class LineTable {
  constructor(
    readonly offset: number,
    readonly version: number,
    /** Normalised absolute paths by the file numbers the program uses (holes are ''). */
    readonly files: string[],
    readonly rows: LineRows,
    /** Row ranges [start, end) of each kept sequence, sorted by start address; end is the end_sequence row. */
    readonly sequences: Array<[number, number]>,
  ) {}

  /** Addresses of the is_stmt rows for a file (normalised absolute path) and line, ascending, de-duplicated. */
  addressesForLine(file: string, line: number): number[] {
    const fileIds = new Set<number>();
    this.files.forEach((f, i) => f === file && fileIds.add(i));
    if (fileIds.size === 0) return [];
    const out = new Set<number>();
    const { address, file: fi, line: li, flags } = this.rows;
    for (const [s, e] of this.sequences) {
      for (let i = s; i < e; i++) {
        if (li[i] === line && flags[i] & ROW_STMT && fileIds.has(fi[i])) out.add(address[i]);
      }
    }
    return [...out].sort((a, b) => a - b);
  }

  /** The row describing `pc` (last row at or before it within its sequence), or -1. */
  rowAt(pc: number): number {
    const { address } = this.rows;
    for (const [s, e] of this.sequences) {
      if (pc < address[s] || pc >= address[e]) continue;
      let lo = s,
        hi = e - 1;
      while (lo < hi) {
        const mid = (lo + hi + 1) >> 1;
        if (address[mid] <= pc) lo = mid;
        else hi = mid - 1;
      }
      return lo;
    }
    return -1;
  }

  /**
   * file:line of `pc`, or undefined when no sequence covers it. Like gdb, a non-statement row yields to an
   * is_stmt row at the same address (optimised code stacks several lines on one address).
   */
  lineAt(pc: number): { file: string; line: number; column: number } | undefined {
    let i = this.rowAt(pc);
    if (i < 0) return undefined;
    const { address, flags } = this.rows;
    for (let j = i; j >= 0 && address[j] === address[i] && !(flags[j] & ROW_END_SEQUENCE); j--) {
      if (flags[j] & ROW_STMT) {
        i = j;
        break;
      }
    }
    return { file: this.files[this.rows.file[i]] ?? '', line: this.rows.line[i], column: this.rows.column[i] };
  }

  /**
   * The address after the prologue of the function starting at `lo` (ending at `hi`): the first prologue_end
   * row when the compiler marked one; else gdb's rule — when the entry address already carries a second,
   * different line (optimised code: a zero-length first line) there is no prologue to skip, otherwise the
   * next is_stmt row after the entry.
   */
  afterPrologue(lo: number, hi: number): number {
    const { address, flags, line } = this.rows;
    let next = -1,
      firstLine = -1,
      zeroLength = false;
    for (const [s, e] of this.sequences) {
      if (address[e] <= lo || address[s] >= hi) continue;
      for (let i = s; i < e; i++) {
        const a = address[i];
        if (a < lo || a >= hi) continue;
        if (flags[i] & ROW_PROLOGUE_END) return a;
        if (!(flags[i] & ROW_STMT) || line[i] === 0) continue;
        if (a === lo) {
          if (firstLine < 0) firstLine = line[i];
          else if (line[i] !== firstLine) zeroLength = true;
        } else if (next < 0) next = a;
      }
    }
    return zeroLength || next < 0 ? lo : next;
  }

  /** Every (file, line) with its is_stmt addresses; the data behind `probelens lines`. */
  *stmtRows(): Iterable<{ file: string; line: number; address: number }> {
    const { address, file, line, flags } = this.rows;
    for (const [s, e] of this.sequences) {
      for (let i = s; i < e; i++)
        if (flags[i] & ROW_STMT && !(flags[i] & ROW_END_SEQUENCE))
          yield { file: this.files[file[i]] ?? '', line: line[i], address: address[i] };
    }
  }
}

// Every unit of a large program names the same few hundred headers: normalising each again dominated the
// line-table pass, so results are memoised (bounded: the cache is dropped when it grows past its cap).
const joined = new Map<string, string>();
function join(dir: string, name: string): string {
  const key = `${dir}\0${name}`;
  let p = joined.get(key);
  if (p === undefined) {
    if (joined.size > 100_000) joined.clear();
    p = posix.normalize(posix.isAbsolute(name) ? name : posix.join(dir, name));
    joined.set(key, p);
  }
  return p;
}

/**
 * One value of a DWARF 5 directory or file entry, read without decoding a string: a string form's value is where
 * its bytes are (FORM.string: their offset in .debug_line; strp, line_strp: the offset in their section; strx:
 * the index), a constant its number; data16 and blocks are skipped (-1).
 */
function readEntryValue(r: ByteReader, form: number, is64: boolean): number {
  switch (form) {
    case FORM.string: {
      const at = r.pos;
      r.skipCstr();
      return at;
    }
    case FORM.line_strp:
    case FORM.strp:
      return r.offset(is64);
    case FORM.strx:
    case FORM.GNU_str_index:
    case FORM.udata:
      return r.uleb();
    case FORM.strx1:
    case FORM.data1:
      return r.u8();
    case FORM.strx2:
    case FORM.data2:
      return r.u16();
    case FORM.strx3:
      return r.u24();
    case FORM.strx4:
    case FORM.data4:
      return r.u32();
    case FORM.data8:
      return r.u64();
    case FORM.data16:
      r.skip(16);
      return -1;
    case FORM.block:
      r.skip(r.uleb());
      return -1;
    default:
      return r.fail(`unsupported form 0x${form.toString(16)} in a line table entry`);
  }
}

function isStringForm(form: number): boolean {
  return form === FORM.string || form === FORM.line_strp || form === FORM.strp || isStrx(form);
}

function isStrx(form: number): boolean {
  return (
    form === FORM.strx ||
    form === FORM.GNU_str_index ||
    form === FORM.strx1 ||
    form === FORM.strx2 ||
    form === FORM.strx3 ||
    form === FORM.strx4
  );
}

/**
 * A DWARF 5 entry table read raw: each entry's path as (form, value) (form -1: none, the path is ''), its
 * directory; columns, as a kernel's units list 200,000 files between them.
 */
interface RawEntries {
  form: Float64Array;
  value: Float64Array;
  dir: Float64Array;
}

function readEntries(r: ByteReader, is64: boolean): RawEntries {
  const nfmt = r.u8();
  const contents: number[] = [],
    forms: number[] = [];
  for (let i = 0; i < nfmt; i++) {
    contents.push(r.uleb());
    forms.push(r.uleb());
  }
  const count = r.uleb();
  if (count > r.left) r.fail('line table entry count exceeds the section');
  const out: RawEntries = { form: new Float64Array(count), value: new Float64Array(count), dir: new Float64Array(count) };
  for (let i = 0; i < count; i++) {
    let pathForm = -1,
      path = 0,
      dir = 0;
    for (let k = 0; k < nfmt; k++) {
      const form = forms[k],
        content = contents[k];
      const v = readEntryValue(r, form, is64);
      if (content === LNCT.path && isStringForm(form)) {
        pathForm = form;
        path = v;
      } else if (content === LNCT.directory_index && v >= 0 && !isStringForm(form)) dir = v;
    }
    out.form[i] = pathForm;
    out.value[i] = path;
    out.dir[i] = dir;
  }
  return out;
}

/** mayEndIn of a raw entry's name, from its bytes where `ascii` (`last` is ASCII) and it is stored inline or by offset. */
function entryMayEndIn(u: Unit, line: Uint8Array, form: number, v: number, last: string, ascii: boolean): boolean {
  if (form < 0) return mayEndIn('', last);
  const name =
    form === FORM.string ? '.debug_line' : form === FORM.line_strp ? '.debug_line_str' : form === FORM.strp ? '.debug_str' : undefined;
  if (!ascii || !name) return mayEndIn(entryString(u, line, form, v), last);
  if (form === FORM.string) return bytesMayEndIn(line, v, last, name);
  const buf = u.dw.get(name);
  if (!buf || v < 0 || v >= buf.length) throw new DwarfFormatError(name, v, 'string offset out of range');
  return bytesMayEndIn(buf, v, last, name);
}

/** The string a raw entry value names ('' for none). */
function entryString(u: Unit, line: Uint8Array, form: number, v: number): string {
  if (form < 0) return '';
  if (form === FORM.string) return decodeString(line, v, line.indexOf(0, v));
  if (form === FORM.line_strp) return stringAt(u.dw.get('.debug_line_str'), '.debug_line_str', v);
  if (form === FORM.strp) return stringAt(u.dw.get('.debug_str'), '.debug_str', v);
  return u.strx(v);
}

/**
 * A line table header's file names as stored, and where each one's directory is: the file table parseLineTable
 * makes is join(dirOf(i), name(i)) from index `first` on (DWARF 2–4 number files from 1: name(0) is '').
 * Names are decoded and directories joined when first asked for; mayEndIn(i, last, ascii) tells from a name's bytes
 * whether its path may end in the segment `last`.
 */
interface FileNames {
  count: number;
  first: number;
  name(file: number): string;
  mayEndIn(file: number, last: string, ascii: boolean): boolean;
  dirOf(file: number): string;
  /** A DWARF 2–4 directory by number (define_file names one), undefined past the table. */
  dirs(dir: number): string | undefined;
  /** Decodes every directory name (what reading the whole header checks). */
  decodeDirs(): void;
}

/** Reads the directory and file tables of a line table header (the reader just past the standard opcode lengths). */
function readFileNames(r: ByteReader, u: Unit, version: number, is64: boolean): FileNames {
  const compDir = u.compDir || '/';
  const line = r.buf;
  if (version >= 5) {
    const rawDirs = readEntries(r, is64);
    const files = readEntries(r, is64);
    const dirName = (d: number) => entryString(u, line, rawDirs.form[d], rawDirs.value[d]);
    // Directory 0 is the unit's compilation directory: a relative one (built with -fdebug-prefix-map, as
    // Debian's kernel is) names comp_dir itself, not a directory below it.
    let base: string | undefined;
    const baseDir = (): string => {
      if (base !== undefined) return base;
      const d0 = rawDirs.form.length ? dirName(0) : undefined;
      return (base = d0 === undefined || d0 === u.compDir ? compDir : join(compDir, d0));
    };
    const dirPaths: Array<string | undefined> = [];
    const dirPath = (d: number): string | undefined => {
      if (d >= rawDirs.form.length) return undefined;
      return (dirPaths[d] ??= d === 0 ? baseDir() : join(baseDir(), dirName(d)));
    };
    return {
      count: files.form.length,
      first: 0,
      decodeDirs: () => rawDirs.form.forEach((_f, d) => dirName(d)),
      name: (i) => entryString(u, line, files.form[i], files.value[i]),
      mayEndIn: (i, last, ascii) => entryMayEndIn(u, line, files.form[i], files.value[i], last, ascii),
      dirOf: (i) => dirPath(files.dir[i]) ?? baseDir(),
      // DWARF 5 has no define_file: one a producer still emits is placed in the compilation directory.
      dirs: (d) => (d === 0 ? compDir : undefined),
    };
  }
  const rawDirs: string[] = [];
  for (;;) {
    const d = r.cstr();
    if (d === '') break;
    rawDirs.push(d);
  }
  const at = [0]; // DWARF 2–4 file numbers start at 1: file 0 is ''
  const dirIndex = [0];
  for (;;) {
    const start = r.pos;
    r.skipCstr();
    if (r.pos === start + 1) break;
    at.push(start);
    dirIndex.push(r.uleb());
    r.uleb();
    r.uleb();
  }
  const dirPaths: Array<string | undefined> = [];
  const dirs = (d: number): string | undefined =>
    d === 0 ? compDir : d <= rawDirs.length ? (dirPaths[d] ??= join(compDir, rawDirs[d - 1])) : undefined;
  const name = (i: number) => (i === 0 ? '' : decodeString(line, at[i], line.indexOf(0, at[i])));
  return {
    count: at.length,
    first: 1,
    name,
    mayEndIn: (i, last, ascii) => (ascii ? bytesMayEndIn(line, at[i], last, '.debug_line') : mayEndIn(name(i), last)),
    dirOf: (i) => dirs(dirIndex[i]) ?? compDir,
    dirs,
    decodeDirs: () => undefined,
  };
}

function isAscii(s: string): boolean {
  for (let i = 0; i < s.length; i++) if (s.charCodeAt(i) >= 0x80) return false;
  return true;
}

/** Tells the paths a line table names apart cheaply: see lineTableNames. */
export interface FileNameTest {
  /**
   * The last segment of every path `accept` takes (`open.c`), or undefined when there is none to tell by: a file
   * whose stored name ends in another segment (not `.` or `..`) is then passed over without its path being made.
   */
  readonly last?: string;
  accept(path: string): boolean;
}

/**
 * Whether the header of the line table at `offset` names a file `test` accepts: its file table as
 * parseLineFiles gives it, the path made only for a name whose last segment may be `test.last`.
 */
export function lineTableNames(u: Unit, offset: number, test: FileNameTest): boolean {
  const { r, version, is64 } = readLineHeader(u, offset);
  const f = readFileNames(r, u, version, is64);
  const last = test.last;
  const ascii = last !== undefined && isAscii(last);
  for (let i = 0; i < f.count; i++) {
    if (i < f.first) {
      if (test.accept(f.name(i))) return true;
      continue;
    }
    if (last !== undefined && !f.mayEndIn(i, last, ascii)) continue;
    if (test.accept(join(f.dirOf(i), f.name(i)))) return true;
  }
  return false;
}

/**
 * Whether a path made from `name` (joined to a directory and normalised) may end in the segment `last`: only
 * when the name's last segment is `last`, or is `.`, `..` or empty (then the directory's decides).
 */
function mayEndIn(name: string, last: string): boolean {
  let end = name.length;
  while (end > 0 && name.charCodeAt(end - 1) === 0x2f) end--;
  const start = name.lastIndexOf('/', end - 1) + 1;
  const n = end - start;
  if (n === 0 || (n === 1 && name.charCodeAt(start) === 0x2e) || (n === 2 && name.startsWith('..', start))) return true;
  return n === last.length && name.startsWith(last, start);
}

/**
 * mayEndIn over the NUL-terminated name at `start` of `b` (`last` ASCII: a byte of 0x80 or more is in no such
 * segment), read once from its start: names are short, and most of a kernel's 170,000 pass here. A name with no
 * NUL before the section's end is refused as stringAt refuses it.
 */
function bytesMayEndIn(b: Uint8Array, start: number, last: string, section: string): boolean {
  // The last non-empty segment [s, e): trailing slashes are dropped by it.
  let s = start,
    e = start,
    seg = start,
    i = start;
  for (; i < b.length; i++) {
    const c = b[i];
    if (c === 0) break;
    if (c !== 0x2f) continue;
    if (i > seg) {
      s = seg;
      e = i;
    }
    seg = i + 1;
  }
  if (i === b.length) throw new DwarfFormatError(section, start, 'unterminated string');
  if (i > seg) {
    s = seg;
    e = i;
  }
  const n = e - s;
  if (n === 0 || (n === 1 && b[s] === 0x2e) || (n === 2 && b[s] === 0x2e && b[s + 1] === 0x2e)) return true;
  if (n !== last.length) return false;
  for (let k = 0; k < n; k++) if (b[s + k] !== last.charCodeAt(k)) return false;
  return true;
}

/** Only the file names of the line table at `offset` (what DW_AT_decl_file/call_file index), without the program. */
export function parseLineFiles(u: Unit, offset: number): string[] {
  return parseLineTable(u, offset, true).files;
}

/** A line table's header, read up to its directory and file tables (where `r` stands). */
function readLineHeader(u: Unit, offset: number) {
  const r = u.dw.reader('.debug_line', offset);
  const { length, is64 } = r.initialLength();
  const end = r.pos + length;
  if (end > r.end) r.fail('line table runs past the section', offset);
  r.end = end;
  const version = r.u16();
  if (version < 2 || version > 5) r.fail(`unsupported line table version ${version}`, offset);
  let addrSize = u.enc.addrSize;
  if (version >= 5) {
    addrSize = r.u8();
    r.u8(); // segment selector size
  }
  const headerLength = r.offset(is64);
  const progStart = r.pos + headerLength;
  if (progStart > end) r.fail('line table header runs past the table', offset);
  const minInst = r.u8();
  const maxOps = version >= 4 ? r.u8() || 1 : 1;
  const defaultStmt = r.u8() !== 0;
  const lineBase = r.s8();
  const lineRange = r.u8();
  const opcodeBase = r.u8();
  if (lineRange === 0) r.fail('line_range of 0', offset);
  const stdLens: number[] = [0];
  for (let i = 1; i < opcodeBase; i++) stdLens.push(r.u8());
  return { r, version, is64, addrSize, end, progStart, minInst, maxOps, defaultStmt, lineBase, lineRange, opcodeBase, stdLens };
}

/** Decodes the line program at `offset` of .debug_line for unit `u` (which supplies comp_dir and string bases). */
export function parseLineTable(u: Unit, offset: number, headerOnly = false): LineTable {
  const { r, version, is64, addrSize, end, progStart, minInst, maxOps, defaultStmt, lineBase, lineRange, opcodeBase, stdLens } =
    readLineHeader(u, offset);
  const names = readFileNames(r, u, version, is64);
  names.decodeDirs();
  const files: string[] = [];
  for (let i = 0; i < names.count; i++) files.push(i < names.first ? names.name(i) : join(names.dirOf(i), names.name(i)));
  const compDir = u.compDir || '/';
  const dirs = names.dirs;

  if (headerOnly) return new LineTable(offset, version, files, new RowBuilder(0).done(), []);
  r.seek(progStart);
  // Most rows cost 1–3 bytes of program; start near that and double when needed.
  const rows = new RowBuilder(Math.ceil((end - progStart) / 3));
  const sequences: Array<[number, number]> = [];
  let address = 0,
    opIndex = 0,
    file = 1,
    line = 1,
    column = 0,
    isStmt = defaultStmt;
  let prologueEnd = false,
    epilogueBegin = false,
    discriminator = 0;
  let seqStart = 0;
  const dead = (a: number) => isDeadAddress(a, addrSize, u.dw.zeroIsCode);
  const reset = () => {
    address = 0;
    opIndex = 0;
    file = 1;
    line = 1;
    column = 0;
    isStmt = defaultStmt;
    prologueEnd = false;
    epilogueBegin = false;
    discriminator = 0;
  };
  const emit = (endSeq: boolean) => {
    if (rows.n === rows.address.length) rows.grow();
    const i = rows.n++;
    rows.address[i] = address;
    rows.file[i] = file;
    rows.line[i] = line;
    rows.column[i] = column;
    rows.flags[i] =
      (isStmt ? ROW_STMT : 0) |
      (prologueEnd ? ROW_PROLOGUE_END : 0) |
      (epilogueBegin ? ROW_EPILOGUE_BEGIN : 0) |
      (endSeq ? ROW_END_SEQUENCE : 0);
    rows.discriminator[i] = discriminator;
    discriminator = 0;
    prologueEnd = false;
    epilogueBegin = false;
  };
  const advance = (opAdvance: number) => {
    if (maxOps === 1) address += minInst * opAdvance;
    else {
      address += minInst * Math.floor((opIndex + opAdvance) / maxOps);
      opIndex = (opIndex + opAdvance) % maxOps;
    }
  };
  const endSequence = () => {
    const endRow = rows.n - 1;
    if (endRow > seqStart && !dead(rows.address[seqStart])) sequences.push([seqStart, endRow]);
    seqStart = rows.n;
  };

  const buf = r.buf;
  while (r.pos < end) {
    const op = buf[r.pos++];
    if (op >= opcodeBase) {
      // Special opcodes are most of the program: keep this path free of calls when max_ops is 1.
      const adj = op - opcodeBase;
      const q = (adj / lineRange) | 0;
      if (maxOps === 1) address += minInst * q;
      else advance(q);
      line += lineBase + (adj - q * lineRange);
      emit(false);
    } else if (op === 0) {
      const len = r.uleb();
      const next = r.pos + len;
      if (len === 0 || next > end) r.fail('bad extended opcode length');
      const sub = r.u8();
      switch (sub) {
        case LNE.end_sequence:
          emit(true);
          endSequence();
          reset();
          break;
        case LNE.set_address:
          address = readAddress(r, len - 1);
          opIndex = 0;
          break;
        case LNE.define_file: {
          const name = r.cstr();
          const dir = r.uleb();
          files.push(join(dirs(dir) ?? compDir, name));
          break;
        }
        case LNE.set_discriminator:
          discriminator = r.uleb();
          break;
        default:
          break; // vendor extensions: skipped by length
      }
      r.seek(next);
    } else {
      switch (op) {
        case LNS.copy:
          emit(false);
          break;
        case LNS.advance_pc:
          advance(r.uleb());
          break;
        case LNS.advance_line:
          line += r.sleb();
          break;
        case LNS.set_file:
          file = r.uleb();
          break;
        case LNS.set_column:
          column = r.uleb();
          break;
        case LNS.negate_stmt:
          isStmt = !isStmt;
          break;
        case LNS.set_basic_block:
          break;
        case LNS.const_add_pc:
          advance(Math.floor((255 - opcodeBase) / lineRange));
          break;
        case LNS.fixed_advance_pc:
          address += r.u16();
          opIndex = 0;
          break;
        case LNS.set_prologue_end:
          prologueEnd = true;
          break;
        case LNS.set_epilogue_begin:
          epilogueBegin = true;
          break;
        case LNS.set_isa:
          r.uleb();
          break;
        default:
          // Unknown standard opcode: skip its ULEB operands as the header declares.
          for (let i = 0; i < stdLens[op]; i++) r.uleb();
      }
    }
  }
  const done = rows.done();
  sequences.sort((a, b) => done.address[a[0]] - done.address[b[0]]);
  return new LineTable(offset, version, files, done, sequences);
}

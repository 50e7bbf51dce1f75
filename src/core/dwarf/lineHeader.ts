// A line table's header (.debug_line, DWARF 2–5, v5 entry formats included): its fields up to the program, its
// directory and file tables (names decoded only when asked for), and lineTableNames, which tells from the names'
// bytes whether a unit's table may name a file without building every path. The program itself is line.ts.
// Tests: test/unit/core/dwarf/line.test.ts, test/unit/core/index/openFile.test.ts, test/unit/core/dwarf/unreadInfo.test.ts
import { posix } from 'node:path';
import * as K from './constants';
import { decodeString, type ByteReader } from '../binary/byteReader';
import { DwarfFormatError, stringAt } from './format';
import type { Unit } from './unit';

// Bound once: per-access getters of a transpiled module namespace would sit on the hot path.
const { FORM, LNCT } = K;

// Every unit of a large program names the same few hundred headers: normalising each again dominated the
// line-table pass, so results are memoised (bounded: the cache is dropped when it grows past its cap).
const joined = new Map<string, string>();
export function join(dir: string, name: string): string {
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
  // GCC's layout (a path by offset, then a directory number): a kernel's 2,000 units name 170,000 files this way,
  // all of whose headers an open file's index reads. The same values as the general loop, read without it.
  if (
    nfmt === 2 &&
    contents[0] === LNCT.path &&
    (forms[0] === FORM.line_strp || forms[0] === FORM.strp) &&
    contents[1] === LNCT.directory_index &&
    forms[1] === FORM.udata
  ) {
    const pathForm = forms[0];
    for (let i = 0; i < count; i++) {
      out.form[i] = pathForm;
      out.value[i] = r.offset(is64);
      out.dir[i] = r.uleb();
    }
    return out;
  }
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
export function readFileNames(r: ByteReader, u: Unit, version: number, is64: boolean): FileNames {
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

/** A line table's header, read up to its directory and file tables (where `r` stands). */
export function readLineHeader(u: Unit, offset: number) {
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

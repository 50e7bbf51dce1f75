// The line-number program (.debug_line) for DWARF 2–5 (its header: lineHeader.ts): the state machine
// (op_index for VLIW, special/standard/extended opcodes, define_file in 2–4) and the queries a probe needs.
// Rows are kept column-wise in typed arrays (no per-row objects, no boxed doubles, little GC): postgres-size
// binaries have millions of rows.
import * as K from './constants';
import { isDeadAddress, readAddress } from './format';
import type { Unit } from './unit';
import { join, readFileNames, readLineHeader } from './lineHeader';

// Bound once: per-access getters of a transpiled module namespace would sit on the hot path.
const { LNE, LNS } = K;

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

/** Only the file names of the line table at `offset` (what DW_AT_decl_file/call_file index), without the program. */
export function parseLineFiles(u: Unit, offset: number): string[] {
  return parseLineTable(u, offset, true).files;
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

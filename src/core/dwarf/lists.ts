// Range lists (.debug_ranges for DWARF 2–4, .debug_rnglists for 5) and location lists (.debug_loc for 2–4,
// .debug_loclists for 5), all entry kinds. Ranges come back as a flat [lo0, hi0, lo1, hi1, …] array so a
// function's ranges cost one allocation.
// Tests: test/unit/core/dwarf/lists.test.ts, test/unit/core/index/unitReuse.test.ts, test/unit/core/index/unitShift.test.ts
import * as K from './constants';
import { ByteReader } from '../binary/byteReader';
import { DwarfFormatError, foldAddress, isDeadAddress, readAddress } from './format';
import { isAddrx, type Block, type Die, type Unit } from './unit';

// Bound once: per-access getters of a transpiled module namespace would sit on the hot path.
const { AT, FORM, LLE, RLE } = K;

// Reads an address and reports whether all its bits are set (a base-address selection entry in the DWARF 2–4
// lists); the check must be exact because the -2 tombstone rounds to the same double as -1.
function addrAllOnes(r: ByteReader, size: number): [number, boolean] {
  if (size === 8) {
    const a = r.u32(),
      b = r.u32();
    const v = r.le ? foldAddress(b, a) : foldAddress(a, b);
    return [v, a === 0xffffffff && b === 0xffffffff];
  }
  const v = r.uN(size);
  return [v, v === 2 ** (8 * size) - 1];
}

/** The sections only this file reads; what a unit read of them is recorded when the unit asks (Unit.listReads). */
export const LIST_SECTIONS = ['.debug_ranges', '.debug_rnglists', '.debug_loc', '.debug_loclists'] as const;

/**
 * A reader of `section` at `at` for a list of `u`. When the unit records its list reads (the unit cache keys a
 * unit's result by the bytes it read), the reader is kept: what it covered is [its start, its final position),
 * and a read that fails marks the unit (its result then depends on where the section ends).
 */
function listReader(u: Unit, section: (typeof LIST_SECTIONS)[number], at: number, kind: ListReadKind): ByteReader {
  const log = u.listReads;
  if (!log) {
    const r = u.dw.reader(section, 0);
    r.seek(at);
    return r;
  }
  const b = u.dw.get(section);
  // A section read range by range (Sections.readAt) is read whole for a unit that records its reads.
  if (b) u.dw.fill(section, 0, b.length);
  if (!b) {
    u.listReadFailed = true;
    throw new DwarfFormatError(section, at, 'section is missing');
  }
  const r = new ByteReader(b, u.dw.le, section, (where, offset, detail) => {
    u.listReadFailed = true;
    return new DwarfFormatError(where, offset, detail);
  });
  r.seek(at);
  log.push({ section: LIST_SECTIONS.indexOf(section), start: r.pos, reader: r, kind });
  return r;
}

/**
 * `read` over a reader of `section` at `at` for a list of `u`: the recording reader (listReader) when the unit
 * records its list reads, else one that reads the list where it is (Sections.readAt; `read` may run again).
 */
function readList<T>(u: Unit, section: (typeof LIST_SECTIONS)[number], at: number, kind: ListReadKind, read: (r: ByteReader) => T): T {
  return u.listReads ? read(listReader(u, section, at, kind)) : u.dw.readAt(section, at, read);
}

/** What a recorded list read decoded: a range list, a location list, a view list, an offsets table's entry. */
export const ListReadKind = { Ranges: 0, Rnglist: 1, Loc: 2, Loclist: 3, Views: 4, Index: 5 } as const;
type ListReadKind = (typeof ListReadKind)[keyof typeof ListReadKind];

/**
 * Every recorded list read of `u`, in the order made: [kind, section index, start, end] quadruples (unlike
 * listExtents, neither sorted nor joined: the unit cache's shifted reuse decodes each read as what it was).
 */
export function listReadLog(u: Unit): number[] {
  return (u.listReads ?? []).flatMap((x) => [x.kind, x.section, x.start, Math.max(x.start, x.reader.pos)]);
}

/**
 * What `u` read of the list sections since it began recording: [section index, start, end] triples, sorted, each
 * the union of reads that overlap or touch (exactly the bytes read, once).
 */
export function listExtents(u: Unit): number[] {
  const reads = (u.listReads ?? []).map((x) => [x.section, x.start, Math.max(x.start, x.reader.pos)] as const);
  reads.sort((a, b) => a[0] - b[0] || a[1] - b[1]);
  const out: number[] = [];
  for (const [s, lo, hi] of reads) {
    const n = out.length;
    if (n > 0 && out[n - 3] === s && lo <= out[n - 1]) out[n - 1] = Math.max(out[n - 1], hi);
    else out.push(s, lo, hi);
  }
  return out;
}

function push(u: Unit, out: number[], lo: number, hi: number): void {
  if (hi > lo && !isDeadAddress(lo, u.enc.addrSize, u.dw.zeroIsCode)) out.push(lo, hi);
}

/** The code ranges of a DIE: low_pc/high_pc (high_pc as an offset in DWARF 4+) or DW_AT_ranges. */
export function rangesOf(u: Unit, d: Die): number[] {
  const out: number[] = [];
  const lo = u.addr(d, AT.low_pc);
  const hi = d.index(AT.high_pc);
  if (lo !== undefined && hi >= 0) {
    const f = d.forms[hi];
    const end = f === FORM.addr || isAddrx(f) ? u.addr(d, AT.high_pc)! : lo + d.vals[hi];
    push(u, out, lo, end);
    return out;
  }
  const ri = d.index(AT.ranges);
  if (ri < 0) return out;
  const f = d.forms[ri];
  let v = d.vals[ri];
  if (u.version >= 5 || f === FORM.rnglistx) {
    if (f === FORM.rnglistx) v = listIndex(u, '.debug_rnglists', u.rnglistsBase, v);
    else if (u.unitType === 5 /* split_compile */) v += u.rnglistsBase;
    readRnglist(u, v, out);
  } else {
    readRanges(u, v, out);
  }
  return out;
}

/** Resolves a rnglistx/loclistx index through the offsets table that starts at the unit's base. */
function listIndex(u: Unit, section: '.debug_rnglists' | '.debug_loclists', base: number, index: number): number {
  const sz = u.enc.is64 ? 8 : 4;
  const len = u.dw.get(section)?.length ?? 0;
  return readList(u, section, Math.min(base + index * sz, len), ListReadKind.Index, (r) => base + r.uN(sz));
}

// A list is read where it is (Sections.readAt): a run that reads past what was read is made again, so what it
// pushes to `out` is taken back first.
function readRanges(u: Unit, offset: number, out: number[]): void {
  const n = out.length;
  readList(u, '.debug_ranges', offset, ListReadKind.Ranges, (r) => {
    out.length = n;
    rangesFrom(u, r, out);
  });
}

function rangesFrom(u: Unit, r: ByteReader, out: number[]): void {
  const sz = u.enc.addrSize;
  let base = u.lowPc;
  for (let n = 0; ; n++) {
    if (n > 1e6) r.fail('range list too long');
    const [a, allOnes] = addrAllOnes(r, sz);
    const b = readAddress(r, sz);
    if (a === 0 && b === 0) return;
    if (allOnes) base = b;
    else push(u, out, base + a, base + b);
  }
}

function readRnglist(u: Unit, offset: number, out: number[]): void {
  const n = out.length;
  readList(u, '.debug_rnglists', offset, ListReadKind.Rnglist, (r) => {
    out.length = n;
    rnglistFrom(u, r, out);
  });
}

function rnglistFrom(u: Unit, r: ByteReader, out: number[]): void {
  const sz = u.enc.addrSize;
  let base = u.lowPc;
  for (let n = 0; ; n++) {
    if (n > 1e6) r.fail('range list too long');
    const kind = r.u8();
    switch (kind) {
      case RLE.end_of_list:
        return;
      case RLE.base_addressx:
        base = u.addrx(r.uleb());
        break;
      case RLE.startx_endx: {
        const a = u.addrx(r.uleb());
        push(u, out, a, u.addrx(r.uleb()));
        break;
      }
      case RLE.startx_length: {
        const a = u.addrx(r.uleb());
        push(u, out, a, a + r.uleb());
        break;
      }
      case RLE.offset_pair: {
        const a = r.uleb();
        push(u, out, base + a, base + r.uleb());
        break;
      }
      case RLE.base_address:
        base = readAddress(r, sz);
        break;
      case RLE.start_end: {
        const a = readAddress(r, sz);
        push(u, out, a, readAddress(r, sz));
        break;
      }
      case RLE.start_length: {
        const a = readAddress(r, sz);
        push(u, out, a, a + r.uleb());
        break;
      }
      default:
        r.fail(`unknown range list entry kind ${kind}`, r.pos - 1);
    }
  }
}

/** One entry of a location list: the expression valid in [lo, hi) (default entries use lo=0, hi=Infinity). */
export interface LocEntry {
  readonly lo: number;
  readonly hi: number;
  readonly expr: Block;
  /**
   * GCC's location views (DW_AT_GNU_locviews): the entry starts at view `view[0]` of address lo and ends before
   * view `view[1]` of address hi, so several entries can start at one address (empty ranges included).
   */
  view?: [number, number];
}

/**
 * The location of a variable: a single expression (valid everywhere in its scope), a location list, or
 * none (no DW_AT_location: optimised out).
 */
export type Location = { kind: 'expr'; expr: Block } | { kind: 'list'; entries: LocEntry[] } | { kind: 'none' };

const DW_AT_GNU_locviews = 0x2137;

export function locationOf(u: Unit, d: Die, at: number = AT.location): Location {
  const i = d.index(at);
  if (i < 0) return { kind: 'none' };
  const f = d.forms[i];
  const blk = u.block(d, at);
  if (blk) return { kind: 'expr', expr: blk };
  let off = d.vals[i];
  if (f === FORM.loclistx) off = listIndex(u, '.debug_loclists', u.loclistsBase, off);
  else if (f !== FORM.sec_offset && f !== FORM.data4 && f !== FORM.data8) return { kind: 'none' };
  const withViews = at === AT.location && d.index(DW_AT_GNU_locviews) >= 0;
  const entries = u.version >= 5 ? readLoclist(u, off, withViews) : readLoc(u, off, withViews);
  if (withViews) attachViews(u, d.vals[d.index(DW_AT_GNU_locviews)], entries);
  return { kind: 'list', entries };
}

/**
 * GCC's view list (DW_AT_GNU_locviews, an offset into the same section) holds one (begin, end) pair of ULEB128
 * view numbers per bounded entry of the location list, in order. Entries whose range is empty are kept here for
 * it (they are how a value is described between two views at one address).
 */
function attachViews(u: Unit, offset: number, entries: Array<LocEntry & { seq?: number }>): void {
  const bounded = entries.filter((e) => e.seq !== undefined);
  const n = bounded.reduce((m, e) => Math.max(m, e.seq! + 1), 0);
  // At most n pairs of ULEB128s of 10 bytes each are read.
  const section = u.version >= 5 ? '.debug_loclists' : '.debug_loc';
  const r = u.listReads ? listReader(u, section, offset, ListReadKind.Views) : u.dw.readerOver(section, offset, offset + 20 * n);
  const views: Array<[number, number]> = [];
  for (let k = 0; k < n && r.pos < r.end; k++) views.push([r.uleb(), r.uleb()]);
  for (const e of bounded) if (views[e.seq!]) e.view = views[e.seq!];
}

function exprAt(r: ByteReader, len: number): Block {
  const start = r.pos;
  r.skip(len);
  return { buf: r.buf, start, len };
}

// With views, empty ranges are kept and each bounded entry carries its ordinal (`seq`) for attachViews.
function readLoc(u: Unit, offset: number, views = false): Array<LocEntry & { seq?: number }> {
  return readList(u, '.debug_loc', offset, ListReadKind.Loc, (r) => locFrom(u, r, views));
}

function locFrom(u: Unit, r: ByteReader, views: boolean): Array<LocEntry & { seq?: number }> {
  const sz = u.enc.addrSize;
  let base = u.lowPc;
  const out: Array<LocEntry & { seq?: number }> = [];
  let seq = 0;
  for (let n = 0; ; n++) {
    if (n > 1e6) r.fail('location list too long');
    const [a, allOnes] = addrAllOnes(r, sz);
    const b = readAddress(r, sz);
    if (a === 0 && b === 0) return out;
    if (allOnes) {
      base = b;
      continue;
    }
    const e = exprAt(r, r.u16());
    const k = seq++;
    if (!isDeadAddress(base + a, sz, u.dw.zeroIsCode) && (b > a || (views && b === a)))
      out.push({ lo: base + a, hi: base + b, expr: e, seq: k });
  }
}

function readLoclist(u: Unit, offset: number, views = false): Array<LocEntry & { seq?: number }> {
  return readList(u, '.debug_loclists', offset, ListReadKind.Loclist, (r) => loclistFrom(u, r, views));
}

function loclistFrom(u: Unit, r: ByteReader, views: boolean): Array<LocEntry & { seq?: number }> {
  const sz = u.enc.addrSize;
  let base = u.lowPc;
  const out: Array<LocEntry & { seq?: number }> = [];
  let seq = 0;
  let pairView: [number, number] | undefined;
  const add = (lo: number, hi: number) => {
    const e = exprAt(r, r.uleb());
    const k = seq++;
    const view = pairView;
    pairView = undefined;
    if (!isDeadAddress(lo, sz, u.dw.zeroIsCode) && (hi > lo || ((views || view) && hi === lo)))
      out.push(view ? { lo, hi, expr: e, view } : { lo, hi, expr: e, seq: k });
  };
  for (let n = 0; ; n++) {
    if (n > 1e6) r.fail('location list too long');
    const kind = r.u8();
    switch (kind) {
      case LLE.end_of_list:
        return out;
      case LLE.base_addressx:
        base = u.addrx(r.uleb());
        break;
      case LLE.startx_endx: {
        const a = u.addrx(r.uleb());
        add(a, u.addrx(r.uleb()));
        break;
      }
      case LLE.startx_length: {
        const a = u.addrx(r.uleb());
        add(a, a + r.uleb());
        break;
      }
      case LLE.offset_pair: {
        const a = r.uleb();
        const b = r.uleb();
        add(base + a, base + b);
        break;
      }
      case LLE.default_location:
        out.push({ lo: 0, hi: Infinity, expr: exprAt(r, r.uleb()) });
        break;
      case LLE.base_address:
        base = readAddress(r, sz);
        break;
      case LLE.start_end: {
        const a = readAddress(r, sz);
        add(a, readAddress(r, sz));
        break;
      }
      case LLE.start_length: {
        const a = readAddress(r, sz);
        add(a, a + r.uleb());
        break;
      }
      case LLE.GNU_view_pair:
        // The views of the entry that follows (GCC's -gvariable-location-views=incompat5 encoding).
        pairView = [r.uleb(), r.uleb()];
        break;
      default:
        r.fail(`unknown location list entry kind ${kind}`, r.pos - 1);
    }
  }
}

/**
 * The expression valid at `pc`, or undefined when the variable has no location there (optimised out). With
 * `view` (an inlined copy's DW_AT_GNU_entry_view at its entry pc) and entries that carry views, the entry valid
 * at that view of `pc` wins: one starting at pc only from its begin view on, one ending at pc until its end view;
 * with none valid there, the one starting at pc at the earliest later view.
 */
export function locationAtPc(loc: Location, pc: number, view?: number): Block | undefined {
  if (loc.kind === 'expr') return loc.expr;
  if (loc.kind === 'none') return undefined;
  let dflt: Block | undefined;
  if (view !== undefined && loc.entries.some((e) => e.view)) {
    for (const e of loc.entries) {
      if (e.hi === Infinity) {
        dflt = e.expr;
        continue;
      }
      const v = e.view ?? [0, 0];
      const starts = e.lo < pc || (e.lo === pc && v[0] <= view);
      const lasts = pc < e.hi || (pc === e.hi && view < v[1]);
      if (starts && lasts) return e.expr;
    }
    // Views at one address share one machine state: a value bound only a view later there (a clone's parameter
    // at view 1 of its entry) is already what the registers hold. The earliest such view is the closest to `view`.
    let later: LocEntry | undefined;
    for (const e of loc.entries) if (e.lo === pc && e.view && e.view[0] > view && (!later || e.view[0] < later.view![0])) later = e;
    return later?.expr ?? dflt;
  }
  for (const e of loc.entries) {
    if (e.hi === Infinity) dflt = e.expr;
    else if (pc >= e.lo && pc < e.hi) return e.expr;
  }
  return dflt;
}

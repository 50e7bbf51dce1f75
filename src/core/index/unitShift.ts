// A unit whose code only moved: the unit cache's second key (unitReuse.ts), looked up only when a unit's exact key
// missed. A source file whose code grew moves the code of every unit linked after it by a few bytes; such a unit's
// inputs differ from what it had only by a uniform shift D of its code addresses (and, in the list sections, by a
// shift E of where its lists are), and its stored result with every address in it moved by D is reused.
//
// Why that is exact. The shift form of a unit is its bytes, its abbreviation table and its line program with every
// address-valued field replaced by (value − B), B the unit's first DW_FORM_addr value, and every list offset by
// (value − the unit's first list offset of that section); everything else is hashed as it is. Two units with one
// shift form have the same bytes except that every address field of one is the other's + D (D = B' − B, the same
// for every field: the hashed differences are equal) and every list offset is the other's + E_s. A field is
// "address-valued" by the same decoding the reader does (the same abbreviation table, skipForm, the line program's
// opcodes as line.ts decodes them), so no byte the reader takes for something else is normalised.
// Every read the unit's indexing made of the list sections was recorded (lists.ts, listReadLog: kind, section,
// start, end); each starts at a list offset a DIE names (a read from anywhere else makes the unit ineligible), so
// the same reads of the new binary start E_s further on; their bytes, decoded as the read decoded them, must have
// the same shift form (addresses relative to the same B', offsets and expressions as they are), checked before use.
// (A list is read to its end-of-list entry, whatever follows it; a view list to its count of pairs, or the section's
// end: one whose read met the section's end is not stored, as the new section may go on.)
// The reader then takes every decision alike: the same DIEs, forms, lengths, expressions, views, the same entries
// of every list. Every address it computes is one field (a DW_FORM_addr, a list's base or start address, a line
// program's DW_LNE_set_address, the unit's DW_AT_low_pc as list base) plus offsets from the unchanged bytes
// (high_pc and entry_pc constants, offset pairs, lengths, line advances), so it is the old one + D. Comparisons and
// differences of such addresses are unchanged; the only tests of an address against a constant are isDeadAddress
// (0, the tombstones, 2^53: lists.ts, line.ts, functions.ts) and the 2^53 fold of readAddress. Both are ruled out:
// every field is ≥ 1 and every field plus the largest offset added to any is < 2^52, in the old binary (checked
// when stored) and the new (checked before use), and offsets are never negative (ULEB128s, unsigned data forms;
// a signed form in high_pc or entry_pc makes the unit ineligible). A line sequence whose rows come before any
// DW_LNE_set_address (its addresses count from 0, a constant) makes it ineligible, as does a unit whose lists may
// lean on the constant 0 as base (no DW_FORM_addr DW_AT_low_pc in its root).
// Reads outside the unit: symbol look-ups are made at the old addresses + D and must find the same names (or
// none); nothing else of the image is read (file offsets are made later, from the new image, build.ts). Sections
// whose offsets the unit's forms name (strings) are hashed whole, as for the exact key, and forms that index
// tables (strx, addrx, rnglistx, loclistx), DW_FORM_indirect, references outside the unit, DWARF before 5, split
// units and 4-byte addresses make a unit ineligible. The result's addresses are then moved by D: functions'
// address, every site's address and ranges, the code ranges, the line table's address column; `size` and line
// numbers are differences or not addresses. A result whose text could hold an address (any "0x" in a function's
// reason or a parameter's type or location: "no entry at 0x…") is not stored for a shifted reuse. A unit whose
// parts moved by different amounts (its hot code moved, its .cold part did not) has no matching shift form and is
// indexed again. When in doubt nothing is reused: a miss costs time, a wrong reuse a wrong index.
// Tests: test/unit/core/index/unitShift.test.ts, test/unit/core/index/unitReuse.test.ts
import { createHash, type Hash } from 'node:crypto';
import type { SectionSource as DebugSections } from '../binary/sections';
import { AT, FORM, LLE, LNE, LNS, RLE, TAG } from '../dwarf/constants';
import { readLineHeader } from '../dwarf/lineHeader';
import { ListReadKind, LIST_SECTIONS } from '../dwarf/lists';
import type { Abbrev } from '../dwarf/abbrev';
import { isConstantForm, nextAbbrev, readValue, skipAttrs, skipForm, type Unit } from '../dwarf/unit';
import type { DwarfSlice } from './fromDwarf';
import type { IndexedFunction } from './model';

/** Every address of a shifted reuse, field and computed, lies below this (and at 1 or above). */
const ADDRESS_LIMIT = 2 ** 52;

/** A unit's shift form: its key and what places it (B, the list bases) and bounds its addresses. */
export interface ShiftForm {
  key: string;
  /** B: the unit's first DW_FORM_addr value. */
  base: number;
  /** Per LIST_SECTIONS index, the unit's first list offset of that section named by a DIE; -1 for none. */
  listBases: number[];
  /** Every list offset a DIE names, per section: where recorded reads may start. */
  listStarts: Array<Set<number>>;
  /** Its fields' and offsets' bounds (the list reads' are apart: listsShift, readsShift). */
  bounds: Bounds;
}

/** The smallest and largest field − B, and the largest offset added to an address (all ≥ 0 but `low`). */
export interface Bounds {
  low: number;
  maxRel: number;
  maxOffset: number;
}

/**
 * What is hashed besides the bytes: normalised values in decoding order (which the hashed bytes fix), and the
 * bounds. Numbers are exact: every address and offset taken is below 2^52 (a larger one makes the unit ineligible).
 */
class Normaliser {
  values: number[] = [];
  base = -1;
  low = 0;
  maxRel = 0;
  maxOffset = 0;
  /** An 8-byte address at `at` of `b`. */
  address(b: Uint8Array, at: number, le: boolean): void {
    const v = u64(b, at, le);
    if (this.base < 0) this.base = v;
    const rel = v - this.base;
    if (rel < this.low) this.low = rel;
    if (rel > this.maxRel) this.maxRel = rel;
    this.values.push(rel);
  }
  offset(n: number): void {
    if (!(n < ADDRESS_LIMIT)) no();
    if (n > this.maxOffset) this.maxOffset = n;
  }
  digest(h: Hash): void {
    h.update(new Uint8Array(Float64Array.from(this.values).buffer));
  }
}

class Ineligible extends Error {}
const no = (): never => {
  throw new Ineligible();
};

// Attributes whose list-offset value lists.ts follows (locationOf of DW_AT_location and DW_AT_frame_base: sec_offset,
// data4, data8; views and rangesOf: any form), and the other location-class attributes' sec_offset values, taken as
// list offsets too (a stricter key).
const LOC_ATTRS = new Set<number>([AT.location, AT.frame_base, 0x19, 0x2a, AT.data_member_location, 0x2e, 0x46, 0x48, 0x4a, 0x4d]);
const DW_AT_GNU_locviews = 0x2137;
// A call site parameter's value (DW_AT_call_value, GNU's DW_AT_GNU_call_site_value): an expression the index never
// reads (it reads no call site), whose DW_OP_addr of a string literal moves wherever the linker's merged strings do.
const isCallValue = (a: Abbrev, i: number) =>
  a.forms[i] === FORM.exprloc &&
  (a.attrs[i] === AT.call_value || a.attrs[i] === AT.GNU_call_site_value) &&
  (a.tag === TAG.call_site_parameter || a.tag === TAG.GNU_call_site_parameter);
const RNGLISTS = LIST_SECTIONS.indexOf('.debug_rnglists');
const LOCLISTS = LIST_SECTIONS.indexOf('.debug_loclists');
/** Forms hashed as they are: none names an address, a list, a table index or another unit. */
const RAW_FORMS = new Set<number>([
  FORM.block1,
  FORM.block2,
  FORM.block4,
  FORM.block,
  FORM.exprloc,
  FORM.data1,
  FORM.data2,
  FORM.data4,
  FORM.data8,
  FORM.data16,
  FORM.sdata,
  FORM.udata,
  FORM.flag,
  FORM.flag_present,
  FORM.string,
  FORM.strp,
  FORM.line_strp,
  FORM.ref1,
  FORM.ref2,
  FORM.ref4,
  FORM.ref8,
  FORM.ref_udata,
  FORM.implicit_const,
]);

function hashBytes(h: Hash, b: Uint8Array): void {
  h.update(`${b.length}\0`);
  h.update(b);
}

/** The 8-byte value at `at` of `b`, which must be below 2^52 (else the unit is ineligible). */
function u64(b: Uint8Array, at: number, le: boolean): number {
  if (at + 8 > b.length) no();
  const v = new DataView(b.buffer, b.byteOffset + at, 8);
  const lo = v.getUint32(le ? 0 : 4, le);
  const hi = v.getUint32(le ? 4 : 0, le);
  if (hi >= 2 ** 20) no();
  return hi * 2 ** 32 + lo;
}

/** Per abbreviation: plain (nothing in it is normalised or bounds an address), walked, or ineligible. */
const PLAIN = 0;
const WALK = 1;
const BAD = 2;
const plans = new WeakMap<Abbrev, number>();
function planOf(a: Abbrev): number {
  let p = plans.get(a);
  if (p !== undefined) return p;
  p = PLAIN;
  for (let i = 0; i < a.forms.length && p !== BAD; i++) {
    const f = a.forms[i];
    const at = a.attrs[i];
    if (
      isCallValue(a, i) ||
      f === FORM.addr ||
      f === FORM.sec_offset ||
      at === AT.high_pc ||
      at === AT.entry_pc ||
      at === AT.ranges ||
      at === DW_AT_GNU_locviews
    )
      p = WALK;
    else if ((at === AT.location || at === AT.frame_base) && (f === FORM.data4 || f === FORM.data8)) p = BAD;
    else if (!RAW_FORMS.has(f)) p = BAD;
  }
  plans.set(a, p);
  return p;
}

/**
 * The unit's shift form, or undefined when it is not eligible for a shifted reuse. `salt`: what every unit's key
 * starts from (the exact key's: sections hashed whole, architecture, format). `owner`: whether its line table is
 * the one the index takes.
 */
export function shiftForm(src: DebugSections, u: Unit, owner: boolean, salt: Uint8Array): ShiftForm | undefined {
  try {
    return shiftFormOf(src, u, owner, salt);
  } catch {
    return undefined;
  }
}

function shiftFormOf(src: DebugSections, u: Unit, owner: boolean, salt: Uint8Array): ShiftForm | undefined {
  const le = src.littleEndian;
  if (u.version !== 5 || u.unitType !== 1 || u.enc.addrSize !== 8 || u.section !== '.debug_info') return undefined;
  const abbrev = src.section('.debug_abbrev');
  if (!abbrev) return undefined;
  const h = createHash('sha256').update('shift\0').update(salt);
  const n = new Normaliser();
  const r = u.reader(u.dieStart);
  const ib = r.buf;
  // The places of the fields whose values are hashed normalised ([lo, hi) pairs): blanked in a copy at the end.
  const blanks: number[] = [];
  const blank = (lo: number, hi: number) => blanks.push(lo - u.offset, hi - u.offset);
  // The header's abbreviation offset: where the table is, not what it says (its bytes are hashed below).
  const abbrevField = u.offset + (u.enc.is64 ? 12 : 4) + 2 + 2;
  blank(abbrevField, abbrevField + (u.enc.is64 ? 8 : 4));
  const offSize = u.enc.is64 ? 8 : 4;
  const listBases = LIST_SECTIONS.map(() => -1);
  const listStarts = LIST_SECTIONS.map(() => new Set<number>());
  const listOffset = (s: number, v: number) => {
    if (!(v < ADDRESS_LIMIT)) no();
    if (listBases[s] < 0) listBases[s] = v;
    listStarts[s].add(v);
    n.values.push(v - listBases[s]);
  };
  let first = true;
  while (r.pos < u.end) {
    const a = nextAbbrev(u, r);
    if (a === null) continue;
    if (!a) return undefined;
    const isRoot = first;
    first = false;
    // The root's DW_AT_low_pc is the lists' base address (u.lowPc): it must be an address field, not 0 (below).
    if (isRoot && a.forms[a.attrs.indexOf(AT.low_pc)] !== FORM.addr) return undefined;
    const plan = planOf(a);
    if (plan === BAD) return undefined;
    if (plan === PLAIN) {
      skipAttrs(u, r, a);
      continue;
    }
    for (let i = 0; i < a.forms.length; i++) {
      const f = a.forms[i];
      const at = a.attrs[i];
      const pos = r.pos;
      if (isCallValue(a, i)) {
        // Its length is hashed, its bytes are not.
        const len = r.uleb();
        const at0 = r.pos;
        r.skip(len);
        blank(at0, at0 + len);
        continue;
      }
      if (f === FORM.addr) {
        r.skip(8);
        n.address(ib, pos, le);
        blank(pos, pos + 8);
        continue;
      }
      if (at === AT.stmt_list && isRoot) {
        // Where the line program is: its bytes are hashed below.
        if (f !== FORM.sec_offset) return undefined;
        r.skip(offSize);
        blank(pos, pos + offSize);
        continue;
      }
      if (
        at === AT.ranges ||
        at === DW_AT_GNU_locviews ||
        ((at === AT.location || at === AT.frame_base) && (f === FORM.data4 || f === FORM.data8))
      ) {
        // lists.ts follows these whatever their form: only an offset of the section's size is taken.
        if (f !== FORM.sec_offset) return undefined;
      }
      if (f === FORM.sec_offset && (at === AT.ranges || at === DW_AT_GNU_locviews || LOC_ATTRS.has(at))) {
        listOffset(at === AT.ranges ? RNGLISTS : LOCLISTS, readValue(u, r, f, 0));
        blank(pos, pos + offSize);
        continue;
      }
      if (f !== FORM.sec_offset && !RAW_FORMS.has(f)) return undefined;
      if (at === AT.high_pc || at === AT.entry_pc) {
        // A constant added to an address: its largest value bounds the addresses made.
        if (!isConstantForm(f) || f === FORM.sdata || f === FORM.implicit_const) return undefined;
        n.offset(readValue(u, r, f, 0));
        continue;
      }
      skipForm(u, r, f, 0);
    }
    if (isRoot && n.base < 1) return undefined;
  }
  if (n.base < 0) return undefined;
  const bytes = Uint8Array.from(ib.subarray(u.offset, u.end));
  for (let i = 0; i < blanks.length; i += 2) bytes.fill(0, blanks[i], blanks[i + 1]);
  hashBytes(h, bytes);
  hashBytes(h, abbrev.subarray(u.abbrevOffset, u.abbrevs.end));
  if (u.stmtList >= 0) lineProgram(h, u, n);
  h.update(owner ? 'owner' : 'shares');
  n.digest(h);
  const bounds: Bounds = { low: n.low, maxRel: n.maxRel, maxOffset: n.maxOffset };
  if (!inWindow(n.base, bounds)) return undefined;
  return { key: h.digest('hex').slice(0, 48), base: n.base, listBases, listStarts, bounds };
}

/**
 * Whether every address a unit of base `base` and these bounds (its fields', its list reads') can make — a field,
 * or a field plus an offset — lies in [1, 2^52).
 */
export function inWindow(base: number, a: Bounds, b: Bounds = a): boolean {
  const low = Math.min(a.low, b.low);
  const top = Math.max(a.maxRel, b.maxRel) + Math.max(a.maxOffset, b.maxOffset);
  return base + low >= 1 && base + top < ADDRESS_LIMIT;
}

/** The line program's header as it is, its program with every DW_LNE_set_address relative to B (line.ts' decoding). */
function lineProgram(h: Hash, u: Unit, n: Normaliser): void {
  const { r, end, progStart, minInst, maxOps, lineRange, opcodeBase, stdLens, addrSize } = readLineHeader(u, u.stmtList);
  if (maxOps !== 1 || addrSize !== 8) no();
  const buf = r.buf;
  hashBytes(h, buf.subarray(u.stmtList, progStart));
  const prog = Uint8Array.from(buf.subarray(progStart, end));
  r.seek(progStart);
  // Rows before a DW_LNE_set_address count from address 0, which does not move.
  let placed = false;
  let off = 0;
  const row = () => {
    if (!placed) no();
    n.offset(off);
  };
  const step = (q: number) => {
    off += minInst * q;
    if (!(off < ADDRESS_LIMIT)) no();
  };
  while (r.pos < end) {
    const op = buf[r.pos++];
    if (op >= opcodeBase) {
      step(((op - opcodeBase) / lineRange) | 0);
      row();
    } else if (op === 0) {
      const len = r.uleb();
      const next = r.pos + len;
      if (len === 0 || next > end) no();
      const sub = r.u8();
      if (sub === LNE.end_sequence) {
        row();
        placed = false;
        off = 0;
      } else if (sub === LNE.set_address) {
        if (len - 1 !== 8) no();
        const at = r.pos;
        n.address(buf, at, r.le);
        prog.fill(0, at - progStart, at - progStart + 8);
        placed = true;
        off = 0;
      } else if (sub === LNE.define_file || sub === LNE.set_discriminator) {
        // Decoded by line.ts, no address: as they are.
      }
      r.seek(next);
    } else {
      switch (op) {
        case LNS.copy:
          row();
          break;
        case LNS.advance_pc:
          step(r.uleb());
          break;
        case LNS.advance_line:
          r.sleb();
          break;
        case LNS.set_file:
        case LNS.set_column:
        case LNS.set_isa:
          r.uleb();
          break;
        case LNS.negate_stmt:
        case LNS.set_basic_block:
        case LNS.set_prologue_end:
        case LNS.set_epilogue_begin:
          break;
        case LNS.const_add_pc:
          step(Math.floor((255 - opcodeBase) / lineRange));
          break;
        case LNS.fixed_advance_pc:
          off += r.u16();
          if (!(off < ADDRESS_LIMIT)) no();
          break;
        default:
          for (let i = 0; i < stdLens[op]; i++) r.uleb();
      }
    }
  }
  hashBytes(h, prog);
}

/** A stored unit's list reads, each relative to its section's list base: [kind, section, start − base, length]. */
export type RelativeReads = number[];

/**
 * The shift form of the list reads `log` (listReadLog: [kind, section, start, end] quadruples, absolute) of a unit
 * whose shift form is `sf`: their digest and the bounds of the addresses in them, with the reads made relative;
 * undefined when a read is of a kind, or starts at a place, a shifted reuse cannot follow.
 */
export function listsShift(
  src: DebugSections,
  sf: ShiftForm,
  log: readonly number[],
): { reads: RelativeReads; digest: string; bounds: Bounds } | undefined {
  const reads: number[] = [];
  for (let i = 0; i + 3 < log.length; i += 4) {
    const [kind, s, start, end] = [log[i], log[i + 1], log[i + 2], log[i + 3]];
    if (!sf.listStarts[s]?.has(start)) return undefined;
    // A view list is read pair by pair up to the list's count or the section's end: one that met the end may
    // read more where the section goes on.
    if (kind === ListReadKind.Views && !(end < (src.section(LIST_SECTIONS[s])?.length ?? 0))) return undefined;
    reads.push(kind, s, start - sf.listBases[s], end - start);
  }
  const d = readsShift(src, sf, reads);
  return d && { reads, ...d };
}

/** The digest of relative `reads` as found in `src` for a unit of shift form `sf`; undefined when they cannot be. */
export function readsShift(src: DebugSections, sf: ShiftForm, reads: RelativeReads): { digest: string; bounds: Bounds } | undefined {
  const h = createHash('sha256');
  const n = new Normaliser();
  n.base = sf.base;
  const le = src.littleEndian;
  try {
    for (let i = 0; i + 3 < reads.length; i += 4) {
      const [kind, s, rel, len] = [reads[i], reads[i + 1], reads[i + 2], reads[i + 3]];
      const b = src.section(LIST_SECTIONS[s]);
      if (!b || sf.listBases[s] < 0) return undefined;
      const start = sf.listBases[s] + rel;
      if (!(start >= 0 && len >= 0 && start + len <= b.length)) return undefined;
      const bytes = Uint8Array.from(b.subarray(start, start + len));
      const used = decodeList(kind, bytes, le, n);
      if (used !== len) return undefined;
      h.update(`${kind}:${s}:${rel}:${len}\0`);
      h.update(bytes);
    }
  } catch {
    return undefined;
  }
  n.digest(h);
  return { digest: h.digest('hex'), bounds: { low: n.low, maxRel: n.maxRel, maxOffset: n.maxOffset } };
}

/**
 * Decodes one recorded read (as lists.ts did: a DWARF 5 range or location list to its end, or a view list's
 * ULEB128 pairs) with its addresses blanked into `n`; the number of bytes it takes.
 */
function decodeList(kind: number, b: Uint8Array, le: boolean, n: Normaliser): number {
  let at = 0;
  // A ULEB128 at or above 2^52 makes the unit ineligible (Normaliser.offset for those added to addresses).
  const uleb = (): number => {
    let v = 0;
    let scale = 1;
    for (;;) {
      if (at >= b.length) no();
      const x = b[at++];
      v += (x & 0x7f) * scale;
      scale *= 128;
      if (!(x & 0x80)) return v < 2 ** 52 ? v : no();
      if (scale > 2 ** 56) no();
    }
  };
  const addr = () => {
    n.address(b, at, le);
    b.fill(0, at, at + 8);
    at += 8;
  };
  const expr = () => {
    const len = uleb();
    if (at + len > b.length) no();
    at += len;
  };
  if (kind === ListReadKind.Views) {
    // Pairs of view numbers, as many as the list had entries: no addresses.
    while (at < b.length) uleb();
    return at;
  }
  if (kind !== ListReadKind.Rnglist && kind !== ListReadKind.Loclist) no();
  const loc = kind === ListReadKind.Loclist;
  for (;;) {
    if (at >= b.length) no();
    const k = b[at++];
    if (loc) {
      switch (k) {
        case LLE.end_of_list:
          return at;
        case LLE.offset_pair:
          n.offset(uleb());
          n.offset(uleb());
          expr();
          break;
        case LLE.default_location:
          expr();
          break;
        case LLE.base_address:
          addr();
          break;
        case LLE.start_end:
          addr();
          addr();
          expr();
          break;
        case LLE.start_length:
          addr();
          n.offset(uleb());
          expr();
          break;
        case LLE.GNU_view_pair:
          uleb();
          uleb();
          break;
        default:
          return no();
      }
    } else {
      switch (k) {
        case RLE.end_of_list:
          return at;
        case RLE.offset_pair:
          n.offset(uleb());
          n.offset(uleb());
          break;
        case RLE.base_address:
          addr();
          break;
        case RLE.start_end:
          addr();
          addr();
          break;
        case RLE.start_length:
          addr();
          n.offset(uleb());
          break;
        default:
          return no();
      }
    }
  }
}

/** Whether a result may be stored for a shifted reuse: no text in it could hold an address. */
export function shiftable(s: DwarfSlice): boolean {
  const hex = (t: string | undefined) => t !== undefined && t.includes('0x');
  for (const f of s.functions) {
    if (hex(f.reason)) return false;
    if (f.params.some((p) => hex(p.location) || hex(p.type))) return false;
  }
  return true;
}

/** `s` with every address in it moved by `d` (in place: a value just read from the cache). */
export function shifted(s: DwarfSlice, d: number): DwarfSlice {
  if (d === 0) return s;
  const big = BigInt(d);
  const move = (f: IndexedFunction): IndexedFunction => {
    if (f.address !== undefined) f.address += big;
    for (const x of f.sites) {
      x.address += big;
      if (x.ranges) x.ranges = x.ranges.map((a) => a + d);
    }
    return f;
  };
  s.functions.forEach(move);
  s.code = s.code.map((a) => a + d);
  for (const t of s.tables) for (let i = 0; i < t.address.length; i++) t.address[i] += d;
  return s;
}

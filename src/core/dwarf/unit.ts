// Units and DIEs. A Unit holds its header, abbreviations and the bases its root DIE declares
// (str_offsets_base, addr_base, rnglists_base, loclists_base, low_pc, comp_dir), resolved once. DIEs are
// decoded only on request: `skipDie` moves past one without allocating, `readDie` materialises the raw
// attribute values (numbers: constants, addresses, absolute section offsets, or indexes still to resolve).
// A unit's abbreviation table is parsed when a DIE below the root is first read (the root's one abbreviation is
// looked up alone), and where the file is read range by range (SectionSource.unread) a unit's bytes are read
// when a reader over them is first made: listing every unit reads their headers and root DIEs only.
// Tests: test/unit/core/dwarf/unit.test.ts, test/unit/core/dwarf/unreadInfo.test.ts
import { abbrevTable, findAbbrev, fixedFormSize, type Abbrev, type AbbrevTable, type Encoding } from './abbrev';
import * as K from './constants';
import { type ByteReader, decodeString } from '../binary/byteReader';
import { DwarfFormatError, dwarfReader, readAddress, stringAt } from './format';
import type { Sections } from './sections';

// Bound once: per-access getters of a transpiled module namespace would sit on the hot path.
const { AT, FORM, TAG, UT } = K;

export class Die {
  constructor(
    readonly unit: Unit,
    /** Section offset of the DIE. */
    readonly offset: number,
    readonly abbrev: Abbrev,
    readonly forms: readonly number[],
    /** Raw values per attribute (see readDie). */
    readonly vals: number[],
    /** For block/exprloc forms: length in bytes (vals holds the data's section offset). */
    readonly lens: number[] | undefined,
    /** Section offset just past the attributes (first child, if any). */
    readonly end: number,
  ) {}
  get tag(): number {
    return this.abbrev.tag;
  }
  index(at: number): number {
    return this.abbrev.attrs.indexOf(at);
  }
  has(at: number): boolean {
    return this.abbrev.attrs.indexOf(at) >= 0;
  }
}

export interface Block {
  readonly buf: Uint8Array;
  readonly start: number;
  readonly len: number;
}

/** The bytes read for a root DIE at first: it is almost always far smaller (its strings live in .debug_str). */
const ROOT_WINDOW = 2048;

export class Unit {
  /** Where the first DIE starts. */
  readonly dieStart: number;
  private table: AbbrevTable | undefined;
  /** Whether this unit's bytes were read (fill), where .debug_info came unread. */
  private filled = false;
  strOffsetsBase = 0;
  addrBase = 0;
  rnglistsBase = 0;
  loclistsBase = 0;
  /** Base address for range and location lists (the CU's low_pc). */
  lowPc = 0;
  compDir = '';
  name = '';
  language = 0;
  stmtList = -1;
  root!: Die;
  /**
   * When set (an empty array), every range and location list read for this unit is kept here (lists.ts,
   * listExtents): the unit cache keys the unit's result by those bytes. `listReadFailed`: one of them failed.
   */
  listReads: Array<{ section: number; start: number; reader: ByteReader; kind: number }> | undefined = undefined;
  listReadFailed = false;

  constructor(
    readonly dw: Sections,
    readonly section: string,
    readonly offset: number,
    readonly end: number,
    readonly enc: Encoding,
    readonly unitType: number,
    /** Where the unit's abbreviation table starts in .debug_abbrev. */
    readonly abbrevOffset: number,
    headerEnd: number,
    readonly typeSignature?: bigint,
    readonly typeOffset?: number,
  ) {
    this.dieStart = headerEnd;
    const ab = dw.get('.debug_abbrev');
    if (!ab) throw new DwarfFormatError('.debug_abbrev', 0, 'section is missing');
    if (abbrevOffset >= ab.length) throw new DwarfFormatError(section, offset, 'abbreviation offset out of range');
  }

  /** The unit's abbreviation table (parsed when first asked for, shared by the units of this reader that point at it). */
  get abbrevs(): AbbrevTable {
    return (this.table ??= abbrevTable(this.dw.get('.debug_abbrev')!, this.abbrevOffset, this.enc, this.dw.le, this.dw));
  }

  get version(): number {
    return this.enc.version;
  }

  reader(at: number): ByteReader {
    if (!this.filled) {
      this.dw.fill(this.section, this.offset, this.end);
      this.filled = true;
    }
    const r = dwarfReader(this.dw.get(this.section)!, this.section, this.dw.le, 0, this.end);
    r.seek(at);
    return r;
  }

  /** Reads the root DIE and resolves the unit bases, then the names that may depend on them. */
  init(): void {
    this.root = this.readRoot();
    const root = this.root;
    // Bases first: a DW_FORM_strx name may precede DW_AT_str_offsets_base in the same DIE.
    const hdr = this.enc.is64 ? 16 : 8;
    this.strOffsetsBase = num(root, AT.str_offsets_base) ?? hdr;
    this.addrBase = num(root, AT.addr_base) ?? num(root, AT.GNU_addr_base) ?? hdr;
    this.rnglistsBase = num(root, AT.rnglists_base) ?? num(root, AT.GNU_ranges_base) ?? 0;
    this.loclistsBase = num(root, AT.loclists_base) ?? 0;
    if (root.has(AT.low_pc)) this.lowPc = this.addr(root, AT.low_pc) ?? 0;
    this.compDir = this.str(root, AT.comp_dir) ?? '';
    this.name = this.str(root, AT.name) ?? '';
    this.language = num(root, AT.language) ?? 0;
    this.stmtList = num(root, AT.stmt_list) ?? -1;
  }

  /** DW_AT_producer of the root DIE (decoded when asked for: it is long, and listing the units needs it not). */
  get producer(): string {
    return this.str(this.root, AT.producer) ?? '';
  }

  /**
   * The root DIE, by its abbreviation alone. Where .debug_info came unread only its first bytes are read for it,
   * and the whole unit when it does not fit in them (the failed read is made again over the unit: a real
   * format error is thrown from there).
   */
  private readRoot(): Die {
    const windowEnd = Math.min(this.end, this.dieStart + ROOT_WINDOW);
    if (!this.filled && windowEnd < this.end && this.dw.unread(this.section)) {
      this.dw.fill(this.section, this.offset, windowEnd);
      try {
        return this.rootIn(windowEnd);
      } catch (e) {
        if (!(e instanceof DwarfFormatError)) throw e;
      }
    }
    this.reader(this.dieStart); // reads the unit
    return this.rootIn(this.end);
  }

  private rootIn(end: number): Die {
    const r = dwarfReader(this.dw.get(this.section)!, this.section, this.dw.le, 0, end);
    r.seek(this.dieStart);
    const code = r.uleb();
    if (code === 0) throw new DwarfFormatError(this.section, this.dieStart, 'unit has no root DIE');
    const a = this.table ? this.table.get(code) : findAbbrev(this.dw.get('.debug_abbrev')!, this.abbrevOffset, code, this.enc, this.dw.le);
    if (!a) return r.fail(`unknown abbreviation code ${code}`, this.dieStart);
    return readAttrs(this, r, a, this.dieStart);
  }

  /** A DIE of this unit by section offset. */
  dieAt(offset: number): Die {
    if (offset < this.dieStart || offset >= this.end) throw new DwarfFormatError(this.section, offset, 'DIE reference outside its unit');
    const d = readDie(this, this.reader(offset));
    if (!d) throw new DwarfFormatError(this.section, offset, 'reference to a null DIE');
    return d;
  }

  str(d: Die, at: number): string | undefined {
    const i = d.index(at);
    return i < 0 ? undefined : this.strOf(d.forms[i], d.vals[i]);
  }

  /** The string a raw (form, value) pair denotes, or undefined for non-string forms. */
  strOf(form: number, v: number): string | undefined {
    switch (form) {
      case FORM.string: {
        const b = this.dw.get(this.section)!;
        return decodeString(b, v, b.indexOf(0, v));
      }
      case FORM.strp:
        return stringAt(this.dw.get('.debug_str'), '.debug_str', v);
      case FORM.line_strp:
        return stringAt(this.dw.get('.debug_line_str'), '.debug_line_str', v);
      case FORM.strx:
      case FORM.strx1:
      case FORM.strx2:
      case FORM.strx3:
      case FORM.strx4:
      case FORM.GNU_str_index:
        return this.strx(v);
      default:
        return undefined; // strp_sup/GNU_strp_alt live in a supplementary file we do not load
    }
  }

  strx(index: number): string {
    const sz = this.enc.is64 ? 8 : 4;
    const r = this.dw.reader('.debug_str_offsets', 0);
    r.seek(Math.min(this.strOffsetsBase + index * sz, r.end));
    return stringAt(this.dw.get('.debug_str'), '.debug_str', r.uN(sz));
  }

  addrx(index: number): number {
    const r = this.dw.reader('.debug_addr', 0);
    r.seek(Math.min(this.addrBase + index * this.enc.addrSize, r.end));
    return readAddress(r, this.enc.addrSize);
  }

  /** An address-class attribute (addr or addrx*). */
  addr(d: Die, at: number): number | undefined {
    const i = d.index(at);
    if (i < 0) return undefined;
    const f = d.forms[i];
    if (f === FORM.addr) return d.vals[i];
    if (isAddrx(f)) return this.addrx(d.vals[i]);
    return undefined;
  }

  /** A reference attribute as an absolute .debug_info (or .debug_types) offset. */
  ref(d: Die, at: number): number | undefined {
    const i = d.index(at);
    if (i < 0) return undefined;
    const f = d.forms[i];
    if (f === FORM.ref_sig8) {
      const sig = this.reader(d.vals[i]).u64big();
      return this.dw.typeBySignature.get(sig);
    }
    if (isRef(f)) return d.vals[i];
    return undefined;
  }

  flag(d: Die, at: number): boolean {
    const i = d.index(at);
    return i >= 0 && (d.forms[i] === FORM.flag_present || d.vals[i] !== 0);
  }

  block(d: Die, at: number): Block | undefined {
    const i = d.index(at);
    if (i < 0 || !d.lens || !isBlock(d.forms[i])) return undefined;
    return { buf: this.dw.get(this.section)!, start: d.vals[i], len: d.lens[i] };
  }
}

/** Numeric (constant, offset or flag) attribute value, or undefined. */
export function num(d: Die, at: number): number | undefined {
  const i = d.index(at);
  if (i < 0) return undefined;
  const f = d.forms[i];
  return isBlock(f) || f === FORM.string ? undefined : d.vals[i];
}

export function isBlock(f: number): boolean {
  return f === FORM.block || f === FORM.block1 || f === FORM.block2 || f === FORM.block4 || f === FORM.exprloc;
}
export function isAddrx(f: number): boolean {
  return f === FORM.addrx || (f >= FORM.addrx1 && f <= FORM.addrx4) || f === FORM.GNU_addr_index;
}
export function isRef(f: number): boolean {
  return f >= FORM.ref_addr && f <= FORM.ref_udata;
}
export function isConstantForm(f: number): boolean {
  return (
    f === FORM.data1 ||
    f === FORM.data2 ||
    f === FORM.data4 ||
    f === FORM.data8 ||
    f === FORM.sdata ||
    f === FORM.udata ||
    f === FORM.implicit_const
  );
}

/**
 * Reads the abbreviation code at the cursor; returns undefined for a null entry (end of siblings).
 */
export function nextAbbrev(u: Unit, r: ByteReader): Abbrev | undefined | null {
  const at = r.pos;
  const code = r.uleb();
  if (code === 0) return null;
  const a = u.abbrevs.get(code);
  if (!a) r.fail(`unknown abbreviation code ${code}`, at);
  return a;
}

/** Moves the cursor past the attributes of a DIE whose abbreviation was just read. */
export function skipAttrs(u: Unit, r: ByteReader, a: Abbrev): void {
  if (a.fixedSize >= 0) {
    r.skip(a.fixedSize);
    return;
  }
  const forms = a.forms;
  for (let i = 0; i < forms.length; i++) skipForm(u, r, forms[i], 0);
}

/**
 * Where the value of attribute `at` of the unit's root DIE lies in the unit's section ([start, end)), when it is
 * there with a fixed-size form (no DW_FORM_indirect before it); undefined otherwise.
 */
export function rootAttrBytes(u: Unit, at: number): [number, number] | undefined {
  const r = u.reader(u.dieStart);
  const a = nextAbbrev(u, r);
  if (!a) return undefined;
  for (let i = 0; i < a.forms.length; i++) {
    const f = a.forms[i];
    if (f === FORM.indirect) return undefined;
    if (a.attrs[i] === at) {
      const size = fixedFormSize(f, u.enc);
      return size > 0 ? [r.pos, r.pos + size] : undefined;
    }
    skipForm(u, r, f, 0);
  }
  return undefined;
}

export function skipForm(u: Unit, r: ByteReader, form: number, depth: number): void {
  switch (form) {
    case FORM.string:
      r.skipCstr();
      return;
    case FORM.udata:
    case FORM.sdata:
    case FORM.ref_udata:
    case FORM.strx:
    case FORM.addrx:
    case FORM.loclistx:
    case FORM.rnglistx:
    case FORM.GNU_addr_index:
    case FORM.GNU_str_index:
      r.skipLeb();
      return;
    case FORM.block1:
      r.skip(r.u8());
      return;
    case FORM.block2:
      r.skip(r.u16());
      return;
    case FORM.block4:
      r.skip(r.u32());
      return;
    case FORM.block:
    case FORM.exprloc:
      r.skip(r.uleb());
      return;
    case FORM.indirect:
      if (depth > 4) r.fail('DW_FORM_indirect chain');
      skipForm(u, r, r.uleb(), depth + 1);
      return;
    default: {
      const sz = fixedFormSize(form, u.enc);
      if (sz < 0) r.fail(`unknown attribute form 0x${form.toString(16)}`);
      r.skip(sz);
    }
  }
}

/**
 * Consumes a DIE's attributes and returns one reference attribute as an absolute offset, without
 * materialising the DIE (the index pass only needs DW_AT_abstract_origin of inlined copies).
 */
export function scanRef(u: Unit, r: ByteReader, a: Abbrev, at: number): number | undefined {
  const idx = a.attrs.indexOf(at);
  const f = idx < 0 ? -1 : a.forms[idx];
  if (
    idx < 0 ||
    !(f === FORM.ref1 || f === FORM.ref2 || f === FORM.ref4 || f === FORM.ref8 || f === FORM.ref_udata || f === FORM.ref_addr)
  ) {
    skipAttrs(u, r, a);
    return undefined;
  }
  let v: number | undefined;
  for (let i = 0; i < a.forms.length; i++) {
    if (i !== idx) {
      skipForm(u, r, a.forms[i], 0);
      continue;
    }
    switch (f) {
      case FORM.ref1:
        v = u.offset + r.u8();
        break;
      case FORM.ref2:
        v = u.offset + r.u16();
        break;
      case FORM.ref4:
        v = u.offset + r.u32();
        break;
      case FORM.ref8:
        v = u.offset + r.u64();
        break;
      case FORM.ref_udata:
        v = u.offset + r.uleb();
        break;
      default:
        v = u.enc.version <= 2 ? r.uN(u.enc.addrSize) : r.offset(u.enc.is64);
    }
  }
  return v;
}

/** Skips a DIE's whole subtree (the abbreviation and attributes already consumed, cursor at children). */
export function skipChildren(u: Unit, r: ByteReader): void {
  let depth = 1;
  while (depth > 0) {
    const a = nextAbbrev(u, r);
    if (a === null) {
      depth--;
      continue;
    }
    skipAttrs(u, r, a!);
    if (a!.hasChildren) depth++;
  }
}

/** Reads a whole DIE at the cursor (abbrev code included); undefined for a null entry. */
export function readDie(u: Unit, r: ByteReader): Die | undefined {
  const offset = r.pos;
  const a = nextAbbrev(u, r);
  if (a === null) return undefined;
  return readAttrs(u, r, a!, offset);
}

/** Materialises the attributes of a DIE whose abbreviation was just read. */
export function readAttrs(u: Unit, r: ByteReader, a: Abbrev, offset: number): Die {
  const n = a.forms.length;
  let forms = a.forms;
  const vals = new Array<number>(n);
  let lens: number[] | undefined;
  for (let i = 0; i < n; i++) {
    let f = forms[i];
    if (f === FORM.indirect) {
      f = resolveIndirect(r);
      if (forms === a.forms) forms = a.forms.slice();
      (forms as number[])[i] = f;
    }
    vals[i] = readValue(u, r, f, a.implicit[i]);
    if (blockLen >= 0) (lens ??= new Array<number>(n))[i] = blockLen;
  }
  return new Die(u, offset, a, forms, vals, lens, r.pos);
}

function resolveIndirect(r: ByteReader): number {
  let f = FORM.indirect as number;
  for (let depth = 0; f === FORM.indirect; depth++) {
    if (depth > 4) r.fail('DW_FORM_indirect chain');
    f = r.uleb();
  }
  return f;
}

// Length of the block readValue just read (-1 when the form was not a block); a side channel so reading a
// value allocates nothing.
let blockLen = -1;

/**
 * Reads one attribute value: constants, addresses, absolute section offsets for references, indexes for the
 * *x forms, the data's section offset for blocks, strings and data16.
 */
export function readValue(u: Unit, r: ByteReader, f: number, implicit: number): number {
  blockLen = -1;
  switch (f) {
    case FORM.addr:
      return readAddress(r, u.enc.addrSize);
    case FORM.data1:
    case FORM.flag:
    case FORM.strx1:
    case FORM.addrx1:
      return r.u8();
    case FORM.data2:
    case FORM.strx2:
    case FORM.addrx2:
      return r.u16();
    case FORM.strx3:
    case FORM.addrx3:
      return r.u24();
    case FORM.data4:
    case FORM.strx4:
    case FORM.addrx4:
    case FORM.ref_sup4:
      return r.u32();
    case FORM.data8:
    case FORM.ref_sup8:
      return r.u64();
    case FORM.ref1:
      return u.offset + r.u8();
    case FORM.ref2:
      return u.offset + r.u16();
    case FORM.ref4:
      return u.offset + r.u32();
    case FORM.ref8:
      return u.offset + r.u64();
    case FORM.ref_udata:
      return u.offset + r.uleb();
    case FORM.ref_addr:
      return u.enc.version <= 2 ? r.uN(u.enc.addrSize) : r.offset(u.enc.is64);
    case FORM.ref_sig8: {
      const v = r.pos;
      r.skip(8);
      return v;
    }
    case FORM.data16: {
      const v = r.pos;
      r.skip(16);
      return v;
    }
    case FORM.sdata:
      return r.sleb();
    case FORM.udata:
    case FORM.strx:
    case FORM.addrx:
    case FORM.loclistx:
    case FORM.rnglistx:
    case FORM.GNU_addr_index:
    case FORM.GNU_str_index:
      return r.uleb();
    case FORM.strp:
    case FORM.line_strp:
    case FORM.sec_offset:
    case FORM.strp_sup:
    case FORM.GNU_ref_alt:
    case FORM.GNU_strp_alt:
      return r.offset(u.enc.is64);
    case FORM.string: {
      const v = r.pos;
      r.skipCstr();
      return v;
    }
    case FORM.flag_present:
      return 1;
    case FORM.implicit_const:
      return implicit;
    case FORM.block1:
    case FORM.block2:
    case FORM.block4:
    case FORM.block:
    case FORM.exprloc: {
      const len = f === FORM.block1 ? r.u8() : f === FORM.block2 ? r.u16() : f === FORM.block4 ? r.u32() : r.uleb();
      const v = r.pos;
      r.skip(len);
      blockLen = len;
      return v;
    }
    default:
      return r.fail(`unknown attribute form 0x${f.toString(16)}`);
  }
}

/**
 * Consumes a DIE's attributes, keeping only those listed in `ats`: out[k] gets the raw value of ats[k] (as
 * readDie would store it) and forms[k] its form, or -1 when absent. Nothing is allocated.
 */
export function scanAttrs(u: Unit, r: ByteReader, a: Abbrev, ats: readonly number[], out: number[], forms: number[]): void {
  for (let k = 0; k < ats.length; k++) forms[k] = -1;
  const n = a.forms.length;
  for (let i = 0; i < n; i++) {
    const k = ats.indexOf(a.attrs[i]);
    let f = a.forms[i];
    if (k < 0) {
      skipForm(u, r, f, 0);
      continue;
    }
    if (f === FORM.indirect) f = resolveIndirect(r);
    out[k] = readValue(u, r, f, a.implicit[i]);
    forms[k] = f;
  }
}

export function isTypeUnit(u: Unit): boolean {
  return u.unitType === UT.type || u.unitType === UT.split_type || u.root?.tag === TAG.type_unit;
}

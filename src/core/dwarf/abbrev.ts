// Abbreviation tables (.debug_abbrev), parsed once per offset and shared by every unit that points there.
// Each abbreviation also gets a precomputed byte size when all its forms are fixed-size for the unit's
// encoding: skipping a DIE nobody asked about is then a single cursor bump, the hot path of the index pass.
// Tests: test/unit/core/dwarf/unit.test.ts, test/unit/core/dwarf/functions.test.ts, test/unit/core/dwarf/hostileTypes.test.ts,
//   test/unit/core/dwarf/unreadInfo.test.ts
import * as K from './constants';
import type { ByteReader } from '../binary/byteReader';
import { DwarfFormatError, dwarfReader } from './format';

// Bound once: per-access getters of a transpiled module namespace would sit on the hot path.
const { AT, FORM } = K;

export interface Encoding {
  readonly version: number;
  readonly is64: boolean;
  readonly addrSize: number;
}

export interface Abbrev {
  readonly code: number;
  readonly tag: number;
  readonly hasChildren: boolean;
  readonly attrs: readonly number[];
  readonly forms: readonly number[];
  /** DW_FORM_implicit_const values, by attribute index (0 elsewhere). */
  readonly implicit: readonly number[];
  /** Total size of all attributes in bytes when every form is fixed-size, else -1. */
  fixedSize: number;
  /** Index of DW_AT_sibling among attrs, or -1. */
  readonly siblingIndex: number;
}

export class AbbrevTable {
  private readonly dense: (Abbrev | undefined)[] = [];
  private readonly sparse = new Map<number, Abbrev>();
  /** Where the table ends in .debug_abbrev (just past its terminating 0). */
  end = 0;

  add(a: Abbrev): void {
    if (a.code < 100000) this.dense[a.code] = a;
    else this.sparse.set(a.code, a);
  }

  get(code: number): Abbrev | undefined {
    return code < 100000 ? this.dense[code] : this.sparse.get(code);
  }

  *all(): Iterable<Abbrev> {
    for (const a of this.dense) if (a) yield a;
    yield* this.sparse.values();
  }
}

/** Size of a form's value in bytes when it does not depend on the data, else -1. */
export function fixedFormSize(form: number, enc: Encoding): number {
  const off = enc.is64 ? 8 : 4;
  switch (form) {
    case FORM.addr:
      return enc.addrSize;
    case FORM.data1:
    case FORM.ref1:
    case FORM.flag:
    case FORM.strx1:
    case FORM.addrx1:
      return 1;
    case FORM.data2:
    case FORM.ref2:
    case FORM.strx2:
    case FORM.addrx2:
      return 2;
    case FORM.strx3:
    case FORM.addrx3:
      return 3;
    case FORM.data4:
    case FORM.ref4:
    case FORM.ref_sup4:
    case FORM.strx4:
    case FORM.addrx4:
      return 4;
    case FORM.data8:
    case FORM.ref8:
    case FORM.ref_sig8:
    case FORM.ref_sup8:
      return 8;
    case FORM.data16:
      return 16;
    case FORM.strp:
    case FORM.line_strp:
    case FORM.sec_offset:
    case FORM.strp_sup:
    case FORM.GNU_ref_alt:
    case FORM.GNU_strp_alt:
      return off;
    // DWARF 2 defined ref_addr as address-sized; DWARF 3 changed it to offset-sized.
    case FORM.ref_addr:
      return enc.version <= 2 ? enc.addrSize : off;
    case FORM.flag_present:
    case FORM.implicit_const:
      return 0;
    default:
      return -1;
  }
}

const cache = new WeakMap<object, Map<string, AbbrevTable>>();

/**
 * The abbreviation table at `offset` of .debug_abbrev, with fixed sizes computed for `enc`, cached for as long as
 * `owner` lives (by default the section: a reader made per batch of units passes itself, so the tables its units
 * used go with it).
 */
export function abbrevTable(section: Uint8Array, offset: number, enc: Encoding, le: boolean, owner: object = section): AbbrevTable {
  let perSection = cache.get(owner);
  if (!perSection) cache.set(owner, (perSection = new Map()));
  const key = `${offset}:${enc.version <= 2 ? 2 : 3}:${enc.is64 ? 8 : 4}:${enc.addrSize}`;
  let t = perSection.get(key);
  if (!t) {
    t = parseAbbrevs(section, offset, enc, le);
    perSection.set(key, t);
  }
  return t;
}

function parseAbbrevs(section: Uint8Array, offset: number, enc: Encoding, le: boolean): AbbrevTable {
  const r = dwarfReader(section, '.debug_abbrev', le);
  r.seek(offset);
  const t = new AbbrevTable();
  for (;;) {
    const code = r.uleb();
    if (code === 0) {
      t.end = r.pos;
      break;
    }
    const a = parseEntry(r, code, enc);
    if (t.get(code)) throw new DwarfFormatError('.debug_abbrev', r.pos, `duplicate abbreviation code ${code}`);
    t.add(a);
  }
  return t;
}

/** One abbreviation, its code just read. */
function parseEntry(r: ByteReader, code: number, enc: Encoding): Abbrev {
  const tag = r.uleb();
  const hasChildren = r.u8() !== 0;
  const attrs: number[] = [],
    forms: number[] = [],
    implicit: number[] = [];
  let fixed = 0,
    sibling = -1;
  for (;;) {
    const at = r.uleb(),
      form = r.uleb();
    if (at === 0 && form === 0) break;
    if (attrs.length > MAX_ATTRS) r.fail('abbreviation with too many attributes');
    if (at === AT.sibling) sibling = attrs.length;
    attrs.push(at);
    forms.push(form);
    implicit.push(form === FORM.implicit_const ? r.sleb() : 0);
    const sz = fixedFormSize(form, enc);
    fixed = sz < 0 || fixed < 0 ? -1 : fixed + sz;
  }
  return { code, tag, hasChildren, attrs, forms, implicit, fixedSize: fixed, siblingIndex: sibling };
}

const MAX_ATTRS = 4096;

/**
 * The forms by which a DIE may refer outside its unit: DW_FORM_ref_addr, ref_sig8, the supplementary file's
 * and the alternate file's, and DW_FORM_indirect, which could hide one.
 */
export const CROSS_UNIT_FORMS: readonly number[] = [
  FORM.ref_addr,
  FORM.ref_sig8,
  FORM.ref_sup4,
  FORM.ref_sup8,
  FORM.GNU_ref_alt,
  FORM.indirect,
];
const crossUnit = new Uint8Array(0x2000);
for (const f of CROSS_UNIT_FORMS) crossUnit[f] = 1;

/** Per .debug_abbrev, whether the table at an offset uses a cross-unit form (each table is read once for it). */
const outsideCache = new WeakMap<Uint8Array, Map<number, boolean>>();

/**
 * The abbreviation `code` of the table at `offset`, or undefined when the table has no such code: the table is
 * read to its end without being built (a unit's root DIE needs only its own abbreviation), and what it says about
 * cross-unit forms is kept for refersOutside. The table's first abbreviation of that code: the whole table
 * (abbrevTable) refuses a table that has two.
 */
export function findAbbrev(section: Uint8Array, offset: number, code: number, enc: Encoding, le: boolean): Abbrev | undefined {
  const r = dwarfReader(section, '.debug_abbrev', le);
  r.seek(offset);
  let at = -1,
    outside = false;
  for (;;) {
    const c = r.uleb();
    if (c === 0) break;
    if (c === code && at < 0) at = r.pos;
    if (skipEntry(r)) outside = true;
  }
  cacheOf(section).set(offset, outside);
  if (at < 0) return undefined;
  r.seek(at);
  return parseEntry(r, code, enc);
}

/**
 * Whether any abbreviation of the table at `offset` has a form by which a DIE may refer outside its unit
 * (CROSS_UNIT_FORMS), read without building the table (nothing is allocated) unless findAbbrev read it already.
 */
export function refersOutside(section: Uint8Array, offset: number, le: boolean): boolean {
  const cache = cacheOf(section);
  const known = cache.get(offset);
  if (known !== undefined) return known;
  const r = dwarfReader(section, '.debug_abbrev', le);
  r.seek(offset);
  let outside = false;
  while (r.uleb() !== 0) if (skipEntry(r)) outside = true;
  cache.set(offset, outside);
  return outside;
}

function cacheOf(section: Uint8Array): Map<number, boolean> {
  let m = outsideCache.get(section);
  if (!m) outsideCache.set(section, (m = new Map()));
  return m;
}

/** Moves past one abbreviation (its code read); true when one of its forms is a cross-unit one. */
function skipEntry(r: ByteReader): boolean {
  r.skipLeb(); // tag
  r.u8(); // children
  let found = false;
  for (let n = 0; ; n++) {
    const at = r.uleb(),
      form = r.uleb();
    if (at === 0 && form === 0) return found;
    if (n > MAX_ATTRS) r.fail('abbreviation with too many attributes');
    if (form === FORM.implicit_const) r.skipLeb();
    if (form < 0x2000 && crossUnit[form]) found = true;
  }
}

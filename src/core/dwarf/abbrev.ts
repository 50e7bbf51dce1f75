// Abbreviation tables (.debug_abbrev), parsed once per offset and shared by every unit that points there.
// Each abbreviation also gets a precomputed byte size when all its forms are fixed-size for the unit's
// encoding: skipping a DIE nobody asked about is then a single cursor bump, the hot path of the index pass.
// Tests: test/unit/core/dwarf/unit.test.ts, test/unit/core/dwarf/functions.test.ts, test/unit/core/dwarf/hostileTypes.test.ts
import * as K from './constants';
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

const cache = new WeakMap<Uint8Array, Map<string, AbbrevTable>>();

/** The abbreviation table at `offset` of .debug_abbrev, with fixed sizes computed for `enc` (cached). */
export function abbrevTable(section: Uint8Array, offset: number, enc: Encoding, le: boolean): AbbrevTable {
  let perSection = cache.get(section);
  if (!perSection) cache.set(section, (perSection = new Map()));
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
      if (attrs.length > 4096) r.fail('abbreviation with too many attributes');
      if (at === AT.sibling) sibling = attrs.length;
      attrs.push(at);
      forms.push(form);
      implicit.push(form === FORM.implicit_const ? r.sleb() : 0);
      const sz = fixedFormSize(form, enc);
      fixed = sz < 0 || fixed < 0 ? -1 : fixed + sz;
    }
    if (t.get(code)) throw new DwarfFormatError('.debug_abbrev', r.pos, `duplicate abbreviation code ${code}`);
    t.add({ code, tag, hasChildren, attrs, forms, implicit, fixedSize: fixed, siblingIndex: sibling });
  }
  return t;
}

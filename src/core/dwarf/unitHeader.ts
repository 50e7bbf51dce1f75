// Unit headers: every unit of .debug_info (and DWARF 4 .debug_types) listed from its header and root DIE
// (parseUnits), or only the units at known offsets (parseUnitsAt: a reader made for one batch of units lists those
// alone, reading nothing of the others).
// Tests: test/unit/core/dwarf/unit.test.ts, test/unit/core/dwarf/unreadInfo.test.ts
import type { ByteReader } from '../binary/byteReader';
import * as K from './constants';
import { dwarfReader } from './format';
import type { Sections } from './sections';
import { Unit } from './unit';

// Bound once: per-access getters of a transpiled module namespace would sit on the hot path.
const { UT } = K;

const INFO = '.debug_info';

/** Parses every unit header of .debug_info (and .debug_types, DWARF 4 type units). */
export function parseUnits(dw: Sections): Unit[] {
  const out: Unit[] = [];
  const buf = dw.get(INFO);
  if (!buf) return out;
  const r = dwarfReader(buf, INFO, dw.le);
  while (r.pos < r.end) {
    const u = unitAt(dw, r);
    out.push(u);
    r.seek(u.end);
  }
  return out;
}

/**
 * The units whose headers start at `offsets` (offsets parseUnits gave, in any order; given in unit order back),
 * read as parseUnits reads them. Type units' signatures are recorded only for the units listed.
 */
export function parseUnitsAt(dw: Sections, offsets: readonly number[]): Unit[] {
  const buf = dw.get(INFO);
  if (!buf) return [];
  const r = dwarfReader(buf, INFO, dw.le);
  return [...offsets].sort((a, b) => a - b).map((o) => unitAt(dw, r.seek(o)));
}

/** The unit whose header starts at the reader's position (its root DIE read, its bases resolved). */
function unitAt(dw: Sections, r: ByteReader): Unit {
  const offset = r.pos;
  dw.fill(INFO, offset, offset + MAX_HEADER);
  const inTypes = offset >= dw.typesStart;
  const { length, is64 } = r.initialLength();
  const end = r.pos + length;
  if (end > (inTypes ? r.end : dw.typesStart)) r.fail(`unit length 0x${length.toString(16)} runs past the section`, offset);
  const version = r.u16();
  if (version < 2 || version > 5) r.fail(`unsupported DWARF version ${version}`, offset + (is64 ? 12 : 4));
  let unitType: number = UT.compile,
    addrSize: number,
    abbrevOffset: number;
  let sig: bigint | undefined, typeOff: number | undefined;
  if (version >= 5) {
    unitType = r.u8();
    addrSize = r.u8();
    abbrevOffset = r.offset(is64);
    if (unitType === UT.skeleton || unitType === UT.split_compile) r.skip(8);
    else if (unitType === UT.type || unitType === UT.split_type) {
      sig = r.u64big();
      typeOff = offset + r.offset(is64);
    }
  } else {
    abbrevOffset = r.offset(is64);
    addrSize = r.u8();
    if (inTypes) {
      unitType = UT.type;
      sig = r.u64big();
      typeOff = offset + r.offset(is64);
    }
  }
  if (addrSize !== 4 && addrSize !== 8 && addrSize !== 2) r.fail(`unsupported address size ${addrSize}`, offset);
  const u = new Unit(dw, INFO, offset, end, { version, is64, addrSize }, unitType, abbrevOffset, r.pos, sig, typeOff);
  u.init();
  if (sig !== undefined && typeOff !== undefined) dw.typeBySignature.set(sig, typeOff);
  return u;
}

/** The longest unit header: a 64-bit DWARF 5 type unit's. */
const MAX_HEADER = 12 + 2 + 2 + 8 + 8 + 8;

// Rebuilds reuse what did not change: the DWARF half of a cold index is put together unit by unit, each unit's
// share (its functions, code ranges and line table: dwarfUnitSlices) read from the unit cache (unitCache.ts) when
// everything indexing it reads is unchanged, indexed (on the worker pool) and stored otherwise.
//
// A unit is reused only when all its result is a function of is unchanged, so a reused unit gives exactly what
// indexing it again would. In its key (the entry's name):
// - the unit's own bytes in .debug_info (its header, every DIE), its abbreviation table's bytes, and its line
//   program's bytes in .debug_line (header and program, found by DW_AT_stmt_list, whose value is in the unit's
//   bytes), and whether it is the unit whose line table the index takes (the first of its DW_AT_stmt_list);
// - the sections it may read at offsets or indexes its bytes name, whole (AUX_SECTIONS: strings, string offsets,
//   addresses; a change there, such as a string added, re-indexes every unit);
// - the architecture, the calling convention, the byte order and the index format.
// Checked against the entry before it is used, because they move when any unit's code does:
// - the bytes of every range and location list the unit's indexing read (recorded by the reader as it read them:
//   Unit.listReads, dwarf/lists.ts; a read that failed, which depends on where the section ends, is not stored);
// - every symbol-table look-up it made (a clone or a part is named by the symbol at its address): the same names,
//   or none, at each address.
// By induction over the reads (each read's place follows from the bytes before it), the same inputs give the same
// result. Only where no DIE refers outside its own unit (Dwarf.referencesStayInUnits: no DW_FORM_ref_addr, type
// units, supplementary files) is anything reused: elsewhere a unit's result depends on other units' bytes.
//
// A unit's place in .debug_info is not in its bytes (references inside a unit are relative to it), nor is where
// its abbreviations and its line program are (the header's abbreviation offset and the root's DW_AT_stmt_list are
// left out of the key, the table's and the program's bytes are in it): a unit moved by an earlier unit's growing or
// shrinking is still reused, its DIE offsets stored relative to its start.
// Code and data addresses, .debug_str and list offsets are in its bytes: an edit that changes code size moves every
// later unit's code. Such a unit's exact key misses; then, and only then, its shift form (unitShift.ts: its bytes
// with every address relative to its first and every list offset relative to its first, a key of its own) is looked
// up, and a unit whose code moved by one amount D and nothing else changed is reused with every address in its
// result moved by D, after its list bytes and symbol look-ups are checked at their moved places. A unit whose
// data, or part of whose code, moved apart from the rest is indexed again (docs/architecture.md,
// docs/benchmarks.md).
// Tests: test/unit/core/index/unitReuse.test.ts, test/unit/core/index/unitShift.test.ts, test/corpus/indexPool.test.ts
import { createHash, type Hash } from 'node:crypto';
import type { BinaryImage, OpenBinaryOptions } from '../binary/binaryImage';
import type { SectionSource } from '../binary/sections';
import { openDwarf } from '../dwarf';
import { AT } from '../dwarf/constants';
import { rootAttrBytes, type Unit } from '../dwarf/unit';
import { LIST_SECTIONS } from '../dwarf/lists';
import { callingConvention, symbolsByAddress, type DwarfSlice, type UnitSlice } from './fromDwarf';
import { INDEX_FORMAT, type IndexedFunction } from './model';
import type { SymbolsByAddress } from './sites';
import { evictUnitEntries, prepareUnitCache, readUnitEntry, unitCacheDir, UNIT_CACHE_MAX_BYTES, writeUnitEntry } from './unitCache';
import { dwarfUnitSlicesInPool, indexWorkerCount } from './worker/pool';
import { inWindow, listsShift, readsShift, shiftable, shifted, shiftForm, type ShiftForm } from './unitShift';

/** What a stored unit's value looks like; bump when dwarfUnitSlices' output or the key's inputs change. */
export const UNIT_RESULT_VERSION = 5;

/** Sections a unit's indexing may read at offsets its bytes name: hashed whole into every unit's key. */
export const AUX_SECTIONS = ['.debug_str', '.debug_line_str', '.debug_str_offsets', '.debug_addr', '.debug_types'] as const;
/** Sections whose bytes a unit read are recorded and checked (dwarf/lists.ts reads them, and only it). */
export { LIST_SECTIONS };
/** Sections hashed per unit, only the unit's part of them. */
export const UNIT_SECTIONS = ['.debug_info', '.debug_abbrev', '.debug_line'] as const;

export interface UnitReuseStats {
  /** Units of the binary. */
  units: number;
  /** Read from the unit cache. */
  reused: number;
  /** Of those, found by their shift form (unitShift.ts: the unit's code moved, nothing else changed). */
  shifted: number;
  /** Indexed now. */
  indexed: number;
  /** Of those, written to the unit cache. */
  stored: number;
  /** Entries removed to keep the cache within its bound. */
  evicted: number;
}

export interface UnitReuseOptions extends OpenBinaryOptions {
  /** The index cache's directory; units go in its `units` directory. */
  indexCacheDir: string;
  workers?: number;
  memoryLimitMb?: number;
  maxBytes?: number;
}

interface StoredUnit {
  v: typeof UNIT_RESULT_VERSION;
  /** UnitSlice.reads, the lists' bytes as a digest. */
  lists: number[];
  listDigest: string;
  symbols: Array<[number, string]>;
  slice: DwarfSlice;
}

/** Stored under a unit's shift form (unitShift.ts): which entry holds its result, and what places it. */
interface ShiftPointer {
  v: typeof UNIT_RESULT_VERSION;
  /** The exact key of the entry, and what that entry was stored with (another build may write that key). */
  exact: string;
  listDigest: string;
  symbolsDigest: string;
  /** B. */
  base: number;
  listBases: number[];
  /** The list reads relative to listBases, and their shift form's digest. */
  reads: number[];
  readsDigest: string;
}

/** The name a shift form's pointer is stored under (apart from exact keys, which are hex). */
export const SHIFT_PREFIX = 'shift-';

/**
 * Every unit's slice, in unit order, each reused or indexed (mergeDwarfSlices joins them into the DWARF half of
 * the index), with what was reused; undefined where units cannot be indexed apart or the cache cannot be used.
 */
export async function reusingDwarfSlices(
  image: BinaryImage,
  opts: UnitReuseOptions,
): Promise<{ slices: DwarfSlice[]; stats: UnitReuseStats } | undefined> {
  const dw = openDwarf(image.dwarf(), image.elf.requireProbeableArch());
  if (!dw.present || !dw.referencesStayInUnits()) return undefined;
  if (!prepareUnitCache(opts.indexCacheDir)) return undefined;
  const dir = unitCacheDir(opts.indexCacheDir);
  const units = dw.units();
  const tableUnits = dw.lineTableUnits();
  const salt = keySalt(image);
  const keys = unitKeys(image, units, tableUnits, salt);
  const src = image.dwarf();
  const lists = LIST_SECTIONS.map((n) => src.section(n));
  const owners = new Set(tableUnits.map((u) => u.offset));
  // A unit's shift form is made only where its exact key missed: the common path pays nothing for it.
  const forms = new Map<number, ShiftForm | undefined>();
  const formOf = (i: number): ShiftForm | undefined => {
    if (!forms.has(i)) forms.set(i, shiftForm(src, units[i], owners.has(units[i].offset), salt));
    return forms.get(i);
  };
  let symbols: SymbolsByAddress | undefined;
  let moved = 0;
  const slices: Array<DwarfSlice | undefined> = units.map((u, i) => {
    const v = readUnitEntry(dir, keys[i]);
    if (isStoredUnit(v) && listDigest(lists, v.lists) === v.listDigest) {
      symbols ??= symbolsByAddress(image);
      if (v.symbols.every(([address, names]) => (symbols!.get(address)?.join('\n') ?? '') === names)) return relocated(v.slice, u.offset);
    }
    const sf = formOf(i);
    if (!sf) return undefined;
    const p = readUnitEntry(dir, SHIFT_PREFIX + sf.key);
    if (!isShiftPointer(p) || p.listBases.some((b, s) => b < 0 !== sf.listBases[s] < 0)) return undefined;
    const e = readUnitEntry(dir, p.exact);
    if (!isStoredUnit(e) || e.listDigest !== p.listDigest || symbolsDigest(e.symbols) !== p.symbolsDigest) return undefined;
    const read = readsShift(src, sf, p.reads);
    if (!read || read.digest !== p.readsDigest) return undefined;
    if (!inWindow(sf.base, sf.bounds, read.bounds)) return undefined;
    const d = sf.base - p.base;
    symbols ??= symbolsByAddress(image);
    for (const [address, names] of e.symbols) if ((symbols.get(address + d)?.join('\n') ?? '') !== names) return undefined;
    moved++;
    return shifted(relocated(e.slice, u.offset), d);
  });
  const missing = units.filter((_, i) => !slices[i]);
  const stats: UnitReuseStats = {
    units: units.length,
    reused: units.length - missing.length,
    shifted: moved,
    indexed: missing.length,
    stored: 0,
    evicted: 0,
  };
  if (missing.length > 0) {
    const bytes = missing.reduce((n, u) => n + (u.end - u.offset), 0);
    const fresh = await dwarfUnitSlicesInPool(
      image,
      missing.map((u) => ({ offset: u.offset, size: u.end - u.offset })),
      indexWorkerCount(bytes, opts.workers),
      opts,
      dw,
    );
    let written = 0;
    let k = 0;
    units.forEach((u, i) => {
      if (slices[i]) return;
      const s: UnitSlice = fresh[k++];
      const { reads, ...slice } = s;
      slices[i] = slice;
      const digest = listDigest(lists, reads.lists);
      if (reads.failed || digest === undefined || !storable(slice, u)) return;
      const stored = relocated(slice, -u.offset, true);
      // A view's whole buffer would be serialised: each column its own.
      stored.tables = slice.tables.map((t) => ({
        ...t,
        address: t.address.slice(),
        line: t.line.slice(),
        file: t.file.slice(),
        flags: t.flags.slice(),
        sequences: t.sequences.slice(),
      }));
      const entry: StoredUnit = { v: UNIT_RESULT_VERSION, lists: reads.lists, listDigest: digest, symbols: reads.symbols, slice: stored };
      const n = writeUnitEntry(dir, keys[i], entry);
      if (n > 0) stats.stored++;
      written += n;
      if (n > 0 && shiftable(slice)) written += storeShift(dir, src, formOf(i), keys[i], entry, reads.log);
    });
    if (written > 0) stats.evicted = evictUnitEntries(dir, opts.maxBytes ?? UNIT_CACHE_MAX_BYTES);
  }
  return { slices: slices as DwarfSlice[], stats };
}

/** Stores the shift pointer of a unit just stored under `exact` (when its shift form and reads allow one); bytes written. */
function storeShift(dir: string, src: SectionSource, sf: ShiftForm | undefined, exact: string, entry: StoredUnit, log: number[]): number {
  if (!sf) return 0;
  const ls = listsShift(src, sf, log);
  if (!ls || !inWindow(sf.base, sf.bounds, ls.bounds)) return 0;
  const p: ShiftPointer = {
    v: UNIT_RESULT_VERSION,
    exact,
    listDigest: entry.listDigest,
    symbolsDigest: symbolsDigest(entry.symbols),
    base: sf.base,
    listBases: sf.listBases,
    reads: ls.reads,
    readsDigest: ls.digest,
  };
  return writeUnitEntry(dir, SHIFT_PREFIX + sf.key, p);
}

function symbolsDigest(symbols: Array<[number, string]>): string {
  return createHash('sha256').update(JSON.stringify(symbols)).digest('hex');
}

function isShiftPointer(v: unknown): v is ShiftPointer {
  if (typeof v !== 'object' || v === null || (v as ShiftPointer).v !== UNIT_RESULT_VERSION) return false;
  const p = v as ShiftPointer;
  return (
    typeof p.exact === 'string' &&
    /^[0-9a-f]+$/.test(p.exact) &&
    typeof p.listDigest === 'string' &&
    typeof p.symbolsDigest === 'string' &&
    Number.isSafeInteger(p.base) &&
    Array.isArray(p.listBases) &&
    p.listBases.length === LIST_SECTIONS.length &&
    Array.isArray(p.reads) &&
    typeof p.readsDigest === 'string'
  );
}

/** A digest of the list bytes [section, start, end] triples name; undefined when one lies past its section. */
function listDigest(sections: ReadonlyArray<Uint8Array | undefined>, triples: readonly number[]): string | undefined {
  const h = createHash('sha256');
  for (let i = 0; i + 2 < triples.length; i += 3) {
    const [s, lo, hi] = [triples[i], triples[i + 1], triples[i + 2]];
    const b = sections[s];
    if (!b || !(lo >= 0 && lo <= hi && hi <= b.length)) return undefined;
    h.update(`${s}:${lo}-${hi}\0`);
    h.update(b.subarray(lo, hi));
  }
  return h.digest('hex');
}

/** What every unit's key starts from: the format, the architecture, the sections read whole. */
function keySalt(image: BinaryImage): Buffer {
  const src = image.dwarf();
  const arch = image.elf.requireProbeableArch();
  const go = image.goInfo();
  const salt = createHash('sha256');
  salt.update(
    `probelens unit v${UNIT_RESULT_VERSION} index ${INDEX_FORMAT}\0${arch}\0${callingConvention(arch, go ? { regabi: go.abi === 'register' } : undefined)}`,
  );
  salt.update(`\0${src.littleEndian ? 'le' : 'be'}${src.addressSize}\0`);
  for (const name of AUX_SECTIONS) hashSection(salt, name, src.section(name));
  return salt.digest();
}

/** Each unit's key (hex), in unit order: see the head of this file for what goes in. */
export function unitKeys(image: BinaryImage, units: readonly Unit[], lineTableUnits: readonly Unit[], salt = keySalt(image)): string[] {
  const src = image.dwarf();
  const base = salt;
  const info = src.section('.debug_info') ?? new Uint8Array(0);
  const abbrev = src.section('.debug_abbrev') ?? new Uint8Array(0);
  const line = src.section('.debug_line');
  const owners = new Set(lineTableUnits.map((u) => u.offset));
  return units.map((u) => {
    const h = createHash('sha256').update(base);
    // The header's abbreviation offset and the root's DW_AT_stmt_list only say where the abbreviation table and
    // the line program are: their bytes, hashed below, are what count.
    const abbrevField = u.offset + (u.enc.is64 ? 12 : 4) + 2 + (u.version >= 5 ? 2 : 0);
    const cuts: Array<[number, number]> = [[abbrevField, abbrevField + (u.enc.is64 ? 8 : 4)]];
    const stmt = u.stmtList >= 0 ? rootAttrBytes(u, AT.stmt_list) : undefined;
    if (stmt) cuts.push(stmt);
    let at = u.offset;
    for (const [lo, hi] of cuts) {
      hashPart(h, info, at, lo);
      at = hi;
    }
    hashPart(h, info, at, u.end);
    hashPart(h, abbrev, u.abbrevOffset, u.abbrevs.end);
    if (u.stmtList >= 0) {
      const [lo, hi] = lineProgramExtent(line, u.stmtList, src.littleEndian);
      hashPart(h, line ?? new Uint8Array(0), lo, hi);
    }
    h.update(owners.has(u.offset) ? 'owner' : 'shares');
    return h.digest('hex').slice(0, 48);
  });
}

function hashSection(h: Hash, name: string, bytes: Uint8Array | undefined): void {
  h.update(`${name}:${bytes ? bytes.length : 'absent'}\0`);
  if (bytes) h.update(bytes);
}

/**
 * The bytes [lo, hi) clamped to `b`, after their length and how much of it `b` holds (so two cut-offs cannot look
 * alike), never their place: a part that moved whole hashes the same.
 */
function hashPart(h: Hash, b: Uint8Array, lo: number, hi: number): void {
  const a = Math.max(0, Math.min(lo, b.length));
  const z = Math.max(a, Math.min(hi, b.length));
  h.update(`${hi - lo}:${z - a}\0`);
  h.update(b.subarray(a, z));
}

/** The line program at `at` of .debug_line: its unit_length field and what it covers. */
function lineProgramExtent(line: Uint8Array | undefined, at: number, le: boolean): [number, number] {
  if (!line || at + 4 > line.length) return [at, at];
  const v = new DataView(line.buffer, line.byteOffset, line.byteLength);
  const len32 = v.getUint32(at, le);
  if (len32 !== 0xffffffff) return [at, at + 4 + len32];
  if (at + 12 > line.length) return [at, line.length];
  return [at, at + 12 + Number(v.getBigUint64(at + 4, le))];
}

function isStoredUnit(v: unknown): v is StoredUnit {
  if (typeof v !== 'object' || v === null || (v as StoredUnit).v !== UNIT_RESULT_VERSION) return false;
  const e = v as StoredUnit;
  const s = e.slice;
  return (
    Array.isArray(e.lists) &&
    typeof e.listDigest === 'string' &&
    Array.isArray(e.symbols) &&
    typeof s === 'object' &&
    s !== null &&
    s.byUnits === true &&
    typeof s.concrete === 'number' &&
    Array.isArray(s.functions) &&
    Array.isArray(s.code) &&
    Array.isArray(s.tables)
  );
}

/**
 * `s` with every .debug_info offset moved by `delta` (stored relative to the unit's start, loaded at it); a copy
 * of the functions when `copy` (the fresh slice is still used), in place otherwise (a value just read).
 */
function relocated(s: DwarfSlice, delta: number, copy = false): DwarfSlice {
  const move = (f: IndexedFunction): IndexedFunction => {
    const g = copy ? { ...f, sites: f.sites.map((x) => ({ ...x })) } : f;
    g.unitOffset += delta;
    g.dieOffset += delta;
    for (const x of g.sites) {
      x.dieOffset += delta;
      x.unitOffset += delta;
    }
    return g;
  };
  return { ...s, functions: s.functions.map(move) };
}

/**
 * Whether a fresh slice may be stored relative to its unit: every offset in it lies in the unit, and no text
 * names a .debug_info offset (a damaged DIE's error, kept as a parameter's reason), which would not move with it.
 */
function storable(s: DwarfSlice, u: Unit): boolean {
  const inside = (o: number) => o >= u.offset && o < u.end;
  const mentions = (t: string | undefined) => t !== undefined && (t.includes('.debug_info') || t.includes('.debug_types'));
  for (const f of s.functions) {
    if (!inside(f.unitOffset) || !inside(f.dieOffset) || mentions(f.reason)) return false;
    if (f.sites.some((x) => !inside(x.dieOffset) || !inside(x.unitOffset))) return false;
    if (f.params.some((p) => mentions(p.location) || mentions(p.type))) return false;
  }
  return true;
}

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
// later unit's code, and those units are indexed again (docs/architecture.md, README "Benchmarks").
// Tests: test/unit/core/index/unitReuse.test.ts, test/corpus/indexPool.test.ts
import { createHash, type Hash } from 'node:crypto';
import type { BinaryImage, OpenBinaryOptions } from '../binary/binaryImage';
import { openDwarf } from '../dwarf';
import { AT } from '../dwarf/constants';
import { rootAttrBytes, type Unit } from '../dwarf/unit';
import { LIST_SECTIONS } from '../dwarf/lists';
import { callingConvention, symbolsByAddress, type DwarfSlice, type UnitSlice } from './fromDwarf';
import { INDEX_FORMAT, type IndexedFunction } from './model';
import type { SymbolsByAddress } from './sites';
import { evictUnitEntries, prepareUnitCache, readUnitEntry, unitCacheDir, UNIT_CACHE_MAX_BYTES, writeUnitEntry } from './unitCache';
import { dwarfUnitSlicesInPool, indexWorkerCount } from './worker/pool';

/** What a stored unit's value looks like; bump when dwarfUnitSlices' output or the key's inputs change. */
export const UNIT_RESULT_VERSION = 4;

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
  const keys = unitKeys(image, units, dw.lineTableUnits());
  const src = image.dwarf();
  const lists = LIST_SECTIONS.map((n) => src.section(n));
  let symbols: SymbolsByAddress | undefined;
  const slices: Array<DwarfSlice | undefined> = units.map((u, i) => {
    const v = readUnitEntry(dir, keys[i]);
    if (!isStoredUnit(v) || listDigest(lists, v.lists) !== v.listDigest) return undefined;
    symbols ??= symbolsByAddress(image);
    for (const [address, names] of v.symbols) if ((symbols.get(address)?.join('\n') ?? '') !== names) return undefined;
    return relocated(v.slice, u.offset);
  });
  const missing = units.filter((_, i) => !slices[i]);
  const stats: UnitReuseStats = {
    units: units.length,
    reused: units.length - missing.length,
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
    });
    if (written > 0) stats.evicted = evictUnitEntries(dir, opts.maxBytes ?? UNIT_CACHE_MAX_BYTES);
  }
  return { slices: slices as DwarfSlice[], stats };
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

/** Each unit's key (hex), in unit order: see the head of this file for what goes in. */
export function unitKeys(image: BinaryImage, units: readonly Unit[], lineTableUnits: readonly Unit[]): string[] {
  const src = image.dwarf();
  const arch = image.elf.requireProbeableArch();
  const go = image.goInfo();
  const salt = createHash('sha256');
  salt.update(
    `probelens unit v${UNIT_RESULT_VERSION} index ${INDEX_FORMAT}\0${arch}\0${callingConvention(arch, go ? { regabi: go.abi === 'register' } : undefined)}`,
  );
  salt.update(`\0${src.littleEndian ? 'le' : 'be'}${src.addressSize}\0`);
  for (const name of AUX_SECTIONS) hashSection(salt, name, src.section(name));
  const base = salt.digest();
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

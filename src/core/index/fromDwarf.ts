// The DWARF half of the full index: functions with their parameters located at the entry pc, and the line
// tables of every unit merged into one address-sorted table with a shared file list.
// Tests: test/unit/core/index/worker/pool.test.ts, test/unit/core/index/oracles.test.ts, test/unit/core/index/corpusCases.test.ts
import { Interner } from '../../shared/interner';
import type { BinaryImage } from '../binary/binaryImage';
import type { FileReadMap } from '../binary/fileBytes';
import { openDwarf, type Dwarf, type FileNameTest, type FunctionInfo, type LocDesc } from '../dwarf';
import type { Unit } from '../dwarf/unit';
import { listExtents, listReadLog } from '../dwarf/lists';
import { LANG_C_ABI } from '../dwarf/constants';
import type { ParamInfo } from '../dwarf/functions';
import { ROW_END_SEQUENCE, ROW_PROLOGUE_END, ROW_STMT } from '../dwarf/line';
import { placeArguments, type CallingConvention } from '../fetchargs/abi';
import { abiTypeOf, entryCfa, fetchForLocation, stripQualifiers, tracefsRegister, type Arch } from '../fetchargs/fetch';
import { LINE_END_SEQUENCE, LINE_IS_STMT, LINE_PROLOGUE_END, type IndexedFunction, type IndexedParam, type LineRows } from './model';
import { functionNamesByDie, inlinedSites, placeCopies, symbolLookup, type SymbolsByAddress } from './sites';
import { addressBig, addressNumber } from '../dwarf/format';

export interface DwarfIndexPart {
  functions: IndexedFunction[];
  /** Every code range of every out-of-line copy ([lo, hi) pairs, .cold blocks included), sorted by start. */
  code: number[];
  files: string[];
  lines: LineRows;
}

export function callingConvention(arch: Arch, go: { regabi: boolean } | undefined): CallingConvention {
  if (go) return go.regabi && arch === 'x86_64' ? 'go-regabi' : 'go-stack';
  return arch === 'x86_64' ? 'sysv' : 'aapcs64';
}

/**
 * One contiguous share of the DWARF half of the index, `part` of `parts`: every share runs the function pass
 * over the whole binary (it links DIEs across units), then indexes only its range of the functions and of the
 * line tables. Shares are plain data (they cross threads) and mergeDwarfSlices() joins them in part order, so the
 * merged index is the same whatever the number of parts.
 */
export interface DwarfSlice {
  /**
   * Whether the share walked only its own units (references stay in units: see referencesStayInUnits); its
   * functions are then its units' functions, those with code (`concrete` of them) first, as the whole pass
   * orders them; otherwise a range of the whole pass's functions.
   */
  byUnits: boolean;
  concrete: number;
  functions: IndexedFunction[];
  /** The code ranges of this share's functions, unsorted, in function order ([lo, hi) pairs). */
  code: number[];
  /** This share's line tables, in unit order: file names and the rows' columns. */
  tables: SliceLineTable[];
  /** What a helper thread read of the files to index its share (the coordinator's own reads are its image's). */
  fileReads?: FileReadMap[];
}

export interface SliceLineTable {
  files: string[];
  address: Float64Array;
  line: Uint32Array;
  file: Uint32Array;
  flags: Uint8Array;
  /** [start, end] row pairs of each sequence (end is its end_sequence row), flattened. */
  sequences: Uint32Array;
}

/** The range [lo, hi) of `n` items that share `part` of `parts` gets (contiguous, sizes differing by at most 1). */
export function shareOf(n: number, part: number, parts: number): [number, number] {
  return [Math.floor((n * part) / parts), Math.floor((n * (part + 1)) / parts)];
}

/**
 * The .debug_info bytes whose units one reader walks and indexes at a time where references stay in units: the
 * reader (its bytes, abbreviation tables, types, decoded DIEs) is dropped after each batch, so the memory a share
 * takes grows with its result, not with its DWARF.
 */
export const UNIT_BATCH_BYTES = 4 * 1024 * 1024;

export function dwarfSlice(image: BinaryImage, part: number, parts: number, batchBytes = UNIT_BATCH_BYTES): DwarfSlice {
  const arch = image.elf.requireProbeableArch();
  const dw = openDwarf(image.dwarf(), arch);
  const tableUnits = dw.lineTableUnits();
  const [tlo, thi] = shareOf(tableUnits.length, part, parts);
  const lineUnits = tableUnits.slice(tlo, thi);
  // Where DIEs refer across units every share runs the whole function pass and takes a range of its functions.
  if (!dw.referencesStayInUnits()) return sliceOf(image, dw, undefined, lineUnits, [part, parts]);
  // Otherwise a share walks only its own units (by bytes), a batch of them at a time, each batch by a reader of
  // its own: what the whole pass gives for a unit depends on that unit alone.
  const symbols = symbolsByAddress(image);
  const batches = unitBatches(unitShare(dw.units(), part, parts), batchBytes).map((batch) => {
    const own = openDwarf(image.dwarf(), arch, { units: batch.map((u) => u.offset) });
    return sliceOf(image, own, own.units(), [], [0, 1], undefined, symbols);
  });
  return {
    byUnits: true,
    concrete: batches.reduce((n, b) => n + b.concrete, 0),
    functions: [...batches.flatMap((b) => b.functions.slice(0, b.concrete)), ...batches.flatMap((b) => b.functions.slice(b.concrete))],
    code: batches.flatMap((b) => b.code),
    tables: sliceTables(dw, lineUnits),
  };
}

/** `units` cut into contiguous runs of at least `bytes` of .debug_info each (the last may be shorter). */
function unitBatches(units: readonly Unit[], bytes: number): Unit[][] {
  const out: Unit[][] = [];
  let run: Unit[] = [];
  let size = 0;
  for (const u of units) {
    run.push(u);
    size += u.end - u.offset;
    if (size >= bytes) {
      out.push(run);
      run = [];
      size = 0;
    }
  }
  if (run.length > 0) out.push(run);
  return out;
}

/**
 * Indexes the functions of `units` (every unit when undefined, then only the `range` share of the functions) and
 * the line tables of `lineUnits`.
 */
function sliceOf(
  image: BinaryImage,
  dw: Dwarf,
  units: readonly Unit[] | undefined,
  lineUnits: readonly Unit[],
  range: [number, number] = [0, 1],
  perUnit?: UnitRecords,
  all: SymbolsByAddress = symbolsByAddress(image),
): DwarfSlice & { codeOf?: number[][] } {
  const arch = dw.arch;
  const goInfo = image.goInfo();
  const conv = callingConvention(arch, goInfo ? { regabi: goInfo.abi === 'register' } : undefined);
  // Per unit, every look-up is recorded against the unit of the function being indexed.
  let current = -1;
  const symbols: SymbolsByAddress = perUnit
    ? {
        get: (a) => perUnit.noteSymbol(current, a, all.get(a)),
        has: (a) => perUnit.noteSymbol(current, a, all.get(a)) !== undefined,
      }
    : all;
  const byUnits = units !== undefined;
  const infos = dw.functions(units);
  const names = functionNamesByDie(infos);
  const ctx: IndexCtx = { dw, arch, conv, go: conv.startsWith('go'), symbols, nameOf: (d) => names.get(d) };
  const [lo, hi] = byUnits ? [0, infos.length] : shareOf(infos.length, range[0], range[1]);
  const mine = infos.slice(lo, hi);
  return {
    byUnits,
    // The pass lists functions with code (one per abstract root, with at least one copy) before those without.
    concrete: mine.filter((f) => f.copies.length > 0).length,
    functions: mine.map((f) => {
      current = f.unitOffset;
      return indexFunction(ctx, f);
    }),
    code: codePairs(mine),
    ...(perUnit ? { codeOf: mine.map((f) => codePairs([f])) } : {}),
    tables: sliceTables(dw, lineUnits),
  };
}

/** Function symbol names by address, as the index looks them up. */
export function symbolsByAddress(image: BinaryImage): SymbolsByAddress {
  return symbolLookup(image.functionSymbols().groups);
}

interface UnitRecords {
  noteSymbol(unit: number, address: number, names: readonly string[] | undefined): readonly string[] | undefined;
}

function sliceTables(dw: Dwarf, lineUnits: readonly Unit[]): SliceLineTable[] {
  const tables: SliceLineTable[] = [];
  const seen = new Set<number>();
  for (const u of lineUnits) {
    if (seen.has(u.stmtList)) continue;
    seen.add(u.stmtList);
    const t = dw.readLineTable(u);
    if (!t) continue;
    const seq = new Uint32Array(t.sequences.length * 2);
    t.sequences.forEach(([s, e], i) => {
      seq[i * 2] = s;
      seq[i * 2 + 1] = e;
    });
    // The columns the index keeps, each its own exact-size copy: the table's own are views of buffers grown by
    // doubling, beside two more columns, and go with it.
    const r = t.rows;
    tables.push({
      files: t.files,
      address: r.address.slice(),
      line: r.line.slice(),
      file: r.file.slice(),
      flags: r.flags.slice(),
      sequences: seq,
    });
  }
  return tables;
}

/**
 * The share of each of the units at `unitOffsets` (in unit order), one slice per unit: what the whole pass gives
 * for that unit alone, so that mergeDwarfSlices() of every unit's slice, in unit order, is the whole DWARF half of
 * the index. Only where references stay in units (the caller checks dw.referencesStayInUnits()). The unit cache
 * (unitReuse.ts) stores these.
 */
export function dwarfUnitSlices(
  image: BinaryImage,
  unitOffsets: readonly number[],
  /** The image's Dwarf when the caller has one whose function pass has not run (its units are parsed once). */
  opened?: Dwarf,
): UnitSlice[] {
  const dw = opened ?? openDwarf(image.dwarf(), image.elf.requireProbeableArch());
  if (!dw.referencesStayInUnits()) throw new Error('units are indexed apart only where references stay in units');
  const want = new Set(unitOffsets);
  const units = dw.units().filter((u) => want.has(u.offset));
  const owners = new Set(dw.lineTableUnits().map((u) => u.offset));
  const byUnit = new Map<number, { concrete: IndexedFunction[]; rest: IndexedFunction[]; code: number[]; symbols: Map<number, string> }>();
  for (const u of units) {
    u.listReads = [];
    byUnit.set(u.offset, { concrete: [], rest: [], code: [], symbols: new Map() });
  }
  const records: UnitRecords = {
    noteSymbol(unit, address, names) {
      byUnit.get(unit)?.symbols.set(address, names ? names.join('\n') : '');
      return names;
    },
  };
  const whole = sliceOf(image, dw, units, [], [0, 1], records);
  whole.functions.forEach((f, i) => {
    const b = byUnit.get(f.unitOffset)!;
    (i < whole.concrete ? b.concrete : b.rest).push(f);
    b.code.push(...whole.codeOf![i]);
  });
  const out = units.map((u): UnitSlice => {
    const b = byUnit.get(u.offset)!;
    return {
      byUnits: true,
      concrete: b.concrete.length,
      functions: [...b.concrete, ...b.rest],
      code: b.code,
      tables: owners.has(u.offset) ? sliceTables(dw, [u]) : [],
      reads: { lists: [], log: [], symbols: [...b.symbols].sort((x, y) => x[0] - y[0]), failed: false },
    };
  });
  // Last: the line tables read no lists, but a unit's lists may be read until its functions are all indexed.
  units.forEach((u, i) => {
    out[i].reads.lists = listExtents(u);
    out[i].reads.log = listReadLog(u);
    out[i].reads.failed = u.listReadFailed;
    u.listReads = undefined;
  });
  return out;
}

/**
 * One unit's slice, and what indexing it read beyond the unit's own bytes that the unit cache's key leaves out:
 * the range and location lists ([section index in LIST_SECTIONS, start, end] triples; `log`, each read as made:
 * listReadLog) and the symbol look-ups ([address, the names there joined by newlines, '' for none]). `failed`: a
 * list read failed.
 */
export interface UnitSlice extends DwarfSlice {
  reads: { lists: number[]; log: number[]; symbols: Array<[number, string]>; failed: boolean };
}

/** The units share `part` of `parts` walks: contiguous, about the same number of .debug_info bytes each. */
function unitShare(units: readonly Unit[], part: number, parts: number): Unit[] {
  const total = units.reduce((n, u) => n + (u.end - u.offset), 0);
  const out: Unit[] = [];
  let before = 0;
  for (const u of units) {
    // A unit belongs to the share its first byte falls in.
    if (Math.floor((before * parts) / total) === part) out.push(u);
    before += u.end - u.offset;
  }
  return out;
}

/**
 * The DWARF half of the index for one source file: only the units whose line table names `file` (a header
 * declares functions in every unit that includes it) are walked and indexed. Undefined where a DIE may refer
 * outside its unit (Go, Rust, LTO, dwz): there the whole index is needed.
 */
export function dwarfFileSlice(image: BinaryImage, file: string): DwarfSlice | undefined {
  const arch = image.elf.requireProbeableArch();
  const dw = openDwarf(image.dwarf(), arch);
  if (!dw.referencesStayInUnits()) return undefined;
  const units = dw.unitsNaming(fileNameTest(file));
  return sliceOf(image, dw, units, units);
}

/**
 * Which paths a line table names stand for `file`: itself, or for a relative name (`fs/open.c`) any path ending
 * in it at a directory boundary; `last`, the segment every such path ends in, lets the headers be read without
 * making every path.
 */
export function fileNameTest(file: string): FileNameTest {
  const rel = file.replace(/^\.\//, '');
  const accept = (f: string): boolean => f === file || (!file.startsWith('/') && f.endsWith(`/${rel}`));
  const last = file.slice(file.lastIndexOf('/') + 1);
  return { accept, last: last === '' || last === '.' || last === '..' ? undefined : last };
}

/**
 * Joins the shares of every part, in part order, into the DWARF half of the index. `consume`: the shares' line
 * columns are let go (left empty) as each is copied, so the rows are not held twice over at the end.
 */
export function mergeDwarfSlices(slices: readonly DwarfSlice[], consume = false): DwarfIndexPart {
  // Shares that walked their own units give each its functions with code, then those without: the whole pass
  // lists every unit's functions with code before any without.
  const functions = slices.every((s) => s.byUnits)
    ? [...slices.flatMap((s) => s.functions.slice(0, s.concrete)), ...slices.flatMap((s) => s.functions.slice(s.concrete))]
    : slices.flatMap((s) => s.functions);
  const { files, lines } = mergeLineTables(
    slices.flatMap((s) => s.tables),
    consume,
  );
  // Go emits no DW_AT_decl_line for functions: use the line of the entry address (the `func` line, or the
  // first statement for small leaf functions; the editor snaps to the `func` line above it).
  for (const f of functions) {
    if (f.line !== undefined || f.address === undefined) continue;
    const row = rowAt(lines, addressNumber(f.address));
    if (row >= 0 && lines.line[row] > 0) {
      f.line = lines.line[row];
      f.file ??= files[lines.file[row]] || undefined;
    }
  }
  return { functions, files, lines, code: sortedPairs(slices.flatMap((s) => s.code)) };
}

/** The merged row describing `pc` (the last row at or below it, in a sequence that has not ended), or -1. */
function rowAt(rows: LineRows, pc: number): number {
  const { address, flags } = rows;
  let lo = 0,
    hi = address.length - 1,
    found = -1;
  while (lo <= hi) {
    const mid = (lo + hi) >> 1;
    if (address[mid] <= pc) {
      found = mid;
      lo = mid + 1;
    } else hi = mid - 1;
  }
  return found < 0 || flags[found] & LINE_END_SEQUENCE ? -1 : found;
}

export function dwarfIndexPart(image: BinaryImage): DwarfIndexPart {
  return mergeDwarfSlices([dwarfSlice(image, 0, 1)]);
}

function codePairs(infos: readonly FunctionInfo[]): number[] {
  const out: number[] = [];
  for (const f of infos) for (const c of f.copies) for (let i = 0; i < c.ranges.length; i += 2) out.push(c.ranges[i], c.ranges[i + 1]);
  return out;
}

/** [lo, hi) pairs sorted by start; pairs with equal starts keep their order (the sort is stable). */
function sortedPairs(flat: readonly number[]): number[] {
  const pairs: Array<[number, number]> = [];
  for (let i = 0; i < flat.length; i += 2) pairs.push([flat[i], flat[i + 1]]);
  pairs.sort((a, b) => a[0] - b[0]);
  return pairs.flat();
}

function entrySize(f: FunctionInfo): number {
  if (f.entryPc === undefined) return 0;
  for (let i = 0; i < f.ranges.length; i += 2)
    if (f.entryPc >= f.ranges[i] && f.entryPc < f.ranges[i + 1]) return f.ranges[i + 1] - f.ranges[i];
  return 0;
}

/**
 * Parameter locations at the entry pc. Whatever DWARF says wins: a register, a constant, a location list's entry
 * at the pc (and no entry there means unavailable). A single location expression naming a stack slot (-O0: the
 * prologue fills it) is not true yet at the entry, so the calling convention places the parameter, typed by
 * DWARF. Only a parameter DWARF says nothing about (no location, no constant) at the out-of-line entry of a
 * C-ABI function is taken from the calling convention as a guess, marked `inferred`.
 */
export function entryParams(dw: Dwarf, f: FunctionInfo, arch: Arch, conv: CallingConvention, abiFallback = true): IndexedParam[] {
  const describe = (o: number | undefined) => dw.typeOf(o);
  let placements: ReturnType<typeof placeArguments> | undefined;
  const abi = (i: number) => {
    placements ??= placeArguments(
      conv,
      f.params.map((p) => abiTypeOf(stripQualifiers(describe(p.typeOffset), describe), describe, conv.startsWith('go'))),
    );
    return placements[i];
  };
  const fromAbi = (p: ParamInfo, i: number, type: string): IndexedParam => {
    const placed = abi(i);
    if (!placed.ok) return { name: p.name, type, location: `unavailable: ${placed.reason}` };
    const text = placed.parts.map((x) => x.fetch).join(',');
    return { name: p.name, type, location: placed.byReference ? `*${text}` : text };
  };
  const cAbi = !conv.startsWith('go') && f.dieOffset >= 0 && LANG_C_ABI.has(dw.languageOf(f.dieOffset)) && !noCall(dw, f.dieOffset);
  return f.params.map((p, i): IndexedParam => {
    const type = dw.typeName(p.typeOffset);
    if (f.entryPc === undefined) return fromAbi(p, i, type);
    const facts = dw.locationFacts(p.dieOffset, f.entryPc);
    if (facts.source === 'none') {
      // DWARF says nothing; at a C-ABI entry the caller put the argument where the ABI says (a guess: marked).
      if (abiFallback && cAbi) return { ...fromAbi(p, i, type), inferred: true };
      return { name: p.name, type, location: 'unavailable: optimized out (DWARF gives no location for it)' };
    }
    if (facts.source === 'list' && !facts.covered)
      return {
        name: p.name,
        type,
        location: `unavailable: optimized out here (its location list has no entry at 0x${f.entryPc.toString(16)})`,
      };
    // At the entry pc, "the value the register had on entry" is the register itself.
    const loc: LocDesc = facts.loc.kind === 'entry-value' && facts.loc.inner.kind === 'register' ? facts.loc.inner : facts.loc;
    if (facts.source === 'expr' && loc.kind !== 'register' && loc.kind !== 'value' && loc.kind !== 'implicit') {
      // A clone or split part has its own calling convention (parameters dropped, replaced or reordered).
      if (!abiFallback) return { name: p.name, type, location: 'unavailable: not in a register at the entry of this copy' };
      if (loc.kind === 'fbreg' || loc.kind === 'breg' || loc.kind === 'optimized-out') return fromAbi(p, i, type);
    }
    if (loc.kind === 'pieces') {
      // An aggregate in several whole registers (Go strings and slices, SysV small structs): "%ax,%bx".
      const regs = loc.pieces.map((x) => (x.loc.kind === 'register' && x.bits === 64 ? tracefsRegister(arch, x.loc.name) : undefined));
      if (regs.every((r) => r !== undefined)) return { name: p.name, type, location: regs.map((r) => `%${r}`).join(',') };
    }
    const r = fetchForLocation(loc, { arch, cfa: entryCfa(arch) });
    if (!r.ok) return { name: p.name, type, location: `unavailable: ${r.reason}` };
    return { name: p.name, type, location: r.isValue ? r.fetch : r.address };
  });
}

const DW_AT_calling_convention = 0x36;
const DW_CC_nocall = 3;

/** LLVM marks a function whose calling convention it changed (internal, arguments dropped) DW_CC_nocall. */
function noCall(dw: Dwarf, dieOffset: number): boolean {
  const d = dw.dieAt(dieOffset);
  const i = d.index(DW_AT_calling_convention);
  return i >= 0 && d.vals[i] === DW_CC_nocall;
}

const DW_AT_variable_parameter = 0x4b;

/** Go lists results (~r0, named results) as formal parameters marked DW_AT_variable_parameter: not inputs. */
export function isGoResult(dw: Dwarf, paramDie: number): boolean {
  const d = dw.dieAt(paramDie);
  return d.unit.flag(d, DW_AT_variable_parameter);
}

interface IndexCtx {
  dw: Dwarf;
  arch: Arch;
  conv: CallingConvention;
  go: boolean;
  symbols: SymbolsByAddress;
  nameOf: (die: number) => string | undefined;
}

function indexFunction(ctx: IndexCtx, info: FunctionInfo): IndexedFunction {
  const { dw, arch, conv, go } = ctx;
  const placed = placeCopies(info, ctx.symbols);
  // The function as described by its primary copy: the entry, else a clone, else a part.
  const primary = placed[0];
  let f: FunctionInfo = primary
    ? {
        ...info,
        dieOffset: primary.copy.dieOffset,
        unitOffset: primary.copy.unitOffset,
        entryPc: addressNumber(primary.site.address),
        ranges: primary.copy.ranges,
        params: primary.copy.params,
      }
    : info;
  if (go) f = { ...f, params: f.params.filter((p) => !isGoResult(dw, p.dieOffset)) };
  const sites = [...placed.map((p) => p.site), ...inlinedSites(dw, info, ctx.nameOf)];
  let params: IndexedParam[];
  try {
    params = entryParams(dw, f, arch, conv, !primary || primary.site.kind === 'entry');
  } catch (e) {
    // One damaged type or location must not hide the function; say what went wrong in its place.
    const why = e instanceof Error ? e.message : String(e);
    params = f.params.map((p) => ({ name: p.name, type: '?', location: `unavailable: ${why}` }));
  }
  return {
    name: f.name,
    linkageName: f.linkageName && f.linkageName !== f.name ? f.linkageName : undefined,
    file: f.file || undefined,
    line: f.line || undefined,
    address: f.entryPc !== undefined ? addressBig(f.entryPc) : undefined,
    size: entrySize(f),
    params,
    inlinedInstances: f.inlinedDies.length,
    sites,
    probeable: sites.length > 0,
    reason: sites.length > 0 ? undefined : f.reason,
    external: f.external,
    unitOffset: f.unitOffset,
    dieOffset: f.dieOffset,
  };
}

function mergeLineTables(tables: readonly SliceLineTable[], consume: boolean): { files: string[]; lines: LineRows } {
  const fileIds = new Interner();
  const files = fileIds.strings;
  // Rows within a sequence ascend by address, and sequences rarely overlap: order the sequences (tens of
  // thousands) rather than the rows (millions), and copy rows straight into the typed arrays, a column at a time.
  const seqs: Array<{ lo: number; table: number; s: number; e: number }> = [];
  const locals: Uint32Array[] = [];
  let n = 0;
  tables.forEach((t, ti) => {
    locals.push(Uint32Array.from(t.files, (f) => (f ? fileIds.id(f) : 0xffffffff)));
    for (let k = 0; k < t.sequences.length; k += 2) {
      const s = t.sequences[k],
        e = t.sequences[k + 1];
      seqs.push({ lo: t.address[s], table: ti, s, e });
      n += e - s + 1;
    }
  });
  seqs.sort((a, b) => a.lo - b.lo || a.table - b.table || a.s - b.s);
  const copy = <T extends Float64Array | Uint32Array | Uint8Array>(
    out: T,
    value: (r: SliceLineTable, i: number, q: (typeof seqs)[number]) => number,
  ): T => {
    let k = 0;
    for (const q of seqs) {
      const r = tables[q.table];
      for (let i = q.s; i <= q.e; i++, k++) out[k] = value(r, i, q);
    }
    return out;
  };
  const address = copy(new Float64Array(n), (r, i) => r.address[i]);
  // Sorted unless a sequence starts below where the one before it ended.
  let sorted = true;
  let k = 0;
  for (const q of seqs) {
    if (k > 0 && address[k] < address[k - 1]) sorted = false;
    k += q.e - q.s + 1;
  }
  if (consume) for (const t of tables) t.address = new Float64Array(0);
  const line = copy(new Uint32Array(n), (r, i) => r.line[i]);
  if (consume) for (const t of tables) t.line = new Uint32Array(0);
  const file = copy(new Uint32Array(n), (r, i, q) => locals[q.table][r.file[i]] ?? 0xffffffff);
  if (consume) for (const t of tables) t.file = new Uint32Array(0);
  const flags = copy(new Uint8Array(n), (r, i, q) => {
    const fl = r.flags[i];
    return (
      (fl & ROW_STMT ? LINE_IS_STMT : 0) |
      (fl & ROW_PROLOGUE_END ? LINE_PROLOGUE_END : 0) |
      (i === q.e || fl & ROW_END_SEQUENCE ? LINE_END_SEQUENCE : 0)
    );
  });
  if (consume) for (const t of tables) t.flags = new Uint8Array(0);
  const out: LineRows = { address, line, file, flags };
  if (!sorted) sortRows(out);
  return { files, lines: out };
}

/** Overlapping sequences (rare): a stable row sort by address, end-of-sequence rows first among equals. */
function sortRows(rows: LineRows): void {
  const n = rows.address.length;
  const order = new Uint32Array(n);
  for (let i = 0; i < n; i++) order[i] = i;
  const { address, flags } = rows;
  order.sort((a, b) => address[a] - address[b] || (flags[b] & LINE_END_SEQUENCE) - (flags[a] & LINE_END_SEQUENCE) || a - b);
  const copy = { address: rows.address.slice(), line: rows.line.slice(), file: rows.file.slice(), flags: rows.flags.slice() };
  for (let k = 0; k < n; k++) {
    const i = order[k];
    rows.address[k] = copy.address[i];
    rows.line[k] = copy.line[i];
    rows.file[k] = copy.file[i];
    rows.flags[k] = copy.flags[i];
  }
}

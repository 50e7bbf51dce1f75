// ProbeLens DWARF reader (DWARF 2–5, 32- and 64-bit), modelled on gimli/pyelftools: a bounds-checked ByteReader,
// abbreviation tables cached by offset, units with their bases resolved once, lazily decoded sections.
//
// Public surface (wrapped by BinaryIndex):
//   const dw = openDwarf(src: SectionSource, arch: 'x86_64' | 'aarch64', { relocatable?: boolean })
//   dw.functions(): FunctionInfo[]        the cheap full pass: names (qualified), decl file/line, entry pc,
//                                         ranges, params (name + type offset), inlined copies (DIE offsets), verdict
//   dw.inlinedInstances(fn)               call file/line, entry pc and ranges of each inlined copy
//   dw.typeName(offset) / dw.typeOf(offset): C-like type string / structural TypeDesc (members, bounds…)
//   dw.lineTables(): LineTable[]          every unit's line table (file:line ⇄ address, afterPrologue)
//   dw.lineTableFor(pc) / dw.addressesForLine(file, line) / dw.lineAt(pc)
//   dw.variablesAt(scopeDieOffset, pc): VariableInfo[]  params + locals in scope at pc, location reduced there
//   dw.frameBase(fn) / frameBaseAt(die, pc): LocDesc  DW_AT_frame_base (usually {kind:'cfa'})
//   dw.locationOf(varDieOffset, pc): LocDesc
//
// Representation: addresses, offsets and constants are JS numbers (see binary/byteReader.ts for why that is exact for
// every user-space address); -1/-2 tombstones are recognised and dropped. Errors are DwarfFormatError.
// Tests: test/unit/core/dwarf/functions.test.ts, test/unit/core/dwarf/types.test.ts, test/unit/core/dwarf/unit.test.ts,
//   test/unit/core/dwarf/vars.test.ts
import type { SectionSource } from '../binary/sections';
import * as K from './constants';
import { describeLocation, type Arch, type LocDesc } from './expr';
import { refersOutside } from './abbrev';
import { assemble, FunctionPass, inlinedInstances, type FunctionInfo, type InlinedInstance, type Resolver } from './functions';
import { parseLineFiles, parseLineTable, type LineTable } from './line';
import { lineTableNames, type FileNameTest } from './lineHeader';
import { LIST_SECTIONS, locationAtPc, locationOf, rangesOf } from './lists';
import { DwarfFormatError } from './format';
import { Types, type TypeDesc } from './types';
import { Sections } from './sections';
import { nextAbbrev, isTypeUnit, skipAttrs, type Die, type Unit } from './unit';
import { parseUnits, parseUnitsAt } from './unitHeader';
import { constValueOf, variablesAt, type VariableInfo } from './vars';

// Bound once: per-access getters of a transpiled module namespace would sit on the hot path.
const { AT } = K;

export { DwarfFormatError, isTombstone } from './format';
export { registerName } from './expr';
export type { Arch, LocDesc } from './expr';
export type { ConcreteCopy, FunctionInfo, ParamInfo, InlinedInstance } from './functions';
export type { LineTable } from './line';
export type { FileNameTest } from './lineHeader';
export type { TypeDesc, Member } from './types';
export { DwarfTypeLimitError } from './types';
export type { VariableInfo } from './vars';

/** An inlined copy inside a holder subprogram: its DIE, its code ranges and the copy (or the holder) it sits in. */
export interface InlinedCopyIn {
  die: number;
  ranges: number[];
  parent: number;
}

export class Dwarf implements Resolver {
  private readonly dw: Sections;
  private unitList: Unit[] | undefined;
  private fns: FunctionInfo[] | undefined;
  private inlinedCallers: ReadonlyMap<number, number> | undefined;
  private inlinedSubprograms: ReadonlyMap<number, number> | undefined;
  private typeScopes: Map<number, string> | undefined;
  private readonly lines = new Map<number, LineTable | null>();
  /** inlinedCopiesIn, by holder DIE: a function query asks again for every function with copies in one holder. */
  private readonly copiesIn = new Map<number, InlinedCopyIn[]>();
  private readonly lineFiles = new Map<number, string[]>();
  readonly types: Types;

  constructor(
    src: SectionSource,
    readonly arch: Arch,
    opts: OpenDwarfOptions = {},
  ) {
    this.dw = new Sections(src, opts.relocatable ?? false, LIST_SECTIONS);
    this.types = new Types(this);
    this.only = opts.units;
  }
  private readonly only: readonly number[] | undefined;
  /** Each unit's code ranges by its root DIE, in units() order (lineTableFor). */
  /** Every unit's root code ranges, sorted by start: starts, ends, unit indexes, and the largest end up to each. */
  private rootRanges?: { start: Float64Array; end: Float64Array; unit: Int32Array; maxEnd: Float64Array };

  /** True when the object has any DWARF debug info. */
  get present(): boolean {
    return this.dw.get('.debug_info') !== undefined;
  }

  units(): Unit[] {
    return (this.unitList ??= !this.present ? [] : this.only ? parseUnitsAt(this.dw, this.only) : parseUnits(this.dw));
  }

  /** The .debug_info unit containing a DIE offset. */
  unitOf(offset: number): Unit {
    const us = this.units();
    let lo = 0,
      hi = us.length - 1;
    while (lo <= hi) {
      const mid = (lo + hi) >> 1;
      const u = us[mid];
      if (u.section !== '.debug_info' || offset < u.offset) hi = mid - 1;
      else if (offset >= u.end) lo = mid + 1;
      else return u;
    }
    throw new DwarfFormatError('.debug_info', offset, 'reference outside every unit');
  }

  dieAt(offset: number): Die {
    return this.unitOf(offset).dieAt(offset);
  }

  /**
   * The function pass over every unit, or over `only` (units whose references stay inside themselves, see
   * referencesStayInUnits: their functions are then exactly the ones the whole pass gives for them). Cached: a
   * Dwarf serves one of the two.
   */
  functions(only?: readonly Unit[]): FunctionInfo[] {
    if (this.fns) return this.fns;
    const pass = new FunctionPass((this.dw.get('.debug_info')?.length ?? 0) + (this.dw.get('.debug_types')?.length ?? 0));
    // Type units hold no code, but walking them records the namespaces their classes live in.
    for (const u of only ?? this.units()) pass.walk(u);
    this.typeScopes = pass.typeScopes;
    this.inlinedCallers = pass.inlinedCaller;
    this.inlinedSubprograms = pass.inlinedSubprogram;
    return (this.fns = assemble(pass, this));
  }

  /**
   * Whether no DIE refers outside its own unit: no DW_FORM_ref_addr, ref_sig8, supplementary or alternate-file
   * references (nor DW_FORM_indirect, which could hide one) in any unit's abbreviations, and no type units. True for C and C++ built without LTO or dwz;
   * the function pass can then walk units apart.
   */
  referencesStayInUnits(): boolean {
    // The tables are read, not built: a unit's table is built only when its DIEs are walked.
    const tables = new Set<number>();
    const abbrev = this.dw.get('.debug_abbrev');
    for (const u of this.units()) {
      if (isTypeUnit(u) || u.section !== '.debug_info') return false;
      if (tables.has(u.abbrevOffset)) continue;
      tables.add(u.abbrevOffset);
      if (refersOutside(abbrev!, u.abbrevOffset, this.dw.le)) return false;
    }
    return true;
  }

  scopeOf(offset: number): string {
    if (!this.typeScopes) this.functions();
    return this.typeScopes?.get(offset) ?? '';
  }

  /** The code ranges [lo, hi, lo, hi…] of the DIE at `offset` (empty when it has none). */
  codeRangesOf(offset: number): number[] {
    const d = this.dieAt(offset);
    return rangesOf(d.unit, d);
  }

  /**
   * The subprogram DIE whose code holds the DIE at `offset` (for an inlined copy, the concrete function it was
   * inlined into, however deeply nested), found by walking its unit's tree.
   */
  enclosingSubprogram(offset: number): number | undefined {
    const u = this.unitOf(offset);
    const r = u.reader(u.dieStart);
    const outer: Array<number | undefined> = [];
    let sub: number | undefined;
    while (r.pos < u.end) {
      const at = r.pos;
      const a = nextAbbrev(u, r);
      if (a === null) {
        if (outer.length === 0) break;
        sub = outer.pop();
        continue;
      }
      if (at === offset) return sub;
      skipAttrs(u, r, a!);
      if (a!.hasChildren) {
        outer.push(sub);
        if (a!.tag === K.TAG.subprogram) sub = at;
      }
    }
    return undefined;
  }

  /**
   * Every DW_TAG_inlined_subroutine inside the subprogram DIE at `holder`, however deeply nested: its offset and
   * code ranges [lo, hi, lo, hi…].
   */
  inlinedCopiesIn(holder: number): InlinedCopyIn[] {
    let cached = this.copiesIn.get(holder);
    if (!cached) this.copiesIn.set(holder, (cached = this.walkInlinedCopies(holder)));
    return cached;
  }

  private walkInlinedCopies(holder: number): InlinedCopyIn[] {
    const u = this.unitOf(holder);
    const r = u.reader(holder);
    const top = nextAbbrev(u, r);
    if (!top || !top.hasChildren) return [];
    skipAttrs(u, r, top);
    const out: InlinedCopyIn[] = [];
    // The innermost inlined copy (or the holder) around each depth: an inlined copy's parent.
    const around: number[] = [holder];
    for (let depth = 1; depth > 0 && r.pos < u.end;) {
      const at = r.pos;
      const a = nextAbbrev(u, r);
      if (!a) {
        depth--; // a null entry: the end of a DIE's children (an unknown code throws)
        continue;
      }
      skipAttrs(u, r, a);
      const inlined = a.tag === K.TAG.inlined_subroutine;
      if (inlined) out.push({ die: at, ranges: this.codeRangesOf(at), parent: around[depth - 1] });
      if (a.hasChildren) {
        around[depth] = inlined ? at : around[depth - 1];
        depth++;
      }
    }
    return out;
  }

  /** Call sites and code ranges of a function's inlined copies (decoded on demand). */
  inlinedInstances(fn: FunctionInfo): InlinedInstance[] {
    if (!this.inlinedCallers) this.functions();
    return inlinedInstances(this, fn, this.inlinedCallers, this.inlinedSubprograms);
  }

  /** The line table of a unit (undefined when it has none). */
  lineTable(u: Unit): LineTable | undefined {
    if (u.stmtList < 0) return undefined;
    let t = this.lines.get(u.offset);
    if (t === undefined) {
      t = parseLineTable(u, u.stmtList);
      this.lines.set(u.offset, t);
    }
    return t ?? undefined;
  }

  /** The line table of a unit, not kept (the one lineTable() kept, if any): for a reader that keeps its own copy. */
  readLineTable(u: Unit): LineTable | undefined {
    if (u.stmtList < 0) return undefined;
    const t = this.lines.get(u.offset);
    return t === undefined ? parseLineTable(u, u.stmtList) : (t ?? undefined);
  }

  lineTables(): LineTable[] {
    const out: LineTable[] = [];
    for (const u of this.lineTableUnits()) {
      const t = this.lineTable(u);
      if (t) out.push(t);
    }
    return out;
  }

  /** The units whose line programs lineTables() reads, in unit order (one per distinct DW_AT_stmt_list). */
  lineTableUnits(): Unit[] {
    const out: Unit[] = [];
    const seen = new Set<number>();
    for (const u of this.units()) {
      if (isTypeUnit(u) || u.stmtList < 0 || seen.has(u.stmtList)) continue;
      seen.add(u.stmtList);
      out.push(u);
    }
    return out;
  }

  fileName(u: Unit, index: number): string {
    if (u.stmtList < 0) return '';
    let files = this.lineFiles.get(u.offset);
    if (!files) {
      // The function pass needs only the file table; the row program is decoded when lines are asked for.
      files = this.lines.get(u.offset)?.files ?? parseLineFiles(u, u.stmtList);
      this.lineFiles.set(u.offset, files);
    }
    return files[index] ?? '';
  }

  /** Normalised absolute paths of a unit's line-table file list ([] when it has none). */
  unitFiles(u: Unit): readonly string[] {
    if (u.stmtList < 0) return [];
    this.fileName(u, 0);
    return this.lineFiles.get(u.offset) ?? [];
  }

  /**
   * The units whose line-table file list (unitFiles) names a file `test` accepts, in unit order; the headers are
   * read without making every file's path (lineTableNames).
   */
  unitsNaming(test: FileNameTest): Unit[] {
    return this.units().filter((u) => {
      if (u.stmtList < 0) return false;
      const known = this.lineFiles.get(u.offset);
      return known ? known.some((f) => test.accept(f)) : lineTableNames(u, u.stmtList, test);
    });
  }

  /**
   * The line table holding `pc`. Only the table of the unit whose code holds it is parsed (a kernel has 2,000 units
   * and 17 MB of line programs, which took 1.5 s to parse whole for one address); a pc that no unit's ranges
   * claim, or whose unit's table has no row for it, is looked for in every table, in unit order.
   */
  lineTableFor(pc: number): LineTable | undefined {
    for (const u of this.unitsHolding(pc)) {
      const t = this.lineTable(u);
      if (t && t.rowAt(pc) >= 0) return t;
    }
    for (const t of this.lineTables()) if (t.rowAt(pc) >= 0) return t;
    return undefined;
  }

  /** How many units' line tables have been parsed so far (lineTableFor parses one for an address). */
  get lineTablesParsed(): number {
    return this.lines.size;
  }

  /** The compile units whose root DIE's code ranges hold `pc`, in unit order (the ranges read once, on first use). */
  private unitsHolding(pc: number): Unit[] {
    const us = this.units();
    const r = (this.rootRanges ??= sortedRanges(
      us.map((u) => {
        if (isTypeUnit(u) || u.stmtList < 0) return [];
        try {
          return rangesOf(u, u.root);
        } catch (e) {
          if (e instanceof DwarfFormatError) return []; // its pcs are looked for in every table
          throw e;
        }
      }),
    ));
    // The last range starting at or before pc, then back while an earlier one may still reach past it.
    let lo = 0;
    let hi = r.start.length;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      if (r.start[mid] <= pc) lo = mid + 1;
      else hi = mid;
    }
    const found = new Set<number>();
    for (let i = lo - 1; i >= 0 && r.maxEnd[i] > pc; i--) if (r.end[i] > pc) found.add(r.unit[i]);
    return [...found].sort((a, b) => a - b).map((i) => us[i]);
  }

  lineAt(pc: number): { file: string; line: number; column: number } | undefined {
    return this.lineTableFor(pc)?.lineAt(pc);
  }

  /** is_stmt addresses for a normalised absolute source path and line, across all units. */
  addressesForLine(file: string, line: number): number[] {
    const s = new Set<number>();
    for (const t of this.lineTables()) for (const a of t.addressesForLine(file, line)) s.add(a);
    return [...s].sort((a, b) => a - b);
  }

  typeName(offset: number | undefined): string {
    return this.types.name(offset);
  }

  typeOf(offset: number | undefined): TypeDesc {
    return this.types.describe(offset);
  }

  /** Variables visible at `pc` in a subprogram or inlined_subroutine DIE (FunctionInfo.dieOffset). */
  variablesAt(scopeDieOffset: number, pc: number, view?: number): VariableInfo[] {
    return variablesAt(this, this.types, this.arch, this.dieAt(scopeDieOffset), pc, view);
  }

  /** DW_AT_GNU_entry_view of an inlined copy: the location view at its entry pc where the call begins (GCC). */
  entryViewOf(dieOffset: number): number | undefined {
    const d = this.dieAt(dieOffset);
    const i = d.index(0x2138 /* DW_AT_GNU_entry_view */);
    return i >= 0 ? d.vals[i] : undefined;
  }

  /** Location of one variable/parameter DIE at `pc`. */
  locationOf(varDieOffset: number, pc: number): LocDesc {
    const d = this.dieAt(varDieOffset);
    // DW_AT_const_value: the compiler folded the parameter to that constant everywhere (DWARF 5 §4.1.10).
    if (!d.has(AT.location)) {
      const c = constValueOf(d);
      if (c) return c;
    }
    return describeLocation(d.unit, locationAtPc(locationOf(d.unit, d), pc), this.arch);
  }

  /**
   * What DWARF says about one variable/parameter DIE at `pc`, and in what form: `none` (no DW_AT_location and no
   * DW_AT_const_value: DWARF says nothing), `const`, `expr` (one expression for the whole scope, which at -O0
   * becomes true only after the prologue), or `list` (`covered` false when no entry covers `pc`: unavailable there).
   */
  locationFacts(varDieOffset: number, pc: number): { source: 'none' | 'const' | 'expr' | 'list'; covered: boolean; loc: LocDesc } {
    const d = this.dieAt(varDieOffset);
    if (!d.has(AT.location)) {
      const c = constValueOf(d);
      return c ? { source: 'const', covered: true, loc: c } : { source: 'none', covered: false, loc: { kind: 'optimized-out' } };
    }
    const l = locationOf(d.unit, d);
    // An out-of-line entry is view 0 of its address: entries GCC starts at a later view there are not yet true.
    const e = locationAtPc(l, pc, 0);
    const loc = describeLocation(d.unit, e, this.arch);
    if (l.kind === 'list') return { source: 'list', covered: e !== undefined, loc };
    return { source: l.kind === 'expr' ? 'expr' : 'none', covered: l.kind === 'expr', loc };
  }

  /** DW_LANG_* of the unit holding a DIE. */
  languageOf(dieOffset: number): number {
    return this.dieAt(dieOffset).unit.language;
  }

  /** The function's DW_AT_frame_base at its entry (usually {kind:'cfa'}: DW_OP_call_frame_cfa). */
  frameBase(fn: Pick<FunctionInfo, 'dieOffset' | 'entryPc'>): LocDesc {
    return this.frameBaseAt(fn.dieOffset, fn.entryPc ?? 0);
  }

  /** DW_AT_frame_base of a subprogram DIE at `pc` (it may be a location list). */
  frameBaseAt(subprogramDieOffset: number, pc: number): LocDesc {
    const d = this.dieAt(subprogramDieOffset);
    return describeLocation(d.unit, locationAtPc(locationOf(d.unit, d, AT.frame_base), pc), this.arch);
  }
}

export interface OpenDwarfOptions {
  /**
   * The file is a relocatable object (ET_REL): address 0 is real code there. In executables and shared
   * objects, code and line sequences at address 0 (or at the -1/-2 tombstones) belong to sections the linker
   * discarded and are dropped.
   */
  relocatable?: boolean;
  /**
   * Only the units at these .debug_info offsets (as another Dwarf over the same file listed them): units() lists
   * those alone and reads nothing of the others. For a batch of units whose references stay in themselves
   * (referencesStayInUnits); a reference outside them fails as one outside every unit would.
   */
  units?: readonly number[];
}

export function openDwarf(src: SectionSource, arch: Arch, opts?: OpenDwarfOptions): Dwarf {
  return new Dwarf(src, arch, opts);
}

/** Units' [lo, hi) ranges as one list sorted by start, for unitsHolding's binary search. */
function sortedRanges(perUnit: number[][]): { start: Float64Array; end: Float64Array; unit: Int32Array; maxEnd: Float64Array } {
  const all: Array<[number, number, number]> = [];
  perUnit.forEach((r, u) => {
    for (let k = 0; k + 1 < r.length; k += 2) if (r[k + 1] > r[k]) all.push([r[k], r[k + 1], u]);
  });
  all.sort((a, b) => a[0] - b[0] || a[2] - b[2]);
  const n = all.length;
  const out = { start: new Float64Array(n), end: new Float64Array(n), unit: new Int32Array(n), maxEnd: new Float64Array(n) };
  let m = -Infinity;
  all.forEach(([lo, hi, u], i) => {
    out.start[i] = lo;
    out.end[i] = hi;
    out.unit[i] = u;
    out.maxEnd[i] = m = Math.max(m, hi);
  });
  return out;
}

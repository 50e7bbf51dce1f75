// The function pass: one walk over every unit's DIE tree that decodes only subprograms, their direct
// parameters, inlined-subroutine sites and the names of enclosing scopes (for qualified C++/Rust names).
// Every other DIE is skipped by its abbreviation's precomputed size; struct/enum/array subtrees of C units
// are jumped over with DW_AT_sibling when the compiler emitted it.
import * as K from './constants';
import { rangesOf } from './lists';
import { isDeadAddress } from './format';
import { isRef, nextAbbrev, num, readAttrs, scanAttrs, scanRef, skipAttrs, skipChildren, type Die, type Unit } from './unit';

// Bound once: per-access getters of a transpiled module namespace would sit on the hot path.
const { AT, FORM, LANG_C, TAG } = K;

export interface ParamInfo {
  readonly name: string;
  /** Offset of the type DIE (undefined: void / unknown). */
  readonly typeOffset: number | undefined;
  /** Offset of the DW_TAG_formal_parameter DIE in the concrete (or abstract) function. */
  readonly dieOffset: number;
  /** DW_AT_abstract_origin of the parameter DIE (concrete copies of inline/cloned functions). */
  readonly origin?: number;
}

export interface InlinedInstance {
  readonly dieOffset: number;
  readonly unitOffset: number;
  /** Entry pc of the inlined copy by the DWARF 5 §2.18 rule (see entryOf). */
  readonly entryPc: number | undefined;
  readonly ranges: number[];
  readonly callFile: string;
  readonly callLine: number;
  readonly callColumn: number;
  /** Whether the compiler marked where the copy begins (DW_AT_entry_pc), rather than only where its code is. */
  readonly hasEntryPc: boolean;
  /** The concrete subprogram DIE whose code holds the copy (through any enclosing inlined copies). */
  readonly subprogramDie: number | undefined;
  /** DIE of the function it was inlined into (a subprogram, or the origin of an enclosing inlined copy). */
  readonly callerDie: number | undefined;
}

/** One out-of-line body of a function: the function itself, a clone (.isra/.constprop) or a split part (.part). */
export interface ConcreteCopy {
  readonly dieOffset: number;
  readonly unitOffset: number;
  /**
   * Where the copy may begin, best first: DW_AT_entry_pc, else DW_AT_low_pc; a copy with only DW_AT_ranges has
   * no standard entry, so every range start is a candidate in listed order (GCC lists the entry range first,
   * LLVM sorts by address) and the function symbol decides.
   */
  readonly entryCandidates: number[];
  readonly ranges: number[];
  readonly params: ParamInfo[];
}

export interface FunctionInfo {
  /** Qualified source name (`shapes::Circle::area`, `main.main`), or the linkage name if there is none. */
  readonly name: string;
  readonly linkageName: string | undefined;
  /** Declaring file (normalised absolute path) and line. */
  readonly file: string;
  readonly line: number;
  /** Declaration column (0 when not given). */
  readonly column: number;
  /** Entry address (low_pc or the first range's start); undefined when there is no out-of-line code. */
  readonly entryPc: number | undefined;
  /** Flat [lo, hi, lo, hi…] code ranges. */
  readonly ranges: number[];
  readonly external: boolean;
  /** DW_AT_inline of the abstract instance (0 when none). */
  readonly inline: number;
  readonly params: ParamInfo[];
  /**
   * DIE offsets of the DW_TAG_inlined_subroutine copies of this function; `Dwarf.inlinedInstances(fn)` decodes
   * their call sites and ranges on demand (std-heavy Rust binaries carry tens of thousands).
   */
  readonly inlinedDies: number[];
  /** The abstract root of the function's DIE chain: what its inlined copies (and their callers) name. */
  readonly originOffset: number;
  /** Every out-of-line copy sharing this function's abstract origin (the one described above among them). */
  readonly copies: ConcreteCopy[];
  readonly probeable: boolean;
  /** Why not probeable: 'fully inlined' | 'no code' | 'discarded section'. */
  readonly reason: string | undefined;
  /** Offset of the DIE holding the code (or the abstract/declaring DIE when there is none). */
  readonly dieOffset: number;
  readonly unitOffset: number;
}

interface Rec {
  die: Die;
  ranges: number[];
  prefix: string;
  params: ParamInfo[];
  hasCode: boolean;
  discarded: boolean;
}

/** Everything the pass collects; FunctionInfo records are assembled from it once all units are walked. */
const PARAM_ATTRS = [AT.name, AT.type, AT.abstract_origin];
const vals = [0, 0, 0],
  forms = [0, 0, 0];

/**
 * The work a unit's DIEs imply is bounded by the bytes that hold them: real DWARF spends 17 bytes or more of
 * .debug_info per subprogram, parameter and inlined-call DIE (rustc, Go, GCC, Clang measured), so more than
 * one per MIN_BYTES_PER_RECORD bytes, past a floor, is a hostile file: a few MB of 1-byte DIEs would otherwise
 * cost seconds and gigabytes before any limit could stop it.
 */
export const MIN_BYTES_PER_RECORD = 8;
export const RECORD_FLOOR = 20_000;
const NAMING: readonly number[] = [AT.name, AT.linkage_name, AT.MIPS_linkage_name, AT.specification, AT.abstract_origin];

export class FunctionPass {
  readonly recs = new Map<number, Rec>();
  private records = 0;
  private readonly maxRecords: number;
  readonly inlined = new Map<number, number[]>();
  /** Inlined-subroutine DIE → the function DIE it sits in (for "inlined into CALLER"). */
  readonly inlinedCaller = new Map<number, number>();
  /** Inlined-subroutine DIE → the concrete subprogram DIE whose code holds it. */
  readonly inlinedSubprogram = new Map<number, number>();
  /** Enclosing namespace/class prefix of named types declared inside one (C++, Rust): type strings use it. */
  readonly typeScopes = new Map<number, string>();

  /** `infoBytes`: the size of the .debug_info (and type units) walked, which bounds the records kept. */
  constructor(private readonly infoBytes = Infinity) {
    this.maxRecords = RECORD_FLOOR + Math.floor(infoBytes / MIN_BYTES_PER_RECORD);
  }

  private count(r: ReturnType<Unit['reader']>, at: number): void {
    if (++this.records > this.maxRecords)
      r.fail(
        `more than ${this.maxRecords} subprogram, parameter and inlined-call DIEs in ${this.infoBytes} bytes of debug info, far denser than any compiler writes them`,
        at,
      );
  }

  walk(u: Unit): void {
    const r = u.reader(u.dieStart);
    const isC = LANG_C.has(u.language);
    // Per depth: the scope prefix, and the subprogram record when the parent is a subprogram.
    const prefixes: string[] = [''];
    const fns: Array<Rec | undefined> = [undefined];
    // Per depth: the function (subprogram, or an inlined copy's origin) whose code encloses the children.
    const owners: Array<number | undefined> = [undefined];
    const subprograms: Array<number | undefined> = [undefined];
    let depth = 0;
    while (r.pos < u.end) {
      const at = r.pos;
      const a = nextAbbrev(u, r);
      if (a === null) {
        if (--depth <= 0) break;
        prefixes.pop();
        fns.pop();
        owners.pop();
        subprograms.pop();
        continue;
      }
      const ab = a!;
      const tag = ab.tag;
      let prefix = prefixes[prefixes.length - 1];
      let fn: Rec | undefined;
      let owner = owners[owners.length - 1];
      let subprogram = subprograms[subprograms.length - 1];
      switch (tag) {
        case TAG.subprogram: {
          // A subprogram with nothing that could name it describes no function: skipped, like any other DIE.
          if (!ab.attrs.some((x) => NAMING.includes(x))) {
            skipAttrs(u, r, ab);
            break;
          }
          this.count(r, at);
          const d = readAttrs(u, r, ab, at);
          const rec = this.record(u, d, prefix);
          fn = rec;
          owner = at;
          subprogram = at;
          break;
        }
        case TAG.formal_parameter: {
          const parent = fns[fns.length - 1];
          if (parent) {
            this.count(r, at);
            scanAttrs(u, r, ab, PARAM_ATTRS, vals, forms);
            parent.params.push({
              name: forms[0] < 0 ? '' : (u.strOf(forms[0], vals[0]) ?? ''),
              typeOffset: forms[1] >= 0 && isRef(forms[1]) ? vals[1] : undefined,
              dieOffset: at,
              origin: forms[2] >= 0 && isRef(forms[2]) ? vals[2] : undefined,
            });
          } else skipAttrs(u, r, ab);
          break;
        }
        case TAG.inlined_subroutine: {
          const origin = scanRef(u, r, ab, AT.abstract_origin);
          if (origin !== undefined) {
            this.count(r, at);
            let list = this.inlined.get(origin);
            if (!list) this.inlined.set(origin, (list = []));
            list.push(at);
            if (owner !== undefined) this.inlinedCaller.set(at, owner);
            if (subprogram !== undefined) this.inlinedSubprogram.set(at, subprogram);
            owner = origin;
          }
          break;
        }
        case TAG.namespace:
        case TAG.class_type:
        case TAG.structure_type:
        case TAG.union_type:
        case TAG.interface_type:
        case TAG.module: {
          if (isC && tag !== TAG.namespace && ab.hasChildren) {
            jumpOver(u, r, ab, at);
            continue;
          }
          const d = readAttrs(u, r, ab, at);
          const nm = u.str(d, AT.name);
          if (prefix && tag !== TAG.namespace && tag !== TAG.module) this.typeScopes.set(at, prefix);
          // Rust and C++ anonymous namespaces have no name; keep the enclosing prefix.
          if (nm) prefix = `${prefix}${nm}::`;
          break;
        }
        case TAG.typedef:
          if (prefix) this.typeScopes.set(at, prefix);
          skipAttrs(u, r, ab);
          break;
        case TAG.enumeration_type:
        case TAG.array_type:
        case TAG.subroutine_type:
          if (prefix && tag === TAG.enumeration_type) this.typeScopes.set(at, prefix);
          if (ab.hasChildren) {
            jumpOver(u, r, ab, at);
            continue;
          }
          skipAttrs(u, r, ab);
          break;
        case TAG.compile_unit:
        case TAG.partial_unit:
        case TAG.type_unit:
        case TAG.skeleton_unit:
          skipAttrs(u, r, ab);
          prefix = '';
          break;
        default:
          skipAttrs(u, r, ab);
      }
      if (ab.hasChildren) {
        depth++;
        prefixes.push(prefix);
        // Parameters belong to the nearest subprogram only when they are its direct children.
        fns.push(fn);
        owners.push(owner);
        subprograms.push(subprogram);
      } else if (depth === 0) break;
    }
    // A missing final null for the unit itself is tolerated (some producers drop it); ending inside a nested
    // DIE's children means DIEs were lost.
    if (depth > 1) r.fail(`unit at 0x${u.offset.toString(16)} ends inside a DIE's children`);
  }

  private record(u: Unit, d: Die, prefix: string): Rec {
    const ranges = rangesOf(u, d);
    const lowIdx = d.index(AT.low_pc);
    let discarded = false;
    if (ranges.length === 0 && lowIdx >= 0) {
      discarded = isDeadAddress(u.addr(d, AT.low_pc) ?? 0, u.enc.addrSize, u.dw.zeroIsCode);
    } else if (ranges.length === 0 && d.has(AT.ranges)) {
      discarded = true; // every range was dead
    }
    const rec: Rec = { die: d, ranges, prefix, params: [], hasCode: ranges.length > 0, discarded };
    this.recs.set(d.offset, rec);
    return rec;
  }
}

function jumpOver(u: Unit, r: ReturnType<Unit['reader']>, ab: Parameters<typeof skipAttrs>[2], at: number): void {
  if (ab.siblingIndex >= 0) {
    const d = readAttrs(u, r, ab, at);
    const sib = d.vals[ab.siblingIndex];
    if (d.forms[ab.siblingIndex] !== FORM.ref_addr && sib > r.pos && sib <= u.end) {
      r.seek(sib);
      return;
    }
  } else skipAttrs(u, r, ab);
  skipChildren(u, r);
}

export interface Resolver {
  unitOf(offset: number): Unit;
  dieAt(offset: number): Die;
  fileName(u: Unit, index: number): string;
}

/** Follows specification/abstract_origin links (bounded, across units) to find an attribute. */
export function inherited<T>(res: Resolver, d: Die, get: (d: Die) => T | undefined): T | undefined {
  let cur: Die | undefined = d;
  for (let i = 0; i < 8 && cur; i++) {
    const v = get(cur);
    if (v !== undefined) return v;
    const next: number | undefined = cur.unit.ref(cur, AT.specification) ?? cur.unit.ref(cur, AT.abstract_origin);
    cur = next === undefined ? undefined : res.dieAt(next);
  }
  return undefined;
}

/** Assembles the FunctionInfo list from a completed pass. */
export function assemble(pass: FunctionPass, res: Resolver): FunctionInfo[] {
  const out: FunctionInfo[] = [];
  const originOf = (d: Die): number | undefined => d.unit.ref(d, AT.abstract_origin);
  // The abstract root of an inline chain: where inlined instances are filed.
  const abstractRoot = (off: number): number => {
    let cur = off;
    for (let i = 0; i < 8; i++) {
      const rec = pass.recs.get(cur);
      const next = rec ? originOf(rec.die) : undefined;
      if (next === undefined) return cur;
      cur = next;
    }
    return cur;
  };
  const claimed = new Set<number>();
  const paramByOffset = new Map<number, ParamInfo>();
  for (const rec of pass.recs.values()) for (const p of rec.params) paramByOffset.set(p.dieOffset, p);
  // Subprogram DIEs are already decoded; chains mostly stay among them.
  const dieAt = (off: number): Die => pass.recs.get(off)?.die ?? res.dieAt(off);
  const build = (rec: Rec, inl: number[], group: Rec[], root: number): FunctionInfo => {
    const d = rec.die,
      u = d.unit;
    // One walk down the specification/abstract_origin chain collects every inherited attribute.
    let nameDie: Die | undefined, linkageName: string | undefined, fileDie: Die | undefined;
    let line: number | undefined, column: number | undefined, external: boolean | undefined, inline: number | undefined;
    let cur: Die | undefined = d;
    for (let i = 0; i < 8 && cur; i++) {
      const cu: Unit = cur.unit;
      if (!nameDie && cur.has(AT.name)) nameDie = cur;
      linkageName ??= cu.str(cur, AT.linkage_name) ?? cu.str(cur, AT.MIPS_linkage_name);
      if (!fileDie && cur.has(AT.decl_file)) fileDie = cur;
      line ??= num(cur, AT.decl_line);
      if (line === num(cur, AT.decl_line)) column ??= num(cur, AT.decl_column);
      if (external === undefined && cur.has(AT.external)) external = cu.flag(cur, AT.external);
      inline ??= num(cur, AT.inline);
      const next: number | undefined = cu.ref(cur, AT.specification) ?? cu.ref(cur, AT.abstract_origin);
      cur = next === undefined ? undefined : dieAt(next);
    }
    nameDie ??= d;
    const name = nameDie.unit.str(nameDie, AT.name);
    const prefix = pass.recs.get(nameDie.offset)?.prefix ?? rec.prefix;
    const file = fileDie ? res.fileName(fileDie.unit, num(fileDie, AT.decl_file) ?? 0) : '';
    const ranges = rec.ranges;
    const entry = rec.hasCode ? entryOf(u, d, ranges)[0] : undefined;
    const named = (params: ParamInfo[]): ParamInfo[] => {
      if (!params.some((p) => !p.name || p.typeOffset === undefined)) return params;
      return params.map((p) => {
        // Concrete parameters name their abstract twin; it was recorded with its own subprogram.
        let name = p.name,
          typeOffset = p.typeOffset,
          origin = p.origin;
        for (let i = 0; i < 8 && origin !== undefined && (!name || typeOffset === undefined); i++) {
          const q: ParamInfo | undefined = paramByOffset.get(origin);
          if (!q) {
            const pd = res.dieAt(origin);
            name ||= inherited(res, pd, (x) => x.unit.str(x, AT.name)) ?? '';
            typeOffset ??= inherited(res, pd, (x) => x.unit.ref(x, AT.type));
            break;
          }
          name ||= q.name;
          typeOffset ??= q.typeOffset;
          origin = q.origin;
        }
        return { name, typeOffset, dieOffset: p.dieOffset };
      });
    };
    const params = named(rec.params);
    let reason: string | undefined;
    // DW_AT_inline 1/3 says the compiler did inline it even when it left no inlined_subroutine DIE behind.
    const wasInlined = inl.length > 0 || inline === 1 || inline === 3;
    if (!rec.hasCode) reason = rec.discarded ? 'discarded section' : wasInlined ? 'fully inlined' : 'no code';
    return {
      name: name ? prefix + name : (linkageName ?? ''),
      linkageName,
      file,
      line: line ?? 0,
      column: column ?? 0,
      entryPc: entry,
      ranges,
      external: external ?? false,
      inline: inline ?? 0,
      params,
      inlinedDies: inl,
      originOffset: root,
      copies: group.map((g) => ({
        dieOffset: g.die.offset,
        unitOffset: g.die.unit.offset,
        entryCandidates: entryOf(g.die.unit, g.die, g.ranges),
        ranges: g.ranges,
        params: g === rec ? params : named(g.params),
      })),
      probeable: rec.hasCode,
      reason,
      dieOffset: d.offset,
      unitOffset: u.offset,
    };
  };
  // Inlined copies are filed under the abstract root of whatever DIE they name as their origin.
  const inlinedByRoot = new Map<number, number[]>();
  for (const [origin, list] of pass.inlined) {
    const root = abstractRoot(origin);
    const l = inlinedByRoot.get(root);
    if (l) l.push(...list);
    else inlinedByRoot.set(root, [...list]);
  }
  // Concrete functions first, one per abstract root: clones and split parts share the root of the function
  // they were made from, so they become sites of that one function rather than functions of their own.
  const groups = new Map<number, Rec[]>();
  for (const rec of pass.recs.values()) {
    if (!rec.hasCode) continue;
    const root = abstractRoot(rec.die.offset);
    const g = groups.get(root);
    if (g) g.push(rec);
    else groups.set(root, [rec]);
  }
  for (const [root, group] of groups) {
    claimed.add(root);
    out.push(build(group[0], inlinedByRoot.get(root) ?? [], group, root));
  }
  // Then functions without code: abstract instances never emitted out of line, and discarded/empty ones.
  for (const rec of pass.recs.values()) {
    if (rec.hasCode || claimed.has(rec.die.offset)) continue;
    const d = rec.die,
      u = d.unit;
    const isDecl = u.flag(d, AT.declaration);
    const inl = inlinedByRoot.get(d.offset) ?? [];
    if (isDecl && inl.length === 0) continue;
    // An origin-linked DIE without code is a stray piece of an abstract instance already listed elsewhere.
    if (originOf(d) !== undefined && !rec.discarded) continue;
    claimed.add(d.offset);
    out.push(build(rec, inl, [], d.offset));
  }
  return out;
}

/**
 * Entry candidates of a subprogram or inlined copy (DWARF 5 §2.18): DW_AT_entry_pc (an address, or a constant
 * offset from the base address), else DW_AT_low_pc; with only DW_AT_ranges every range start in listed order.
 */
export function entryOf(u: Unit, d: Die, ranges: number[]): number[] {
  const ei = d.index(AT.entry_pc);
  if (ei >= 0) {
    const a = u.addr(d, AT.entry_pc);
    if (a !== undefined) return [a];
    const base = u.addr(d, AT.low_pc) ?? ranges[0];
    if (base !== undefined) return [base + d.vals[ei]];
  }
  if (d.has(AT.high_pc)) {
    const lo = u.addr(d, AT.low_pc);
    if (lo !== undefined) return [lo];
  }
  const out: number[] = [];
  for (let i = 0; i < ranges.length; i += 2) if (!out.includes(ranges[i])) out.push(ranges[i]);
  return out;
}

/** Decodes the inlined copies listed in `fn.inlinedDies`. */
export function inlinedInstances(
  res: Resolver,
  fn: FunctionInfo,
  callers?: ReadonlyMap<number, number>,
  subprograms?: ReadonlyMap<number, number>,
): InlinedInstance[] {
  return fn.inlinedDies.map((off) => {
    const die = res.dieAt(off);
    const iu = die.unit;
    const r = rangesOf(iu, die);
    return {
      dieOffset: off,
      unitOffset: iu.offset,
      entryPc: entryOf(iu, die, r)[0],
      ranges: r,
      callFile: res.fileName(iu, num(die, AT.call_file) ?? 0),
      callLine: num(die, AT.call_line) ?? 0,
      callColumn: num(die, AT.call_column) ?? 0,
      hasEntryPc: die.has(AT.entry_pc),
      subprogramDie: subprograms?.get(off),
      callerDie: callers?.get(off),
    };
  });
}

// Types: a C-like renderer ("struct account *", "const char *", "int64_t", typedef names kept) and a
// structural description (size, signedness, members with byte/bit offsets, array bounds, enumerators) used
// to fetch `p->field`. Both are computed on demand per type DIE and cached by DIE offset.
//
// Type graphs come from the binary, so they may be hostile: a struct whose bitfields are of its own type, a
// function type whose parameters point back at it, a typedef cycle, a pointer chain 100,000 deep, or a DAG of
// function types whose rendering doubles at every level. Every type DIE is therefore described and rendered at
// most once (results and failures are cached), a DIE met again while it is still being worked on is a cycle,
// nesting is capped, each top-level call reads a bounded number of DIEs, and rendered names are clipped.
import * as K from './constants';
import type { ByteReader } from '../binary/byteReader';
import { dwarfReader } from './format';
import { isConstantForm, num, skipAttrs, type Die, type Unit } from './unit';

// Bound once: per-access getters of a transpiled module namespace would sit on the hot path.
const { AT, ATE, FORM, LANG_C, OP, TAG } = K;

export type TypeKind =
  | 'void'
  | 'base'
  | 'pointer'
  | 'reference'
  | 'typedef'
  | 'const'
  | 'volatile'
  | 'restrict'
  | 'atomic'
  | 'struct'
  | 'union'
  | 'class'
  | 'enum'
  | 'array'
  | 'function'
  | 'unspecified'
  | 'ptr_to_member'
  | 'other';

export interface Member {
  readonly name: string;
  readonly typeOffset: number | undefined;
  readonly type: string;
  /** Byte offset from the start of the aggregate (undefined for members located by an expression we can't fold). */
  readonly offset: number | undefined;
  /** Bitfields: size in bits and offset in bits from the start of the aggregate. */
  readonly bitSize?: number;
  readonly bitOffset?: number;
}

export interface TypeDesc {
  readonly offset: number | undefined;
  readonly kind: TypeKind;
  /** The C-like rendering. */
  readonly name: string;
  readonly byteSize: number | undefined;
  /** For base types and enums: integer signedness; floats, bools and chars are flagged too. */
  readonly signed?: boolean;
  readonly float?: boolean;
  readonly bool?: boolean;
  readonly char?: boolean;
  /** Pointee / aliased / element type. */
  readonly targetOffset?: number;
  readonly members?: Member[];
  /** Arrays: element counts per dimension (undefined for flexible/unknown). */
  readonly dims?: Array<number | undefined>;
  readonly enumerators?: Array<{ name: string; value: number }>;
}

export interface TypeResolver {
  unitOf(offset: number): Unit;
  dieAt(offset: number): Die;
  /** `ns::Class::` for a type declared inside namespaces/classes (C++, Rust), else ''. */
  scopeOf(offset: number): string;
}

const KIND: Record<number, TypeKind> = {
  [TAG.base_type]: 'base',
  [TAG.pointer_type]: 'pointer',
  [TAG.reference_type]: 'reference',
  [TAG.rvalue_reference_type]: 'reference',
  [TAG.typedef]: 'typedef',
  [TAG.const_type]: 'const',
  [TAG.volatile_type]: 'volatile',
  [TAG.restrict_type]: 'restrict',
  [TAG.atomic_type]: 'atomic',
  [TAG.structure_type]: 'struct',
  [TAG.union_type]: 'union',
  [TAG.class_type]: 'class',
  [TAG.enumeration_type]: 'enum',
  [TAG.array_type]: 'array',
  [TAG.subroutine_type]: 'function',
  [TAG.unspecified_type]: 'unspecified',
  [TAG.ptr_to_member_type]: 'ptr_to_member',
  [TAG.interface_type]: 'struct',
};

const QUAL: Record<number, string> = {
  [TAG.const_type]: 'const',
  [TAG.volatile_type]: 'volatile',
  [TAG.restrict_type]: 'restrict',
  [TAG.atomic_type]: '_Atomic',
};

/** Nesting of type DIEs within one description or rendering; C types from real programs stay far below. */
export const MAX_TYPE_DEPTH = 128;
/** DIEs one top-level type query may read (members and enumerators included). */
export const MAX_TYPE_STEPS = 250_000;
/** Longest rendered type name; longer ones (only hostile DAGs of function types get there) end in '…'. */
export const MAX_TYPE_NAME = 2048;

/** A type graph in the binary's DWARF that cannot be described in bounded work: cyclic, too deep or too large. */
export class DwarfTypeLimitError extends Error {
  constructor(
    /** The type DIE at which the limit was hit. */
    readonly dieOffset: number,
    readonly reason: 'cyclic' | 'too deep' | 'too large',
    detail: string,
  ) {
    super(
      `DWARF type at DIE 0x${dieOffset.toString(16)} is ${reason} (${detail}): the binary's debug information is corrupt or hostile; rebuild it with -g`,
    );
    this.name = 'DwarfTypeLimitError';
  }
}

class StepBudget {
  used = 0;
  constructor(
    readonly root: number,
    readonly limit: number,
  ) {}
}

export class Types {
  private readonly names = new Map<number, string | DwarfTypeLimitError>();
  private readonly descs = new Map<number, TypeDesc | DwarfTypeLimitError>();
  private readonly rendering = new Set<number>();
  private readonly describing = new Set<number>();
  private budget: StepBudget | undefined;
  private depth = 0;

  constructor(
    private readonly res: TypeResolver,
    private readonly maxSteps = MAX_TYPE_STEPS,
  ) {}

  /** C-like rendering of the type at `offset` (undefined offset = void). */
  name(offset: number | undefined): string {
    if (offset === undefined) return 'void';
    return this.query(offset, () => this.render(offset, ''));
  }

  /** Runs a top-level query under a fresh step budget; nested queries share the caller's. */
  private query<T>(root: number, f: () => T): T {
    if (this.budget) return f();
    this.budget = new StepBudget(root, this.maxSteps);
    this.depth = 0;
    try {
      return f();
    } finally {
      this.budget = undefined;
    }
  }

  /** Reads a type DIE on behalf of the current query, charging its budget. */
  private die(offset: number): Die {
    const b = this.budget;
    if (b && ++b.used > b.limit)
      throw new DwarfTypeLimitError(
        b.root,
        'too large',
        `more than ${b.limit} DIEs read describing it, the last at 0x${offset.toString(16)}`,
      );
    return this.res.dieAt(offset);
  }

  /** Marks `offset` as in progress in `set` for the duration of `f`, caching its result or failure in `memo`. */
  private once<T>(offset: number, set: Set<number>, memo: Map<number, T | DwarfTypeLimitError> | undefined, f: () => T): T {
    const hit = memo?.get(offset);
    if (hit instanceof DwarfTypeLimitError) throw hit;
    if (hit !== undefined) return hit;
    if (set.has(offset)) throw new DwarfTypeLimitError(offset, 'cyclic', 'it refers back to itself');
    if (this.depth >= MAX_TYPE_DEPTH) throw new DwarfTypeLimitError(offset, 'too deep', `more than ${MAX_TYPE_DEPTH} nested types`);
    set.add(offset);
    this.depth++;
    try {
      const v = f();
      memo?.set(offset, v);
      return v;
    } catch (e) {
      if (e instanceof DwarfTypeLimitError) memo?.set(offset, e);
      throw e;
    } finally {
      set.delete(offset);
      this.depth--;
    }
  }

  private target(d: Die): number | undefined {
    return d.unit.ref(d, AT.type);
  }

  // Renders with a declarator suffix so pointers to arrays and functions come out as C writes them. Only the
  // plain rendering (no suffix) is what name() caches; a suffixed one is rebuilt from the cached parts.
  private render(offset: number | undefined, decl: string): string {
    if (offset === undefined) return join('void', decl);
    return this.once(offset, this.rendering, decl === '' ? this.names : undefined, () => clip(this.renderDie(offset, decl)));
  }

  private renderDie(offset: number, decl: string): string {
    const d = this.die(offset);
    const u = d.unit;
    const own = u.str(d, AT.name);
    const nm = own && !isC(u) ? this.res.scopeOf(offset) + own : own;
    switch (d.tag) {
      case TAG.base_type:
      case TAG.typedef:
      case TAG.unspecified_type:
        return join(nm ?? (d.tag === TAG.unspecified_type ? 'void' : '?'), decl);
      // Only C spells the tag keyword; C++, Rust and Go name aggregates by their type name alone.
      case TAG.structure_type:
      case TAG.interface_type:
        return join(nm ?? 'struct {...}', decl, nm && isC(u) ? 'struct ' : '');
      case TAG.class_type:
        return join(nm ?? 'class {...}', decl);
      case TAG.union_type:
        return join(nm ?? 'union {...}', decl, nm && isC(u) ? 'union ' : '');
      case TAG.enumeration_type:
        return join(nm ?? 'enum {...}', decl, nm && isC(u) ? 'enum ' : '');
      case TAG.pointer_type:
      case TAG.reference_type:
      case TAG.rvalue_reference_type:
      case TAG.ptr_to_member_type: {
        const sym =
          d.tag === TAG.pointer_type ? '*' : d.tag === TAG.reference_type ? '&' : d.tag === TAG.rvalue_reference_type ? '&&' : '::*';
        return this.render(this.target(d), sym + (/^[A-Za-z_]/.test(decl) ? ' ' + decl : decl));
      }
      case TAG.const_type:
      case TAG.volatile_type:
      case TAG.restrict_type:
      case TAG.atomic_type: {
        const q =
          d.tag === TAG.const_type
            ? 'const'
            : d.tag === TAG.volatile_type
              ? 'volatile'
              : d.tag === TAG.restrict_type
                ? 'restrict'
                : '_Atomic';
        // Qualifying a pointer puts the qualifier after the star ("char *const"); otherwise before the type.
        const t = this.target(d);
        const tt = t === undefined ? -1 : this.die(t).tag;
        if (tt === TAG.pointer_type || tt === TAG.reference_type || tt === TAG.rvalue_reference_type) {
          return this.render(t, q + (decl ? ' ' + decl : ''));
        }
        // Consecutive qualifiers print in the canonical order gdb and C programmers use ("const volatile int").
        const quals = new Set([q]);
        let inner = t;
        for (let i = 0; i < 8 && inner !== undefined; i++) {
          const dd = this.die(inner);
          const qq = QUAL[dd.tag];
          if (!qq) break;
          quals.add(qq);
          inner = this.target(dd);
        }
        const innerTag = inner === undefined ? -1 : this.die(inner).tag;
        if (innerTag === TAG.pointer_type || innerTag === TAG.reference_type || innerTag === TAG.rvalue_reference_type) {
          return `${q} ${this.render(t, decl)}`;
        }
        const ordered = ['const', 'volatile', 'restrict', '_Atomic'].filter((x) => quals.has(x)).join(' ');
        return `${ordered} ${this.render(inner, decl)}`;
      }
      case TAG.array_type: {
        const dims = this.dims(d)
          .map((n) => `[${n ?? ''}]`)
          .join('');
        const inner = decl.startsWith('*') ? `(${decl})${dims}` : decl + dims;
        return this.render(this.target(d), inner);
      }
      case TAG.subroutine_type: {
        const args = this.params(d);
        const inner = decl ? `(${decl})(${args})` : `(${args})`;
        return this.render(this.target(d), inner);
      }
      default:
        return join(nm ?? '?', decl);
    }
  }

  private params(d: Die): string {
    const out: string[] = [];
    let len = 0;
    this.children(d, (c) => {
      if (len > MAX_TYPE_NAME) return;
      // Through name(): a parameter type shared by many function types is rendered once.
      const p = c.tag === TAG.formal_parameter ? this.name(this.target(c)) : c.tag === TAG.unspecified_parameters ? '...' : undefined;
      if (p === undefined) return;
      out.push(p);
      len += p.length + 2;
    });
    return out.join(', ') || (d.unit.language && isCxx(d.unit) ? '' : 'void');
  }

  /** Calls `f` for each direct child DIE of `d`. */
  children(d: Die, f: (c: Die) => void): void {
    if (!d.abbrev.hasChildren) return;
    const u = d.unit;
    const r = u.reader(d.end);
    for (let n = 0; n < 1e6; n++) {
      const at = r.pos;
      const code = r.uleb();
      if (code === 0) return;
      r.seek(at);
      const c = this.die(at);
      f(c);
      r.seek(c.end);
      if (c.abbrev.hasChildren) skipSubtree(u, r);
    }
  }

  private dims(d: Die): Array<number | undefined> {
    const out: Array<number | undefined> = [];
    this.children(d, (c) => {
      if (c.tag !== TAG.subrange_type && c.tag !== TAG.enumeration_type) return;
      const count = constVal(c, AT.count);
      const ub = constVal(c, AT.upper_bound);
      const lb = constVal(c, AT.lower_bound) ?? (isFortranLike(c.unit) ? 1 : 0);
      out.push(count ?? (ub !== undefined ? ub - lb + 1 : undefined));
    });
    return out.length ? out : [undefined];
  }

  /**
   * The structural description of the type at `offset`. Throws DwarfTypeLimitError for a type that cannot be
   * described in bounded work (a cycle, nesting deeper than MAX_TYPE_DEPTH, more than the step budget).
   */
  describe(offset: number | undefined): TypeDesc {
    if (offset === undefined) return { offset, kind: 'void', name: 'void', byteSize: undefined };
    return this.query(offset, () => this.once(offset, this.describing, this.descs, () => this.describeDie(offset)));
  }

  private describeDie(offset: number): TypeDesc {
    const d = this.die(offset);
    const u = d.unit;
    // A declaration standing in for a type unit's type (-fdebug-types-section): describe the real one.
    const sig = u.ref(d, AT.signature);
    if (sig !== undefined && sig !== offset) return this.describe(sig);
    const kind = KIND[d.tag] ?? 'other';
    const byteSize = num(d, AT.byte_size);
    const base: TypeDesc = { offset, kind, name: this.name(offset), byteSize, targetOffset: this.target(d) };
    switch (d.tag) {
      case TAG.base_type: {
        const e = num(d, AT.encoding) ?? 0;
        return {
          ...base,
          signed: e === ATE.signed || e === ATE.signed_char,
          float: e === ATE.float || e === ATE.complex_float,
          bool: e === ATE.boolean,
          char: e === ATE.signed_char || e === ATE.unsigned_char || e === ATE.UTF,
        };
      }
      case TAG.pointer_type:
      case TAG.reference_type:
      case TAG.rvalue_reference_type:
        return { ...base, byteSize: byteSize ?? u.enc.addrSize };
      case TAG.typedef:
      case TAG.const_type:
      case TAG.volatile_type:
      case TAG.restrict_type:
      case TAG.atomic_type: {
        const t = this.describe(base.targetOffset);
        return { ...t, offset, kind, name: base.name, targetOffset: base.targetOffset };
      }
      case TAG.enumeration_type: {
        const enumerators: Array<{ name: string; value: number }> = [];
        this.children(d, (c) => {
          if (c.tag === TAG.enumerator) enumerators.push({ name: u.str(c, AT.name) ?? '', value: constVal(c, AT.const_value) ?? 0 });
        });
        const t = base.targetOffset !== undefined ? this.describe(base.targetOffset) : undefined;
        return { ...base, enumerators, signed: t?.signed ?? enumerators.some((e) => e.value < 0) };
      }
      case TAG.array_type: {
        const dims = this.dims(d);
        const el = this.describe(base.targetOffset).byteSize;
        const total =
          byteSize ?? (el !== undefined && dims.every((x) => x !== undefined) ? dims.reduce<number>((a, x) => a * x!, el) : undefined);
        return { ...base, dims, byteSize: total };
      }
      case TAG.structure_type:
      case TAG.class_type:
      case TAG.union_type:
      case TAG.interface_type:
        return { ...base, members: this.members(d) };
      default:
        return base;
    }
  }

  private members(d: Die): Member[] {
    const u = d.unit;
    const out: Member[] = [];
    this.children(d, (c) => {
      if (c.tag !== TAG.member && !(c.tag === TAG.variable && !u.flag(c, AT.external) && c.has(AT.data_member_location))) return;
      if (u.flag(c, AT.declaration)) return; // static members
      const typeOffset = c.unit.ref(c, AT.type);
      let offset = memberOffset(c);
      const bitSize = num(c, AT.bit_size);
      let bitOffset: number | undefined;
      if (bitSize !== undefined) {
        const dbo = num(c, AT.data_bit_offset);
        if (dbo !== undefined) bitOffset = dbo;
        else {
          // DWARF 2/3 DW_AT_bit_offset counts from the most significant bit of the storage unit.
          const bo = num(c, AT.bit_offset) ?? 0;
          const storage = num(c, AT.byte_size) ?? this.describe(typeOffset).byteSize ?? 0;
          bitOffset = (offset ?? 0) * 8 + (u.dw.le ? storage * 8 - bo - bitSize : bo);
        }
        offset = Math.floor(bitOffset / 8);
      }
      out.push({
        name: u.str(c, AT.name) ?? '',
        typeOffset,
        type: this.name(typeOffset),
        offset: offset ?? (d.tag === TAG.union_type ? 0 : undefined),
        bitSize,
        bitOffset,
      });
    });
    return out;
  }
}

function clip(s: string): string {
  return s.length <= MAX_TYPE_NAME ? s : `${s.slice(0, MAX_TYPE_NAME - 1)}…`;
}

function join(base: string, decl: string, prefix = ''): string {
  if (!decl) return prefix + base;
  return `${prefix}${base} ${decl}`;
}

function isC(u: Unit): boolean {
  return LANG_C.has(u.language) || u.language === 0;
}

function isCxx(u: Unit): boolean {
  return u.language === 0x04 || u.language === 0x1a || u.language === 0x21 || u.language === 0x2b;
}

function isFortranLike(u: Unit): boolean {
  return [0x07, 0x08, 0x0e, 0x22, 0x23, 0x0d, 0x0f, 0x10, 0x11].includes(u.language);
}

/** A constant attribute, sign-extending data1/2/4 for signed contexts is not attempted (DWARF leaves it open). */
function constVal(d: Die, at: number): number | undefined {
  const i = d.index(at);
  if (i < 0 || !isConstantForm(d.forms[i])) return undefined;
  return d.vals[i];
}

function memberOffset(c: Die): number | undefined {
  const i = c.index(AT.data_member_location);
  if (i < 0) return undefined;
  const f = c.forms[i];
  if (isConstantForm(f)) return c.vals[i];
  const blk = c.unit.block(c, AT.data_member_location);
  if (!blk || f === FORM.string) return undefined;
  // DWARF 2 writes member offsets as DW_OP_plus_uconst N (or constu N; plus).
  const r = dwarfReader(blk.buf, c.unit.section, c.unit.dw.le, blk.start, blk.start + blk.len);
  const op = r.u8();
  if (op === OP.plus_uconst || op === OP.constu) return r.uleb();
  return undefined;
}

function skipSubtree(u: Unit, r: ByteReader): void {
  let depth = 1;
  while (depth > 0) {
    const code = r.uleb();
    if (code === 0) {
      depth--;
      continue;
    }
    const a = u.abbrevs.get(code);
    if (!a) r.fail(`unknown abbreviation code ${code}`);
    skipAttrs(u, r, a);
    if (a.hasChildren) depth++;
  }
}

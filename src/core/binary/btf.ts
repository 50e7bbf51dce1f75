// Raw BTF (the BPF Type Format: Documentation/bpf/btf.rst, include/uapi/linux/btf.h), as the kernel exports it in
// /sys/kernel/btf/vmlinux: a header, a type section (type ids from 1, 0 is void) and a string section.
//
// A module's BTF (/sys/kernel/btf/MODULE) is *split* BTF: it describes only what the module adds, on top of the
// kernel's (the base, /sys/kernel/btf/vmlinux). Its type ids continue after the base's last id and its string
// offsets after the base's string section (libbpf's btf__parse_split, the kernel's btf_parse_module): an id or
// offset below those starts is the base's. `parseBtf(bytes, base)` reads it so.
//
// Parsing is lazy and bounds-checked: `parseBtf` checks the header and walks the type section once, recording each
// type's offset and kind (a few milliseconds for the ~5 MB vmlinux BTF); a type is decoded only when asked for, and
// names are read from the string section on demand. Every read is checked against its section: corrupt or truncated
// bytes end in a BtfError naming where, never in an out-of-range read, and chains of types (typedefs of typedefs…)
// are followed a bounded number of steps, so a cycle in hostile data cannot hang.
// Tests: test/unit/core/binary/btf.test.ts
export class BtfError extends Error {
  constructor(detail: string) {
    super(`malformed BTF: ${detail}`);
    this.name = 'BtfError';
  }
}

export const BTF_MAGIC = 0xeb9f;

/** The kinds of btf.h, by number. */
export const BtfKind = {
  INT: 1,
  PTR: 2,
  ARRAY: 3,
  STRUCT: 4,
  UNION: 5,
  ENUM: 6,
  FWD: 7,
  TYPEDEF: 8,
  VOLATILE: 9,
  CONST: 10,
  RESTRICT: 11,
  FUNC: 12,
  FUNC_PROTO: 13,
  VAR: 14,
  DATASEC: 15,
  FLOAT: 16,
  DECL_TAG: 17,
  TYPE_TAG: 18,
  ENUM64: 19,
} as const;

export interface BtfMember {
  name: string;
  type: number;
  /** Bit offset from the start of the struct. */
  bitOffset: number;
  /** Width of a bitfield in bits (a struct with kind_flag), else 0. */
  bitSize: number;
}

export type BtfType =
  | { kind: 'void'; id: 0 }
  | { kind: 'int'; id: number; name: string; size: number; signed: boolean; char: boolean; bool: boolean; bitOffset: number; bits: number }
  | { kind: 'ptr'; id: number; type: number }
  | { kind: 'array'; id: number; type: number; indexType: number; nelems: number }
  | { kind: 'struct' | 'union'; id: number; name: string; size: number; members: BtfMember[] }
  | { kind: 'enum'; id: number; name: string; size: number; signed: boolean; values: Array<{ name: string; value: bigint }> }
  | { kind: 'fwd'; id: number; name: string; union: boolean }
  | { kind: 'typedef' | 'volatile' | 'const' | 'restrict' | 'type_tag'; id: number; name: string; type: number }
  | { kind: 'func'; id: number; name: string; type: number; linkage: number }
  | { kind: 'func_proto'; id: number; returnType: number; params: Array<{ name: string; type: number }>; variadic: boolean }
  | { kind: 'var'; id: number; name: string; type: number; linkage: number }
  | { kind: 'datasec'; id: number; name: string; size: number; vars: Array<{ type: number; offset: number; size: number }> }
  | { kind: 'float'; id: number; name: string; size: number }
  | { kind: 'decl_tag'; id: number; name: string; type: number; componentIdx: number };

const HEADER_MIN = 24;
/** Bytes after the common 12-byte btf_type for each kind: [fixed, per vlen element]. */
const EXTRA: Record<number, [number, number]> = {
  [BtfKind.INT]: [4, 0],
  [BtfKind.PTR]: [0, 0],
  [BtfKind.ARRAY]: [12, 0],
  [BtfKind.STRUCT]: [0, 12],
  [BtfKind.UNION]: [0, 12],
  [BtfKind.ENUM]: [0, 8],
  [BtfKind.FWD]: [0, 0],
  [BtfKind.TYPEDEF]: [0, 0],
  [BtfKind.VOLATILE]: [0, 0],
  [BtfKind.CONST]: [0, 0],
  [BtfKind.RESTRICT]: [0, 0],
  [BtfKind.FUNC]: [0, 0],
  [BtfKind.FUNC_PROTO]: [0, 8],
  [BtfKind.VAR]: [4, 0],
  [BtfKind.DATASEC]: [0, 12],
  [BtfKind.FLOAT]: [0, 0],
  [BtfKind.DECL_TAG]: [4, 0],
  [BtfKind.TYPE_TAG]: [0, 0],
  [BtfKind.ENUM64]: [0, 12],
};

/** How many typedef/qualifier steps `resolve` follows before calling the chain a cycle. */
const MAX_CHAIN = 64;

export class Btf {
  /** Type id → byte offset of its btf_type in the type section (index 0, void, unused). */
  private readonly offsets: Uint32Array;
  private readonly kinds: Uint8Array;
  private readonly decoded = new Map<number, BtfType>();
  private funcsByName?: Map<string, number[]>;

  private constructor(
    private readonly dv: DataView,
    private readonly le: boolean,
    private readonly typeStart: number,
    private readonly typeEnd: number,
    private readonly strStart: number,
    private readonly strEnd: number,
    offsets: Uint32Array,
    kinds: Uint8Array,
    /** The last type id (the base's types included). */
    readonly count: number,
    /** The kernel's BTF this one is split from (a module's), else undefined. */
    readonly base?: Btf,
  ) {
    this.offsets = offsets;
    this.kinds = kinds;
  }

  /** The first type id this BTF's own type section holds (1, or the one after its base's last). */
  get firstId(): number {
    return this.base ? this.base.count + 1 : 1;
  }

  /** Where this BTF's own strings start in the offset space (after its base's string section). */
  get stringStart(): number {
    return this.base ? this.base.stringEnd : 0;
  }

  /** The end of the string offset space (this BTF's strings after its base's). */
  get stringEnd(): number {
    return this.stringStart + (this.strEnd - this.strStart);
  }

  /**
   * Checks the header and indexes the type section; throws BtfError when the bytes are not well-formed BTF.
   * With `base`, the bytes are split BTF on top of it (a module's).
   */
  static parse(bytes: Uint8Array, base?: Btf): Btf {
    if (bytes.length < HEADER_MIN) throw new BtfError(`${bytes.length} bytes is shorter than the ${HEADER_MIN}-byte header`);
    const dv = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
    const magicLe = dv.getUint16(0, true);
    const le = magicLe === BTF_MAGIC;
    if (!le && dv.getUint16(0, false) !== BTF_MAGIC) throw new BtfError(`bad magic 0x${magicLe.toString(16)} (expected 0xeb9f)`);
    const version = dv.getUint8(2);
    if (version !== 1) throw new BtfError(`unsupported version ${version}`);
    const hdrLen = dv.getUint32(4, le);
    if (hdrLen < HEADER_MIN || hdrLen > bytes.length) throw new BtfError(`header length ${hdrLen} outside the ${bytes.length} bytes`);
    const typeOff = dv.getUint32(8, le);
    const typeLen = dv.getUint32(12, le);
    const strOff = dv.getUint32(16, le);
    const strLen = dv.getUint32(20, le);
    const body = bytes.length - hdrLen;
    if (typeOff + typeLen > body)
      throw new BtfError(`type section (${typeOff}+${typeLen}) runs past the end (${body} bytes after the header): truncated?`);
    if (strOff + strLen > body)
      throw new BtfError(`string section (${strOff}+${strLen}) runs past the end (${body} bytes after the header): truncated?`);
    if (strLen > 0 && bytes[hdrLen + strOff + strLen - 1] !== 0) throw new BtfError('the string section does not end with a NUL');
    const typeStart = hdrLen + typeOff;
    const typeEnd = typeStart + typeLen;
    let offsets = new Uint32Array(1024);
    let kinds = new Uint8Array(1024);
    let id = 1;
    for (let off = typeStart; off < typeEnd; id++) {
      if (off + 12 > typeEnd) throw new BtfError(`type ${id} at offset ${off - typeStart} is cut off by the end of the type section`);
      const info = dv.getUint32(off + 4, le);
      const kind = (info >>> 24) & 0x1f;
      const extra = EXTRA[kind];
      if (!extra) throw new BtfError(`type ${id} at offset ${off - typeStart} has unknown kind ${kind}`);
      const vlen = info & 0xffff;
      const next = off + 12 + extra[0] + extra[1] * vlen;
      if (next > typeEnd) throw new BtfError(`type ${id} (kind ${kind}, ${vlen} elements) runs past the end of the type section`);
      if (id >= offsets.length) {
        const o = new Uint32Array(offsets.length * 2);
        o.set(offsets);
        offsets = o;
        const k = new Uint8Array(kinds.length * 2);
        k.set(kinds);
        kinds = k;
      }
      offsets[id] = off;
      kinds[id] = kind;
      off = next;
    }
    const first = base ? base.count + 1 : 1;
    return new Btf(dv, le, typeStart, typeEnd, hdrLen + strOff, hdrLen + strOff + strLen, offsets, kinds, first + id - 2, base);
  }

  /** The NUL-terminated string at `off` of the string section (of the base's, below this one's start). */
  str(off: number): string {
    if (this.base && off >= 0 && off < this.stringStart) return this.base.str(off);
    const at = this.strStart + off - this.stringStart;
    if (off < 0 || at >= this.strEnd) throw new BtfError(`string offset ${off} is outside the string section`);
    const bytes = new Uint8Array(this.dv.buffer, this.dv.byteOffset + at, this.strEnd - at);
    const end = bytes.indexOf(0);
    if (end < 0) throw new BtfError(`the string at offset ${off} has no terminating NUL`);
    return Buffer.from(bytes.buffer, bytes.byteOffset, end).toString('utf8');
  }

  private u32(off: number): number {
    return this.dv.getUint32(off, this.le);
  }

  private i32(off: number): number {
    return this.dv.getInt32(off, this.le);
  }

  /** The type with id `id` (0: void). */
  type(id: number): BtfType {
    if (id === 0) return { kind: 'void', id: 0 };
    if (this.base && id > 0 && id < this.firstId) return this.base.type(id);
    if (!Number.isInteger(id) || id < 0 || id > this.count) throw new BtfError(`type id ${id} is not among the ${this.count} types`);
    const hit = this.decoded.get(id);
    if (hit) return hit;
    const t = this.decode(id);
    this.decoded.set(id, t);
    return t;
  }

  private decode(id: number): BtfType {
    const local = id - this.firstId + 1;
    const off = this.offsets[local];
    const nameOff = this.u32(off);
    const info = this.u32(off + 4);
    const kind = this.kinds[local];
    const vlen = info & 0xffff;
    const kflag = info >>> 31 === 1;
    const sizeOrType = this.u32(off + 8);
    const name = () => this.str(nameOff);
    const el = off + 12;
    switch (kind) {
      case BtfKind.INT: {
        const enc = this.u32(el);
        const bits = enc & 0xff;
        const bitOffset = (enc >>> 16) & 0xff;
        const flags = (enc >>> 24) & 0x0f;
        return {
          kind: 'int',
          id,
          name: name(),
          size: sizeOrType,
          signed: (flags & 1) !== 0,
          char: (flags & 2) !== 0,
          bool: (flags & 4) !== 0,
          bitOffset,
          bits,
        };
      }
      case BtfKind.PTR:
        return { kind: 'ptr', id, type: sizeOrType };
      case BtfKind.ARRAY:
        return { kind: 'array', id, type: this.u32(el), indexType: this.u32(el + 4), nelems: this.u32(el + 8) };
      case BtfKind.STRUCT:
      case BtfKind.UNION: {
        const members: BtfMember[] = [];
        for (let i = 0; i < vlen; i++) {
          const m = el + i * 12;
          const raw = this.u32(m + 8);
          members.push({
            name: this.str(this.u32(m)),
            type: this.u32(m + 4),
            bitOffset: kflag ? raw & 0xffffff : raw,
            bitSize: kflag ? raw >>> 24 : 0,
          });
        }
        return { kind: kind === BtfKind.STRUCT ? 'struct' : 'union', id, name: name(), size: sizeOrType, members };
      }
      case BtfKind.ENUM:
      case BtfKind.ENUM64: {
        const values: Array<{ name: string; value: bigint }> = [];
        const step = kind === BtfKind.ENUM ? 8 : 12;
        for (let i = 0; i < vlen; i++) {
          const v = el + i * step;
          let value: bigint;
          if (kind === BtfKind.ENUM) value = kflag ? BigInt(this.i32(v + 4)) : BigInt(this.u32(v + 4));
          else {
            value = (BigInt(this.u32(v + 8)) << 32n) | BigInt(this.u32(v + 4));
            if (kflag) value = BigInt.asIntN(64, value);
          }
          values.push({ name: this.str(this.u32(v)), value });
        }
        return { kind: 'enum', id, name: name(), size: sizeOrType, signed: kflag, values };
      }
      case BtfKind.FWD:
        return { kind: 'fwd', id, name: name(), union: kflag };
      case BtfKind.TYPEDEF:
        return { kind: 'typedef', id, name: name(), type: sizeOrType };
      case BtfKind.VOLATILE:
        return { kind: 'volatile', id, name: '', type: sizeOrType };
      case BtfKind.CONST:
        return { kind: 'const', id, name: '', type: sizeOrType };
      case BtfKind.RESTRICT:
        return { kind: 'restrict', id, name: '', type: sizeOrType };
      case BtfKind.TYPE_TAG:
        return { kind: 'type_tag', id, name: name(), type: sizeOrType };
      case BtfKind.FUNC:
        return { kind: 'func', id, name: name(), type: sizeOrType, linkage: vlen };
      case BtfKind.FUNC_PROTO: {
        const params: Array<{ name: string; type: number }> = [];
        for (let i = 0; i < vlen; i++) params.push({ name: this.str(this.u32(el + i * 8)), type: this.u32(el + i * 8 + 4) });
        // A last parameter of type 0 with no name is `...`.
        const variadic = params.length > 0 && params[params.length - 1].type === 0 && params[params.length - 1].name === '';
        return { kind: 'func_proto', id, returnType: sizeOrType, params: variadic ? params.slice(0, -1) : params, variadic };
      }
      case BtfKind.VAR:
        return { kind: 'var', id, name: name(), type: sizeOrType, linkage: this.u32(el) };
      case BtfKind.DATASEC: {
        const vars: Array<{ type: number; offset: number; size: number }> = [];
        for (let i = 0; i < vlen; i++) {
          const v = el + i * 12;
          vars.push({ type: this.u32(v), offset: this.u32(v + 4), size: this.u32(v + 8) });
        }
        return { kind: 'datasec', id, name: name(), size: sizeOrType, vars };
      }
      case BtfKind.FLOAT:
        return { kind: 'float', id, name: name(), size: sizeOrType };
      case BtfKind.DECL_TAG:
        return { kind: 'decl_tag', id, name: name(), type: sizeOrType, componentIdx: this.i32(el) };
      default:
        throw new BtfError(`type ${id} has unknown kind ${kind}`);
    }
  }

  /**
   * The type under typedefs and qualifiers (const, volatile, restrict, type tags), and the type tags met on the way
   * (`user` for a `__user` pointee when the kernel was built with btf_type_tag).
   */
  resolve(id: number): { type: BtfType; tags: string[] } {
    const tags: string[] = [];
    let t = this.type(id);
    for (let i = 0; ; i++) {
      if (t.kind !== 'typedef' && t.kind !== 'const' && t.kind !== 'volatile' && t.kind !== 'restrict' && t.kind !== 'type_tag')
        return { type: t, tags };
      if (i >= MAX_CHAIN) throw new BtfError(`type ${id}: more than ${MAX_CHAIN} typedefs and qualifiers in a row (a cycle?)`);
      if (t.kind === 'type_tag') tags.push(t.name);
      t = this.type(t.type);
    }
  }

  /** The byte size of a type (0 for void, functions and incomplete types). */
  sizeOf(id: number, depth = 0): number {
    if (depth > MAX_CHAIN) throw new BtfError(`type ${id}: nested more than ${MAX_CHAIN} deep (a cycle?)`);
    const t = this.resolve(id).type;
    switch (t.kind) {
      case 'int':
      case 'struct':
      case 'union':
      case 'enum':
      case 'float':
      case 'datasec':
        return t.size;
      case 'ptr':
        return 8;
      case 'array':
        return t.nelems * this.sizeOf(t.type, depth + 1);
      default:
        return 0;
    }
  }

  /** A C spelling of type `id` for listings: `const char *`, `struct open_how *`, `u64`, `int[4]`. */
  typeName(id: number, depth = 0): string {
    if (depth > 16) return '…';
    const t = this.type(id);
    switch (t.kind) {
      case 'void':
        return 'void';
      case 'ptr': {
        const to = this.type(t.type);
        return to.kind === 'func_proto' ? 'void (*)()' : `${this.typeName(t.type, depth + 1)} *`;
      }
      case 'const':
      case 'volatile':
      case 'restrict':
        return `${t.kind} ${this.typeName(t.type, depth + 1)}`;
      case 'type_tag':
        return this.typeName(t.type, depth + 1);
      case 'array':
        return `${this.typeName(t.type, depth + 1)}[${t.nelems}]`;
      case 'struct':
      case 'union':
        return `${t.kind} ${t.name || '(anonymous)'}`;
      case 'enum':
        return `enum ${t.name || '(anonymous)'}`;
      case 'fwd':
        return `${t.union ? 'union' : 'struct'} ${t.name}`;
      case 'func_proto':
        return 'function';
      default:
        return t.name;
    }
  }

  /**
   * The ids of the FUNC types named `name` (static functions of different files may share one): this BTF's own
   * (a module's split BTF: the module's functions, not its base's).
   */
  funcs(name: string): number[] {
    if (!this.funcsByName) {
      const m = new Map<string, number[]>();
      for (let local = 1, id = this.firstId; id <= this.count; local++, id++) {
        if (this.kinds[local] !== BtfKind.FUNC) continue;
        const n = this.str(this.u32(this.offsets[local]));
        const list = m.get(n);
        if (list) list.push(id);
        else m.set(n, [id]);
      }
      this.funcsByName = m;
    }
    return this.funcsByName.get(name) ?? [];
  }

  /** The names of every FUNC, sorted (for listings). */
  funcNames(): string[] {
    this.funcs('');
    return [...this.funcsByName!.keys()].sort();
  }

  /** The kind number of type `id` without decoding it. */
  kindOf(id: number): number {
    if (id === 0) return 0;
    if (this.base && id > 0 && id < this.firstId) return this.base.kindOf(id);
    if (!Number.isInteger(id) || id < 0 || id > this.count) throw new BtfError(`type id ${id} is not among the ${this.count} types`);
    return this.kinds[id - this.firstId + 1];
  }

  /** The byte range the sections occupy (for messages and tests). */
  get sections(): { types: [number, number]; strings: [number, number] } {
    return { types: [this.typeStart, this.typeEnd], strings: [this.strStart, this.strEnd] };
  }
}

/** `parseBtf(bytes[, base])`: Btf.parse (split BTF on top of `base`: a module's). */
export const parseBtf = (bytes: Uint8Array, base?: Btf): Btf => Btf.parse(bytes, base);

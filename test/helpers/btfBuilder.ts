// Crafted raw BTF for the parser's tests: types appended one by one (ids from 1) in the layout of
// include/uapi/linux/btf.h, then a header, the type section and the string section.
import { BtfKind } from '../../src/core/binary/btf';

// With `base`, the builder writes split BTF on top of it (a module's /sys/kernel/btf/MODULE): ids continue after
// the base's last, string offsets after the base's string section, and a name the base holds is the base's offset.
export class BtfBuilder {
  private readonly types: number[][] = [];
  private readonly strs: string[] = [''];
  private readonly strOff = new Map<string, number>();
  private strLen = 1;

  constructor(private readonly base?: BtfBuilder) {
    this.strOff.set('', base ? base.stringEnd : 0);
  }

  /** The first string offset past this builder's strings (where a split BTF on top of it starts its own). */
  get stringEnd(): number {
    return (this.base ? this.base.stringEnd : 0) + this.strLen;
  }

  /** The last type id (a base's included). */
  get lastId(): number {
    return (this.base ? this.base.lastId : 0) + this.types.length;
  }

  str(s: string): number {
    const inBase = this.base?.lookup(s);
    if (inBase !== undefined) return inBase;
    const had = this.strOff.get(s);
    if (had !== undefined) return had;
    const off = (this.base ? this.base.stringEnd : 0) + this.strLen;
    this.strOff.set(s, off);
    this.strs.push(s);
    this.strLen += Buffer.byteLength(s) + 1;
    return off;
  }

  private lookup(s: string): number | undefined {
    return this.base?.lookup(s) ?? (s === '' && this.base ? undefined : this.strOff.get(s));
  }

  /** Appends a type (its u32 words) and returns its id. */
  private add(name: string, kind: number, vlen: number, kflag: boolean, sizeOrType: number, extra: number[] = []): number {
    const info = ((kflag ? 1 : 0) << 31) | (kind << 24) | vlen;
    this.types.push([this.str(name), info >>> 0, sizeOrType >>> 0, ...extra.map((x) => x >>> 0)]);
    return this.lastId;
  }

  int(
    name: string,
    size: number,
    signed: boolean,
    extra: { char?: boolean; bool?: boolean; bitOffset?: number; bits?: number } = {},
  ): number {
    const enc = ((signed ? 1 : 0) | (extra.char ? 2 : 0) | (extra.bool ? 4 : 0)) << 24;
    return this.add(name, BtfKind.INT, 0, false, size, [enc | ((extra.bitOffset ?? 0) << 16) | (extra.bits ?? size * 8)]);
  }
  ptr(to: number): number {
    return this.add('', BtfKind.PTR, 0, false, to);
  }
  array(elem: number, index: number, n: number): number {
    return this.add('', BtfKind.ARRAY, 0, false, 0, [elem, index, n]);
  }
  struct(
    name: string,
    size: number,
    members: Array<{ name: string; type: number; bitOffset: number; bitSize?: number }>,
    union = false,
  ): number {
    const kflag = members.some((m) => m.bitSize !== undefined);
    const words = members.flatMap((m) => [this.str(m.name), m.type, kflag ? ((m.bitSize ?? 0) << 24) | m.bitOffset : m.bitOffset]);
    return this.add(name, union ? BtfKind.UNION : BtfKind.STRUCT, members.length, kflag, size, words);
  }
  enum(name: string, size: number, signed: boolean, values: Array<[string, number]>): number {
    return this.add(
      name,
      BtfKind.ENUM,
      values.length,
      signed,
      size,
      values.flatMap(([n, v]) => [this.str(n), v]),
    );
  }
  enum64(name: string, signed: boolean, values: Array<[string, bigint]>): number {
    const words = values.flatMap(([n, v]) => {
      const u = BigInt.asUintN(64, v);
      return [this.str(n), Number(u & 0xffffffffn), Number(u >> 32n)];
    });
    return this.add(name, BtfKind.ENUM64, values.length, signed, 8, words);
  }
  fwd(name: string, union: boolean): number {
    return this.add(name, BtfKind.FWD, 0, union, 0);
  }
  ref(kind: 'typedef' | 'volatile' | 'const' | 'restrict' | 'type_tag', to: number, name = ''): number {
    const k = {
      typedef: BtfKind.TYPEDEF,
      volatile: BtfKind.VOLATILE,
      const: BtfKind.CONST,
      restrict: BtfKind.RESTRICT,
      type_tag: BtfKind.TYPE_TAG,
    }[kind];
    return this.add(name, k, 0, false, to);
  }
  /** Reserves an id whose target is set later (for cycles). */
  patchRef(id: number, to: number): void {
    this.types[id - 1 - (this.base ? this.base.lastId : 0)][2] = to;
  }
  func(name: string, proto: number, linkage = 1): number {
    return this.add(name, BtfKind.FUNC, linkage, false, proto);
  }
  proto(ret: number, params: Array<[string, number]>): number {
    return this.add(
      '',
      BtfKind.FUNC_PROTO,
      params.length,
      false,
      ret,
      params.flatMap(([n, t]) => [this.str(n), t]),
    );
  }
  variable(name: string, type: number, linkage: number): number {
    return this.add(name, BtfKind.VAR, 0, false, type, [linkage]);
  }
  datasec(name: string, size: number, vars: Array<[number, number, number]>): number {
    return this.add(name, BtfKind.DATASEC, vars.length, false, size, vars.flat());
  }
  float(name: string, size: number): number {
    return this.add(name, BtfKind.FLOAT, 0, false, size);
  }
  declTag(name: string, type: number, component: number): number {
    return this.add(name, BtfKind.DECL_TAG, 0, false, type, [component]);
  }

  bytes(): Uint8Array {
    const typeBytes = Buffer.alloc(this.types.reduce((n, t) => n + t.length * 4, 0));
    let o = 0;
    for (const t of this.types) for (const w of t) o = typeBytes.writeUInt32LE(w, o);
    const strBytes = Buffer.concat(this.strs.map((s) => Buffer.from(`${s}\0`)));
    const hdr = Buffer.alloc(24);
    hdr.writeUInt16LE(0xeb9f, 0);
    hdr.writeUInt8(1, 2);
    hdr.writeUInt8(0, 3);
    hdr.writeUInt32LE(24, 4);
    hdr.writeUInt32LE(0, 8);
    hdr.writeUInt32LE(typeBytes.length, 12);
    hdr.writeUInt32LE(typeBytes.length, 16);
    hdr.writeUInt32LE(strBytes.length, 20);
    return new Uint8Array(Buffer.concat([hdr, typeBytes, strBytes]));
  }
}

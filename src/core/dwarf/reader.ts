// A bounds-checked cursor over one DWARF section. Every malformed read becomes a DwarfFormatError naming the
// section and offset, so hostile input yields a typed error, never a RangeError or a hang.
//
// Number representation (deliberate): every value is a JS `number`. 8-byte values are read as hi*2^32+lo,
// which is exact below 2^53. Addresses of user-space code on x86-64/AArch64 are below 2^48, so they are always
// exact; the only larger "addresses" real DWARF carries are the tombstones -1/-2 (and kernel-half addresses that
// uprobes cannot target anyway), which `isTombstone()` recognises because they round to >= 2^53. Constant
// values that may need all 64 bits (DW_OP_const8u, DW_FORM_data8 const_value) are available as bigint via
// `u64big()`.

export class DwarfFormatError extends Error {
  constructor(
    readonly section: string,
    readonly offset: number,
    readonly what: string,
  ) {
    super(
      `malformed DWARF in ${section} at offset 0x${offset.toString(16)}: ${what}; the debug info is damaged or ` +
        `produced by an unsupported compiler — rebuild with -g, or report the binary`,
    );
    this.name = 'DwarfFormatError';
  }
}

/** Addresses at or above 2^53 (the -1/-2 tombstones of discarded sections) are not real code addresses. */
export const MAX_ADDRESS = 2 ** 53;
export function isTombstone(addr: number): boolean {
  return addr >= MAX_ADDRESS;
}

/**
 * An address that marks code the linker discarded: the -1/-2 tombstones (lld, newer binutils), their 32-bit
 * forms, and 0 — what older linkers resolve a discarded section's relocation to. 0 is real code only in a
 * relocatable object (.o), hence `zeroIsCode`.
 */
export function isDeadAddress(addr: number, addrSize: number, zeroIsCode: boolean): boolean {
  return (addr === 0 && !zeroIsCode) || addr >= MAX_ADDRESS || (addrSize === 4 && addr >= 0xfffffff0);
}

const TWO32 = 2 ** 32;
// Readers are cheap and short-lived; the DataView over a section is made once.
const views = new WeakMap<Uint8Array, DataView>();
const utf8 = new TextDecoder('utf-8');

export class Reader {
  readonly dv: DataView;
  pos: number;
  end: number;

  constructor(
    readonly buf: Uint8Array,
    readonly section: string,
    readonly le: boolean,
    start = 0,
    end = buf.length,
  ) {
    let dv = views.get(buf);
    if (!dv) views.set(buf, (dv = new DataView(buf.buffer, buf.byteOffset, buf.byteLength)));
    this.dv = dv;
    this.pos = start;
    this.end = Math.min(end, buf.length);
  }

  fail(what: string, at = this.pos): never {
    throw new DwarfFormatError(this.section, at, what);
  }

  private need(n: number): void {
    if (this.pos + n > this.end) this.fail(`need ${n} byte(s), only ${Math.max(0, this.end - this.pos)} left`);
  }

  /** Restrict the cursor to [pos, pos+len) of the section, failing if that runs past the current end. */
  sub(start: number, len: number, what: string): Reader {
    if (start < 0 || start + len > this.end || len < 0) this.fail(`${what} runs past the end of the section`, start);
    return new Reader(this.buf, this.section, this.le, start, start + len);
  }

  seek(pos: number): void {
    if (pos < 0 || pos > this.end) this.fail('offset out of range', pos);
    this.pos = pos;
  }

  skip(n: number): void {
    this.need(n);
    this.pos += n;
  }

  get left(): number {
    return this.end - this.pos;
  }

  u8(): number {
    if (this.pos >= this.end) this.fail('need 1 byte, none left');
    return this.buf[this.pos++];
  }
  s8(): number {
    const v = this.u8();
    return v >= 0x80 ? v - 0x100 : v;
  }
  u16(): number {
    this.need(2);
    const v = this.dv.getUint16(this.pos, this.le);
    this.pos += 2;
    return v;
  }
  s16(): number {
    this.need(2);
    const v = this.dv.getInt16(this.pos, this.le);
    this.pos += 2;
    return v;
  }
  u24(): number {
    this.need(3);
    const b = this.buf,
      p = this.pos;
    this.pos += 3;
    return this.le ? b[p] | (b[p + 1] << 8) | (b[p + 2] << 16) : (b[p] << 16) | (b[p + 1] << 8) | b[p + 2];
  }
  u32(): number {
    this.need(4);
    const v = this.dv.getUint32(this.pos, this.le);
    this.pos += 4;
    return v;
  }
  s32(): number {
    this.need(4);
    const v = this.dv.getInt32(this.pos, this.le);
    this.pos += 4;
    return v;
  }
  /** 8-byte unsigned; exact below 2^53 (see the header). */
  u64(): number {
    this.need(8);
    const a = this.dv.getUint32(this.pos, this.le);
    const b = this.dv.getUint32(this.pos + 4, this.le);
    this.pos += 8;
    return this.le ? b * TWO32 + a : a * TWO32 + b;
  }
  s64(): number {
    this.need(8);
    const v = this.dv.getBigInt64(this.pos, this.le);
    this.pos += 8;
    return Number(v);
  }
  u64big(): bigint {
    this.need(8);
    const v = this.dv.getBigUint64(this.pos, this.le);
    this.pos += 8;
    return v;
  }
  /** Unsigned of `size` bytes (1, 2, 4 or 8): addresses and offsets. */
  uN(size: number): number {
    switch (size) {
      case 1:
        return this.u8();
      case 2:
        return this.u16();
      case 4:
        return this.u32();
      case 8:
        return this.u64();
      default:
        return this.fail(`unsupported field size ${size}`);
    }
  }

  /** ULEB128, at most 10 bytes (64 bits); precision above 2^53 is lost like u64(). */
  uleb(): number {
    const b = this.buf,
      end = this.end;
    let p = this.pos;
    if (p < end && b[p] < 0x80) {
      this.pos = p + 1;
      return b[p];
    }
    let result = 0,
      mul = 1;
    for (let i = 0; i < 10; i++) {
      if (p >= end) this.fail('LEB128 runs past the end', this.pos);
      const byte = b[p++];
      result += (byte & 0x7f) * mul;
      mul *= 128;
      if (byte < 0x80) {
        this.pos = p;
        return result;
      }
    }
    return this.fail('LEB128 longer than 10 bytes', this.pos);
  }

  sleb(): number {
    const b = this.buf,
      end = this.end;
    let p = this.pos,
      result = 0,
      mul = 1;
    for (let i = 0; i < 10; i++) {
      if (p >= end) this.fail('LEB128 runs past the end', this.pos);
      const byte = b[p++];
      result += (byte & 0x7f) * mul;
      mul *= 128;
      if (byte < 0x80) {
        this.pos = p;
        return byte & 0x40 ? result - mul : result;
      }
    }
    return this.fail('LEB128 longer than 10 bytes', this.pos);
  }

  skipLeb(): void {
    const b = this.buf,
      end = this.end;
    let p = this.pos;
    for (let i = 0; i < 10; i++) {
      if (p >= end) this.fail('LEB128 runs past the end', this.pos);
      if (b[p++] < 0x80) {
        this.pos = p;
        return;
      }
    }
    this.fail('LEB128 longer than 10 bytes', this.pos);
  }

  /** The initial length field: returns the unit length and whether the unit uses 64-bit DWARF. */
  initialLength(): { length: number; is64: boolean } {
    const l = this.u32();
    if (l === 0xffffffff) return { length: this.u64(), is64: true };
    if (l >= 0xfffffff0) this.fail(`reserved initial length 0x${l.toString(16)}`, this.pos - 4);
    return { length: l, is64: false };
  }

  offset(is64: boolean): number {
    return is64 ? this.u64() : this.u32();
  }

  /** NUL-terminated string at the cursor. */
  cstr(): string {
    const start = this.pos;
    const nul = this.buf.indexOf(0, start);
    if (nul < 0 || nul >= this.end) this.fail('unterminated string');
    this.pos = nul + 1;
    return decodeString(this.buf, start, nul);
  }

  skipCstr(): void {
    const nul = this.buf.indexOf(0, this.pos);
    if (nul < 0 || nul >= this.end) this.fail('unterminated string');
    this.pos = nul + 1;
  }
}

/** Decode [start, end) as UTF-8 with an ASCII fast path (most DWARF names are short ASCII identifiers). */
export function decodeString(buf: Uint8Array, start: number, end: number): string {
  if (end - start <= 64) {
    for (let i = start; i < end; i++) if (buf[i] >= 0x80) return utf8.decode(buf.subarray(start, end));
    return String.fromCharCode.apply(null, buf.subarray(start, end) as unknown as number[]);
  }
  return utf8.decode(buf.subarray(start, end));
}

// Names repeat (every `int`, every parameter called `p`): string-section lookups are memoised per buffer.
const stringCache = new WeakMap<Uint8Array, Map<number, string>>();

/** NUL-terminated string at `offset` of a string section (.debug_str, .debug_line_str). */
export function stringAt(buf: Uint8Array | undefined, section: string, offset: number): string {
  if (!buf || offset < 0 || offset >= buf.length) throw new DwarfFormatError(section, offset, 'string offset out of range');
  let cache = stringCache.get(buf);
  if (!cache) stringCache.set(buf, (cache = new Map()));
  const hit = cache.get(offset);
  if (hit !== undefined) return hit;
  const nul = buf.indexOf(0, offset);
  if (nul < 0) throw new DwarfFormatError(section, offset, 'unterminated string');
  const s = decodeString(buf, offset, nul);
  cache.set(offset, s);
  return s;
}

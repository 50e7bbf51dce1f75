// The one bounds-checked byte reader of the ELF, DWARF and call-frame code. Every read that would leave the
// reader's window throws the error its owner names (ElfFormatError by default, DwarfFormatError for DWARF,
// CfiError for call-frame information) with the region and offset, which is what turns a hostile file into a
// clean error instead of a RangeError, a silent zero, a runaway allocation or a hang.
//
// It is the DWARF indexer's inner loop: one class, fields set once in the constructor, no allocation per read,
// DataView reads over a view made once per buffer.
//
// Number representation (deliberate): u64() and the LEB128 readers return a JS `number`, exact below 2^53
// (8-byte values are read as hi·2^32 + lo, one correctly rounded addition). User-space code addresses on
// x86-64/AArch64 are below 2^48, so they are always exact; the larger values real files carry (the -1/-2
// tombstones of discarded sections) round to >= 2^53 and stay recognisable. Where all 64 bits matter, u64big()
// and wordBig() give a bigint, and u64Exact()/wordExact() refuse what a number cannot hold.
import { ElfFormatError } from './errors';

/** Builds the error a reader throws: `where` is the region (a section name…), `offset` the absolute offset. */
export type FormatErrorOf = (where: string, offset: number, detail: string) => Error;

export const elfFormatError: FormatErrorOf = (where, offset, detail) => new ElfFormatError(where, offset, detail);

/** Pointer encodings of .eh_frame (DW_EH_PE_*): the low nibble is the format, bits 4-6 the application. */
export const DW_EH_PE_omit = 0xff;

const TWO32 = 2 ** 32;
// Readers are cheap and short-lived; the DataView over a buffer is made once.
const views = new WeakMap<Uint8Array, DataView>();
const utf8 = new TextDecoder('utf-8');

export class ByteReader {
  readonly dv: DataView;
  pos: number;
  /** One past the last readable byte (an index into `buf`). */
  end: number;

  constructor(
    readonly buf: Uint8Array,
    readonly le: boolean,
    /** Region name for error messages (".symtab", "ELF header", ".debug_info"…). */
    readonly where: string,
    /** The error a failed read throws. */
    readonly error: FormatErrorOf = elfFormatError,
    start = 0,
    end = buf.length,
    /** Offset of buf[0] in the file (0 when errors name section-relative offsets). */
    readonly base = 0,
  ) {
    let dv = views.get(buf);
    if (!dv) views.set(buf, (dv = new DataView(buf.buffer, buf.byteOffset, buf.byteLength)));
    this.dv = dv;
    this.pos = start;
    this.end = Math.min(end, buf.length);
  }

  fail(detail: string, at = this.pos): never {
    throw this.error(this.where, this.base + at, detail);
  }

  /** Bytes left before the end of the window. */
  get left(): number {
    return this.end - this.pos;
  }

  need(n: number): void {
    if (!(n >= 0 && this.pos + n <= this.end) || !Number.isInteger(n)) this.short(n);
  }

  private short(n: number): never {
    return this.fail(`needs ${n} byte${n === 1 ? '' : 's'} but only ${Math.max(0, this.end - this.pos)} remain`);
  }

  /** A reader over [start, start+len) of the same buffer, failing if that leaves this window. */
  sub(start: number, len: number, what: string): ByteReader {
    if (!(start >= 0 && len >= 0 && start + len <= this.end)) this.fail(`${what} runs past the end of ${this.where}`, start);
    return new ByteReader(this.buf, this.le, this.where, this.error, start, start + len, this.base);
  }

  seek(pos: number): this {
    if (!(pos >= 0 && pos <= this.end) || !Number.isInteger(pos))
      this.fail(`offset 0x${pos.toString(16)} is outside the ${this.end}-byte ${this.where}`, 0);
    this.pos = pos;
    return this;
  }

  skip(n: number): void {
    this.need(n);
    this.pos += n;
  }

  /** Moves to the next multiple of `n` (not past the end). */
  align(n: number): void {
    const rem = this.pos % n;
    if (rem !== 0) this.pos = Math.min(this.end, this.pos + (n - rem));
  }

  u8(): number {
    if (this.pos >= this.end) this.short(1);
    return this.buf[this.pos++];
  }
  s8(): number {
    const v = this.u8();
    return v >= 0x80 ? v - 0x100 : v;
  }
  u16(): number {
    if (this.pos + 2 > this.end) this.short(2);
    const v = this.dv.getUint16(this.pos, this.le);
    this.pos += 2;
    return v;
  }
  s16(): number {
    if (this.pos + 2 > this.end) this.short(2);
    const v = this.dv.getInt16(this.pos, this.le);
    this.pos += 2;
    return v;
  }
  u24(): number {
    if (this.pos + 3 > this.end) this.short(3);
    const b = this.buf,
      p = this.pos;
    this.pos += 3;
    return this.le ? b[p] | (b[p + 1] << 8) | (b[p + 2] << 16) : (b[p] << 16) | (b[p + 1] << 8) | b[p + 2];
  }
  u32(): number {
    if (this.pos + 4 > this.end) this.short(4);
    const v = this.dv.getUint32(this.pos, this.le);
    this.pos += 4;
    return v;
  }
  s32(): number {
    if (this.pos + 4 > this.end) this.short(4);
    const v = this.dv.getInt32(this.pos, this.le);
    this.pos += 4;
    return v;
  }
  /** 8-byte unsigned as a number; exact below 2^53 (see the header). */
  u64(): number {
    if (this.pos + 8 > this.end) this.short(8);
    const a = this.dv.getUint32(this.pos, this.le);
    const b = this.dv.getUint32(this.pos + 4, this.le);
    this.pos += 8;
    return this.le ? b * TWO32 + a : a * TWO32 + b;
  }
  s64(): number {
    return Number(this.s64big());
  }
  u64big(): bigint {
    if (this.pos + 8 > this.end) this.short(8);
    const v = this.dv.getBigUint64(this.pos, this.le);
    this.pos += 8;
    return v;
  }
  s64big(): bigint {
    if (this.pos + 8 > this.end) this.short(8);
    const v = this.dv.getBigInt64(this.pos, this.le);
    this.pos += 8;
    return v;
  }
  /** Unsigned of `size` bytes (1, 2, 4 or 8): DWARF addresses and offsets. */
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
  /** An address-sized word (4 or 8 bytes by ELF class) as an exact bigint. */
  wordBig(size: 4 | 8): bigint {
    return size === 8 ? this.u64big() : BigInt(this.u32());
  }
  /** An 8-byte file-space quantity (offset, size) that must be exact as a number; rejects values past 2^53. */
  u64Exact(what: string): number {
    const at = this.pos;
    const v = this.u64big();
    if (v > BigInt(Number.MAX_SAFE_INTEGER)) this.fail(`${what} 0x${v.toString(16)} is impossibly large`, at);
    return Number(v);
  }
  wordExact(size: 4 | 8, what: string): number {
    return size === 8 ? this.u64Exact(what) : this.u32();
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

  /** SLEB128, at most 10 bytes. */
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

  /** DWARF's initial length field: the unit length and whether the unit uses 64-bit DWARF. */
  initialLength(): { length: number; is64: boolean } {
    const l = this.u32();
    if (l === 0xffffffff) return { length: this.u64(), is64: true };
    if (l >= 0xfffffff0) this.fail(`reserved initial length 0x${l.toString(16)}`, this.pos - 4);
    return { length: l, is64: false };
  }

  /** A DWARF section offset: 8 bytes in 64-bit DWARF, else 4. */
  offset(is64: boolean): number {
    return is64 ? this.u64() : this.u32();
  }

  /**
   * A pointer in an .eh_frame encoding (DW_EH_PE_*): 0 for DW_EH_PE_omit; pc-relative ones are relative to
   * `sectionAddr` + the field's position. Data-relative values come back as read (no data base is known here).
   */
  encodedPointer(enc: number, addressSize: 4 | 8, sectionAddr: number): number {
    if (enc === DW_EH_PE_omit) return 0;
    const at = this.pos;
    let v: number;
    switch (enc & 0x0f) {
      case 0x00:
        v = addressSize === 8 ? this.u64() : this.u32();
        break;
      case 0x01:
        v = this.uleb();
        break;
      case 0x02:
        v = this.u16();
        break;
      case 0x03:
        v = this.u32();
        break;
      case 0x04:
      case 0x0c:
        v = this.u64();
        break;
      case 0x09:
        v = this.sleb();
        break;
      case 0x0a:
        v = this.s16();
        break;
      case 0x0b:
        v = this.s32();
        break;
      default:
        return this.fail(`unsupported pointer encoding 0x${enc.toString(16)}`);
    }
    switch (enc & 0x70) {
      case 0x00:
        return v;
      case 0x10:
        return sectionAddr + at + v; // pcrel
      case 0x30:
        return v; // datarel: not used for FDE ranges on x86-64/arm64 executables
      default:
        return this.fail(`unsupported pointer application 0x${(enc & 0x70).toString(16)}`);
    }
  }

  /** `n` bytes at the cursor, as a view (not a copy). */
  bytes(n: number): Uint8Array {
    this.need(n);
    const out = this.buf.subarray(this.pos, this.pos + n);
    this.pos += n;
    return out;
  }

  /** NUL-terminated UTF-8 string at the cursor; throws if the terminator is missing inside the window. */
  cstr(): string {
    const start = this.pos;
    const nul = this.buf.indexOf(0, start);
    if (nul < 0 || nul >= this.end) this.fail('string runs past the end (no NUL terminator)');
    this.pos = nul + 1;
    return decodeString(this.buf, start, nul);
  }

  skipCstr(): void {
    const nul = this.buf.indexOf(0, this.pos);
    if (nul < 0 || nul >= this.end) this.fail('string runs past the end (no NUL terminator)');
    this.pos = nul + 1;
  }
}

/** A reader over an ELF region whose failed reads throw ElfFormatError; `fileOffset` is where `bytes` begins. */
export function elfReader(bytes: Uint8Array, le: boolean, where: string, fileOffset = 0, start = 0): ByteReader {
  return new ByteReader(bytes, le, where, elfFormatError, start, bytes.length, fileOffset);
}

/** Decodes [start, end) as UTF-8 with an ASCII fast path (most symbol and DWARF names are short identifiers). */
export function decodeString(buf: Uint8Array, start: number, end: number): string {
  if (end - start <= 64) {
    for (let i = start; i < end; i++) if (buf[i] >= 0x80) return utf8.decode(buf.subarray(start, end));
    return String.fromCharCode.apply(null, buf.subarray(start, end) as unknown as number[]);
  }
  return utf8.decode(buf.subarray(start, end));
}

/** Reads a NUL-terminated string at `off` of an ELF string table; bounds-checked. */
export function stringAt(table: Uint8Array, off: number, where: string): string {
  if (off < 0 || off >= table.length)
    throw new ElfFormatError(where, off, `string offset 0x${off.toString(16)} is outside the ${table.length}-byte string table`);
  const end = table.indexOf(0, off);
  if (end < 0) throw new ElfFormatError(where, off, 'string runs past the end of the string table');
  // Symbol tables ask this ~100k times: decode in place rather than wrapping a new Buffer each time.
  return Buffer.isBuffer(table)
    ? table.toString('utf8', off, end)
    : Buffer.from(table.buffer, table.byteOffset + off, end - off).toString('utf8');
}

/** `0x…` lower-case hex, the one address format of the contracts. */
export function hex(v: bigint | number): string {
  return `0x${v.toString(16)}`;
}

// A bounds-checked reader over one region of the file. Every read that would leave the region throws an
// ElfFormatError naming the region and the offset, which is what turns a hostile file into a clean error
// instead of a RangeError, a silent zero or a runaway allocation.
import { ElfFormatError } from './errors';

export class Cursor {
  pos: number;
  private readonly view: DataView;

  constructor(
    readonly bytes: Uint8Array,
    readonly littleEndian: boolean,
    /** Region name for error messages (".symtab", "ELF header"…). */
    readonly where: string,
    /** File offset of bytes[0], so errors can name the absolute offset. */
    readonly base = 0,
    start = 0,
  ) {
    this.view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
    this.pos = start;
  }

  get length(): number {
    return this.bytes.length;
  }

  get remaining(): number {
    return this.bytes.length - this.pos;
  }

  fail(detail: string, at = this.pos): never {
    throw new ElfFormatError(this.where, this.base + at, detail);
  }

  need(n: number): void {
    if (!Number.isInteger(n) || n < 0 || this.pos < 0 || this.pos + n > this.bytes.length) {
      this.fail(`needs ${n} bytes but only ${Math.max(0, this.bytes.length - this.pos)} remain`);
    }
  }

  seek(pos: number): this {
    if (!Number.isInteger(pos) || pos < 0 || pos > this.bytes.length)
      this.fail(`offset 0x${pos.toString(16)} is outside the ${this.bytes.length}-byte region`, 0);
    this.pos = pos;
    return this;
  }

  skip(n: number): void {
    this.need(n);
    this.pos += n;
  }

  u8(): number {
    this.need(1);
    return this.bytes[this.pos++];
  }

  u16(): number {
    this.need(2);
    const v = this.view.getUint16(this.pos, this.littleEndian);
    this.pos += 2;
    return v;
  }

  u32(): number {
    this.need(4);
    const v = this.view.getUint32(this.pos, this.littleEndian);
    this.pos += 4;
    return v;
  }

  u64(): bigint {
    this.need(8);
    const v = this.view.getBigUint64(this.pos, this.littleEndian);
    this.pos += 8;
    return v;
  }

  /** An address-sized word (4 or 8 bytes by ELF class), always as bigint. */
  word(size: 4 | 8): bigint {
    return size === 8 ? this.u64() : BigInt(this.u32());
  }

  /** A 64-bit quantity that must be a file-space number (offset/size); rejects values past 2^53. */
  u64Number(what: string): number {
    const at = this.pos;
    const v = this.u64();
    if (v > BigInt(Number.MAX_SAFE_INTEGER)) this.fail(`${what} 0x${v.toString(16)} is impossibly large`, at);
    return Number(v);
  }

  wordNumber(size: 4 | 8, what: string): number {
    return size === 8 ? this.u64Number(what) : this.u32();
  }

  bytesAt(n: number): Uint8Array {
    this.need(n);
    const out = this.bytes.subarray(this.pos, this.pos + n);
    this.pos += n;
    return out;
  }

  /** NUL-terminated string; throws if the terminator is missing inside the region. */
  cstring(): string {
    const end = this.bytes.indexOf(0, this.pos);
    if (end < 0) this.fail('string runs past the end of the region (no NUL terminator)');
    const s = Buffer.from(this.bytes.buffer, this.bytes.byteOffset + this.pos, end - this.pos).toString('utf8');
    this.pos = end + 1;
    return s;
  }

  align(n: number): void {
    const rem = this.pos % n;
    if (rem !== 0) this.pos = Math.min(this.bytes.length, this.pos + (n - rem));
  }
}

/** Reads a NUL-terminated string at `off` of a string table; bounds-checked. */
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

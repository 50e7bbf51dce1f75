// Ring-buffer pages built byte by byte, as trace_pipe_raw returns them (layout in src/core/tracefs/rawPages.ts):
// for the decoder's unit tests and its benchmark.
import type { EventFormat } from '../../src/core/tracefs/rawFormat';

/** A 64-bit kernel's header_page with 4 KiB pages, as this machine prints it. */
export const HEADER_PAGE_TEXT = [
  '\tfield: u64 timestamp;\toffset:0;\tsize:8;\tsigned:0;',
  '\tfield: local_t commit;\toffset:8;\tsize:8;\tsigned:1;',
  '\tfield: int overwrite;\toffset:8;\tsize:1;\tsigned:1;',
  '\tfield: char data;\toffset:16;\tsize:4080;\tsigned:0;',
  '',
].join('\n');

export const HEADER_EVENT_TEXT = [
  '# compressed entry header',
  '\ttype_len    :    5 bits',
  '\ttime_delta  :   27 bits',
  '\tarray       :   32 bits',
  '',
  '\tpadding     : type == 29',
  '\ttime_extend : type == 30',
  '\ttime_stamp : type == 31',
  '\tdata max type_len  == 28',
  '',
].join('\n');

/** A probe event's format file in this kernel's layout: common fields, `__probe_ip`, then `fields` (type, name[, size]). */
export function probeFormatText(
  name: string,
  id: number,
  fields: Array<[string, string, number, number?]>,
  fmt: string,
  ret = false,
): string {
  const lines = [
    `name: ${name}`,
    `ID: ${id}`,
    'format:',
    '\tfield:unsigned short common_type;\toffset:0;\tsize:2;\tsigned:0;',
    '\tfield:unsigned char common_flags;\toffset:2;\tsize:1;\tsigned:0;',
    '\tfield:unsigned char common_preempt_count;\toffset:3;\tsize:1;\tsigned:0;',
    '\tfield:int common_pid;\toffset:4;\tsize:4;\tsigned:1;',
    '',
  ];
  let off = 8;
  const probe = ret ? ['__probe_func', '__probe_ret_ip'] : ['__probe_ip'];
  for (const p of probe) {
    lines.push(`\tfield:unsigned long ${p};\toffset:${off};\tsize:8;\tsigned:0;`);
    off += 8;
  }
  for (const [type, fname, size, signed] of fields) {
    const s = signed ?? (/^s|__data_loc/.test(type) ? 1 : 0);
    lines.push(`\tfield:${type} ${fname};\toffset:${off};\tsize:${size};\tsigned:${s};`);
    off += size;
  }
  lines.push('', `print fmt: "${ret ? '(%lx <- %lx)' : '(%lx)'} ${fmt.replace(/"/g, '\\"')}", REC->${probe.join(', REC->')}`, '');
  return lines.join('\n');
}

export type FieldInput = number | bigint | string | null | number[];

/**
 * A record's bytes for `format`: common_type = its id, common_pid = pid, each named field written at its offset
 * (integers little-endian, arrays element by element, strings after the fixed fields with their NUL, null = a
 * faulted string of length 0); unnamed fields stay zero.
 */
export function recordBytes(format: EventFormat, pid: number, values: Record<string, FieldInput>): Buffer {
  const fixed = Buffer.alloc(format.minSize);
  fixed.writeUInt16LE(format.id, 0);
  fixed.writeInt32LE(pid, format.byName.get('common_pid')!.offset);
  const tail: Buffer[] = [];
  let tailLen = 0;
  for (const [name, v] of Object.entries(values)) {
    const f = format.byName.get(name);
    if (!f) throw new Error(`no field ${name}`);
    if (f.kind === 'dataLoc' || f.kind === 'relLoc') {
      const bytes = v === null ? Buffer.alloc(0) : Buffer.concat([Buffer.from(String(v), 'utf8'), Buffer.alloc(1)]);
      const at = format.minSize + tailLen;
      const off = f.kind === 'relLoc' ? at - (f.offset + f.size) : at;
      fixed.writeUInt32LE(((bytes.length << 16) | off) >>> 0, f.offset);
      tail.push(bytes);
      tailLen += bytes.length;
    } else if (f.kind === 'array' && typeof v === 'string') {
      Buffer.from(v, 'utf8').copy(fixed, f.offset, 0, f.size);
    } else if (f.kind === 'array') {
      (v as number[]).forEach((e, k) => writeInt(fixed, f.offset + k * f.elemSize, f.elemSize, BigInt(e)));
    } else writeInt(fixed, f.offset, f.size, BigInt(v as number | bigint));
  }
  return Buffer.concat([fixed, ...tail]);
}

function writeInt(buf: Buffer, o: number, size: number, v: bigint): void {
  const u = BigInt.asUintN(size * 8, v);
  for (let k = 0; k < size; k++) buf[o + k] = Number((u >> BigInt(8 * k)) & 0xffn);
}

/** A page under construction; every method appends one ring-buffer record. */
export class PageBuilder {
  private readonly parts: Buffer[] = [];
  private len = 0;

  constructor(
    private readonly ts: bigint,
    private readonly pageSize = 4096,
    private readonly dataOffset = 16,
  ) {}

  get length(): number {
    return this.len;
  }

  private push(b: Buffer): this {
    this.parts.push(b);
    this.len += b.length;
    return this;
  }

  private static header(type: number, delta: number): Buffer {
    const b = Buffer.alloc(4);
    b.writeUInt32LE(((delta << 5) | type) >>> 0);
    return b;
  }

  /** A data record: type_len = its 4-byte words when 1–28 of them fit (and `long` is unset), else a length word. */
  data(payload: Buffer, delta: number, long = false): this {
    const padded = Buffer.concat([payload, Buffer.alloc((4 - (payload.length % 4)) % 4)]);
    const words = padded.length / 4;
    if (!long && words >= 1 && words <= 28) return this.push(Buffer.concat([PageBuilder.header(words, delta), padded]));
    const lenWord = Buffer.alloc(4);
    lenWord.writeUInt32LE(padded.length + 4);
    return this.push(Buffer.concat([PageBuilder.header(0, delta), lenWord, padded]));
  }

  /** type_len 30: adds `delta` ns (array × 2^27 + time_delta). */
  extend(delta: bigint): this {
    const w = Buffer.alloc(4);
    w.writeUInt32LE(Number(delta >> 27n));
    return this.push(Buffer.concat([PageBuilder.header(30, Number(delta & 0x7ffffffn)), w]));
  }

  /** type_len 31: the clock becomes `abs` (its low 59 bits stored). */
  stamp(abs: bigint): this {
    const low = abs & ((1n << 59n) - 1n);
    const w = Buffer.alloc(4);
    w.writeUInt32LE(Number(low >> 27n));
    return this.push(Buffer.concat([PageBuilder.header(31, Number(low & 0x7ffffffn)), w]));
  }

  /** type_len 29 with a length: a discarded record of `bytes` bytes after its header (a multiple of 4, ≥ 4). */
  padding(bytes: number, delta = 1): this {
    const w = Buffer.alloc(bytes);
    w.writeUInt32LE(bytes);
    w.fill(0xee, 4);
    return this.push(Buffer.concat([PageBuilder.header(29, delta), w]));
  }

  /** type_len 29 with time_delta 0: the rest of the page is unused. */
  nullPadding(): this {
    return this.push(PageBuilder.header(29, 0));
  }

  raw(bytes: Buffer): this {
    return this.push(bytes);
  }

  /**
   * The page: timestamp, commit (the data length, with the lost-events flags; `lost` stores the count after the
   * data) and the data, zero-filled to the page size. `commit` overrides the whole commit word.
   */
  build(opts: { missed?: boolean; lost?: number; commit?: bigint } = {}): Buffer {
    const page = Buffer.alloc(this.pageSize);
    page.writeBigUInt64LE(this.ts, 0);
    const data = Buffer.concat(this.parts);
    data.copy(page, this.dataOffset);
    let commit = BigInt(data.length);
    if (opts.lost !== undefined) {
      page.writeBigUInt64LE(BigInt(opts.lost), this.dataOffset + data.length);
      commit |= 1n << 30n;
    }
    // The kernel adds (1 << 31) as an int to a long: the flag sign-extends through the upper half.
    if (opts.missed || opts.lost !== undefined) commit |= 0xffffffff80000000n;
    page.writeBigUInt64LE(opts.commit ?? commit, 8);
    return page;
  }
}

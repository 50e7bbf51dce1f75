// Decodes ring-buffer pages as `per_cpu/cpuN/trace_pipe_raw` returns them, laid out as events/header_page and
// events/header_event describe (rawFormat.ts): a page timestamp (u64), the commit word, then records. A record
// starts with a u32 header, type_len in its low 5 bits and time_delta in the high 27:
//   1…28   data, type_len × 4 bytes of it after the header;
//   0      data whose length follows in the next u32 (that length counts itself: the data is 4 bytes shorter);
//   29     padding: time_delta 0 fills a tail of under 8 bytes, otherwise the next u32 is its length (a discarded
//          record or the end of a full page); padding moves no clock;
//   30     time-extend: next u32 × 2^27 + time_delta is added to the clock;
//   31     absolute time-stamp: the clock becomes next u32 × 2^27 + time_delta, its top 5 bits taken from the clock's.
// A data record's time is the page timestamp plus every delta up to it, its own included. The commit word holds
// the data's length in its low 30 bits, bit 31 "events were lost before this page" and bit 30 "their count is
// stored as a long after the data"; on 64-bit kernels the word is a long, bits 32–63 copying bit 31.
// Little-endian pages only (x86-64, arm64). Every read is checked against the page's length and the commit word:
// a truncated or inconsistent page throws a RawDecodeError naming the byte offset, never a short or skipped read.
//
// trace_pipe_raw as measured on this kernel (6.18, x86-64, 4 KiB pages, an instance made for the purpose):
// - One read(2) returns at most one page: a read of 8 KiB returns 4,096 bytes. A read shorter than a page returns
//   the page's first bytes and the following reads the rest of the same page; readers use page-sized buffers.
// - Pages need not be full: a page the kernel is still writing is copied out as it stands (a 128-byte commit after
//   two hits), with tracing on; disabling tracing is not needed to get the last records. The next read then
//   starts a fresh page whose timestamp is the last record read, so a time-extend record often comes first.
// - Empty: read(2) blocks (tracing on or off); with O_NONBLOCK it fails with EAGAIN. Closing any duplicate of the
//   descriptor marks the reader closed, after which an empty buffer reads as end of file: `cat FILE` blocks,
//   but `cat < FILE` in a shell (open, dup2 to 0, close) returns the pages there are and then ends.
// - After an overflow in overwrite mode the first page after the gap has bit 31 set and, when full, no stored
//   count (commit 0xffffffff80000ff0: the flag sign-extended into the long); `per_cpu/cpuN/stats` `overrun` has
//   the number. Bytes after the data are zero.
import type { EventFormat, FieldFormat, HeaderPage } from './rawFormat';
import { nameRecord } from '../../shared/names';

export class RawDecodeError extends Error {
  constructor(
    /** Byte offset in the page where the inconsistency is. */
    readonly offset: number,
    message: string,
  ) {
    super(`ring-buffer page, byte ${offset}: ${message}`);
    this.name = 'RawDecodeError';
  }
}

const TYPE_PADDING = 29;
const TYPE_TIME_EXTEND = 30;
const TYPE_TIME_STAMP = 31;
const MISSED_EVENTS = 0x80000000;
const MISSED_STORED = 0x40000000;
const LENGTH_MASK = 0x3fffffff;
const TS_SHIFT = 2 ** 27;
const NS = 1e9;

/** A data record: its time, its event id (common_type) and where its fields lie in the page. */
export interface RawRecord {
  id: number;
  /** Time on the trace clock: whole seconds and the nanoseconds past them (exact for the whole u64 range). */
  sec: number;
  nsec: number;
  /** Offset in the page of the record's first field (common_type) and its length in bytes. */
  offset: number;
  length: number;
  /** The decoded fields, when decodePage was given the event's format. */
  fields?: Record<string, FieldValue>;
}

export interface RawPage {
  /** The page timestamp: the clock before its first record's delta. */
  sec: number;
  nsec: number;
  /** Bytes of record data. */
  dataLength: number;
  /** Events were lost (overwritten or dropped) between the previous page of this CPU and this one. */
  missed: boolean;
  /** How many, when the kernel had room to store the count after the data. */
  lost: number | undefined;
  records: RawRecord[];
}

/** The page's header fields, checked. */
export interface PageHead {
  sec: number;
  nsec: number;
  /** Offset of the first record and of the end of the records. */
  start: number;
  end: number;
  missed: boolean;
  lost: number | undefined;
}

const u32 = (p: Uint8Array, o: number): number => (p[o] | (p[o + 1] << 8) | (p[o + 2] << 16) | (p[o + 3] << 24)) >>> 0;

function splitNs(ns: bigint): { sec: number; nsec: number } {
  return { sec: Number(ns / 1_000_000_000n), nsec: Number(ns % 1_000_000_000n) };
}

/** Reads and checks a page's timestamp and commit word. */
export function readPageHead(page: Uint8Array, header: HeaderPage): PageHead {
  const { timestampOffset: tso, commitOffset: co, commitSize: cs, dataOffset: start } = header;
  if (page.length < start) throw new RawDecodeError(page.length, `the page ends inside its ${start}-byte header`);
  const lo = u32(page, co);
  if (cs === 8) {
    const hi = u32(page, co + 4);
    // local_t is a long: `commit + (1 << 31)` in C sign-extends the int flag through the upper half.
    if (hi !== 0 && !(hi === 0xffffffff && lo & MISSED_EVENTS))
      throw new RawDecodeError(co, `commit word 0x${hi.toString(16)}${lo.toString(16).padStart(8, '0')} has stray upper bits`);
  }
  const dataLength = lo & LENGTH_MASK;
  const missed = (lo & MISSED_EVENTS) !== 0;
  const stored = (lo & MISSED_STORED) !== 0;
  if (stored && !missed) throw new RawDecodeError(co, 'commit word says a lost count is stored but no events were lost');
  if (dataLength > header.dataSize)
    throw new RawDecodeError(co, `commit says ${dataLength} bytes of data; a page holds ${header.dataSize}`);
  const end = start + dataLength;
  if (end > page.length) throw new RawDecodeError(page.length, `the page ends before its ${dataLength} bytes of data`);
  let lost: number | undefined;
  if (stored) {
    if (end + cs > page.length || dataLength + cs > header.dataSize)
      throw new RawDecodeError(end, 'the stored lost-events count lies outside the page');
    lost = cs === 8 ? u32(page, end) + u32(page, end + 4) * 2 ** 32 : u32(page, end);
    if (!Number.isSafeInteger(lost)) throw new RawDecodeError(end, 'lost-events count out of range');
  }
  const tsLo = u32(page, tso);
  const tsHi = u32(page, tso + 4);
  let sec: number;
  let nsec: number;
  if (tsHi < 0x200000) {
    // Below 2^53 ns (104 days of uptime): exact in doubles.
    const ts = tsHi * 2 ** 32 + tsLo;
    sec = Math.floor(ts / NS);
    nsec = ts - sec * NS;
    if (nsec < 0) {
      sec--;
      nsec += NS;
    } else if (nsec >= NS) {
      sec++;
      nsec -= NS;
    }
  } else ({ sec, nsec } = splitNs((BigInt(tsHi) << 32n) | BigInt(tsLo)));
  return { sec, nsec, start, end, missed, lost };
}

/**
 * Calls `visit` for each data record of a page, in order, with its time and where its fields are; returns the
 * page head. Padding and clock records are consumed here. The record's bytes are `page[offset, offset + length)`.
 */
export function forEachRecord(
  page: Uint8Array,
  header: HeaderPage,
  visit: (id: number, sec: number, nsec: number, offset: number, length: number) => void,
): PageHead {
  const head = readPageHead(page, header);
  const end = head.end;
  let sec = head.sec;
  let nsec = head.nsec;
  let pos = head.start;
  while (pos < end) {
    if (pos + 4 > end) throw new RawDecodeError(pos, `a record header needs 4 bytes; ${end - pos} are left`);
    const h = u32(page, pos);
    const type = h & 31;
    const delta = h >>> 5;
    let data: number;
    let length: number;
    if (type >= 1 && type <= 28) {
      data = pos + 4;
      length = type * 4;
    } else if (type === 0) {
      if (pos + 8 > end) throw new RawDecodeError(pos, 'a record without its length word');
      const len = u32(page, pos + 4);
      if (len < 4 || len % 4 !== 0) throw new RawDecodeError(pos + 4, `record length word ${len} is not a multiple of 4 of at least 4`);
      data = pos + 8;
      length = len - 4;
    } else if (type === TYPE_PADDING) {
      // time_delta 0: the kernel fills a tail too short for any record (under 8 bytes) with it; anywhere else it
      // would hide the records after it.
      if (delta === 0) {
        if (end - pos >= 8) throw new RawDecodeError(pos, `a length-less padding record with ${end - pos - 4} bytes of data after it`);
        break;
      }
      if (pos + 8 > end) throw new RawDecodeError(pos, 'a padding record without its length word');
      const len = u32(page, pos + 4);
      if (len < 4 || pos + 4 + len > end) throw new RawDecodeError(pos + 4, `padding of ${len} bytes runs past the data's end (${end})`);
      pos += 4 + len;
      continue;
    } else {
      if (pos + 8 > end) throw new RawDecodeError(pos, `a ${type === TYPE_TIME_STAMP ? 'time-stamp' : 'time-extend'} record is cut short`);
      const hiPart = u32(page, pos + 4);
      if (type === TYPE_TIME_EXTEND) {
        const add = hiPart * TS_SHIFT + delta;
        if (add <= Number.MAX_SAFE_INTEGER) {
          const s = Math.floor(add / NS);
          sec += s;
          nsec += add - s * NS;
          if (nsec >= NS) {
            nsec -= NS;
            sec++;
          }
        } else {
          const t = splitNs(BigInt(sec) * 1_000_000_000n + BigInt(nsec) + BigInt(hiPart) * 134217728n + BigInt(delta));
          sec = t.sec;
          nsec = t.nsec;
        }
      } else {
        // Only 59 bits fit the record: the top 5 come from the clock so far, wrapping forward past it.
        const now = BigInt(sec) * 1_000_000_000n + BigInt(nsec);
        const msb = now & (0x1fn << 59n);
        let abs = (BigInt(hiPart) << 27n) | BigInt(delta);
        if (msb) {
          abs |= msb;
          if (abs < now) abs += 1n << 59n;
        }
        const t = splitNs(abs);
        sec = t.sec;
        nsec = t.nsec;
      }
      pos += 8;
      continue;
    }
    if (data + length > end) throw new RawDecodeError(pos, `a ${length}-byte record runs past the data's end (${end})`);
    if (length < 2) throw new RawDecodeError(pos, 'a record too short for its event id');
    nsec += delta;
    if (nsec >= NS) {
      nsec -= NS;
      sec++;
    }
    visit(page[data] | (page[data + 1] << 8), sec, nsec, data, length);
    pos = data + length;
  }
  return head;
}

/**
 * All records of a page, with its lost-events information; with `formats` (by event id), each record of a known
 * event with its decoded fields (decodeFields).
 */
export function decodePage(page: Uint8Array, header: HeaderPage, formats?: ReadonlyMap<number, EventFormat>): RawPage {
  const records: RawRecord[] = [];
  const head = forEachRecord(page, header, (id, sec, nsec, offset, length) => {
    const r: RawRecord = { id, sec, nsec, offset, length };
    const f = formats?.get(id);
    if (f) r.fields = decodeFields(page, r, f);
    records.push(r);
  });
  return {
    sec: head.sec,
    nsec: head.nsec,
    dataLength: head.end - head.start,
    missed: head.missed,
    lost: head.lost,
    records,
  };
}

/** `sec.usec` as trace and trace_pipe print a time on a nanosecond clock (rounded to the nearest microsecond). */
export function timestampText(sec: number, nsec: number): string {
  let us = Math.floor((nsec + 500) / 1000);
  let s = sec;
  if (us >= 1e6) {
    us -= 1e6;
    s++;
  }
  return `${s}.${String(us).padStart(6, '0')}`;
}

/** A field's value: integers as numbers (bigint past 2^53), text as strings, arrays as arrays; null: a dynamic field of length 0 (a probe's fetch that faulted). */
export type FieldValue = number | bigint | string | null | Array<number | bigint>;

/** Reads an integer of 1, 2, 4 or 8 bytes; 8-byte values past 2^53 as bigint. */
export function readInt(page: Uint8Array, o: number, size: number, signed: boolean): number | bigint {
  switch (size) {
    case 1:
      return signed ? (page[o] << 24) >> 24 : page[o];
    case 2: {
      const v = page[o] | (page[o + 1] << 8);
      return signed ? (v << 16) >> 16 : v;
    }
    case 4:
      return signed ? page[o] | (page[o + 1] << 8) | (page[o + 2] << 16) | (page[o + 3] << 24) : u32(page, o);
    case 8: {
      const lo = u32(page, o);
      const hi = u32(page, o + 4);
      const v = signed && hi >= 0x80000000 ? (hi - 2 ** 32) * 2 ** 32 + lo : hi * 2 ** 32 + lo;
      if (Number.isSafeInteger(v)) return v;
      const b = (BigInt(hi) << 32n) | BigInt(lo);
      return signed ? BigInt.asIntN(64, b) : b;
    }
    default:
      throw new RangeError(`an integer of ${size} bytes`);
  }
}

/** Text of `page[start, end)` up to its first NUL, as UTF-8 (invalid bytes become U+FFFD). */
export function cString(page: Uint8Array, start: number, end: number): string {
  let z = start;
  while (z < end && page[z] !== 0) z++;
  return Buffer.from(page.buffer, page.byteOffset, page.byteLength).toString('utf8', start, z);
}

/**
 * Where a dynamic field's data lies: [start, start + len). Throws if its location word points outside the record.
 */
export function dynamicSpan(page: Uint8Array, rec: RawRecord, f: FieldFormat): { start: number; len: number } {
  const w = u32(page, rec.offset + f.offset);
  const len = w >>> 16;
  const start = (f.kind === 'relLoc' ? rec.offset + f.offset + f.size : rec.offset) + (w & 0xffff);
  if (start + len > rec.offset + rec.length)
    throw new RawDecodeError(rec.offset + f.offset, `field '${f.name}' points at ${len} bytes outside its ${rec.length}-byte record`);
  return { start, len };
}

/** Every field of a record, decoded by its event's format. */
export function decodeFields(page: Uint8Array, rec: RawRecord, format: EventFormat): Record<string, FieldValue> {
  if (rec.id !== format.id) throw new RangeError(`record of event ${rec.id} decoded with the format of ${format.id}`);
  if (rec.length < format.minSize)
    throw new RawDecodeError(rec.offset, `a ${rec.length}-byte record of '${format.name}', whose fields need ${format.minSize}`);
  const out: Record<string, FieldValue> = nameRecord();
  for (const f of format.fields) {
    const at = rec.offset + f.offset;
    if (f.kind === 'int') out[f.name] = readInt(page, at, f.size, f.signed);
    else if (f.kind === 'array') {
      if (f.text) out[f.name] = cString(page, at, at + f.size);
      else {
        const a: Array<number | bigint> = [];
        for (let k = 0; k < f.count; k++) a.push(readInt(page, at + k * f.elemSize, f.elemSize, f.signed));
        out[f.name] = a;
      }
    } else {
      if (f.nested) throw new RawDecodeError(at, `field '${f.name}' (${f.type}) holds several dynamic values, which are not decoded here`);
      const { start, len } = dynamicSpan(page, rec, f);
      if (len === 0) out[f.name] = null;
      else if (f.text) out[f.name] = cString(page, start, start + len);
      else {
        if (len % f.elemSize !== 0) throw new RawDecodeError(at, `field '${f.name}': ${len} bytes are not whole elements of ${f.elemSize}`);
        const a: Array<number | bigint> = [];
        for (let k = 0; k < len; k += f.elemSize) a.push(readInt(page, start + k, f.elemSize, f.signed));
        out[f.name] = a;
      }
    }
  }
  return out;
}

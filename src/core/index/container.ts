// The cache entry's bytes: an encoded index (encoded.ts) laid out so that a load reads only what a query needs.
// A v8-serialised entry had to be read, deserialised (copied) and checked whole before the first answer: for a
// kernel that is 110 MB, 72 of them the line table, and 150–250 ms. Here every column is stored raw and 8-aligned
// in one of five groups (strings, functions, parameters, sites, lines), and a header says where each lies. A load
// reads the header and the first three groups (a few MB even for a kernel) into one buffer, the columns are views of
// it (no copy), and checks them; the sites and the line table are read and checked when first asked for, from the
// entry's file descriptor, which stays open until both are in (a rebuilt entry is renamed over this one: the
// descriptor keeps reading the entry it opened).
//
// Layout: "PLINDEX\0", the header's length (u32 LE), 4 zero bytes, the header (v8-serialised: codec, format, the
// index's meta without its line table, and each group's offset, length and columns), zero padding to 8, the groups.
// Columns are little-endian (x86-64 and AArch64, the only hosts ProbeLens runs on).
//
// A group read later that turns out damaged (a disk error, a hand edit) cannot be rebuilt under a query that is
// already running: the entry is removed and the query fails with a CacheDamagedError that says so; the next run
// rebuilds it. A damaged header or first three groups read as no entry (rebuilt at once).
// Tests: test/unit/core/index/container.test.ts, test/unit/core/index/cacheColumns.test.ts
import { closeSync, fstatSync, readSync, unlinkSync } from 'node:fs';
import { deserialize, serialize } from 'node:v8';
import { CODEC_VERSION, type EncodedIndex } from './encoded';
import { INDEX_FORMAT } from './model';
import { validFnGroup, validLinesGroup, validMeta, validParamGroup, validSiteGroup, validStringsGroup } from './codec';
import { nameRecord } from '../../shared/names';

const MAGIC = Buffer.from('PLINDEX\0', 'latin1');
const PREFIX = 16;
/** A header larger than this is not one we wrote (its meta holds the file list and USDT notes, not the columns). */
const MAX_HEADER = 256 << 20;

const TYPES = { u8: Uint8Array, u32: Uint32Array, f64: Float64Array, u64: BigUint64Array } as const;
type TypeName = keyof typeof TYPES;
type Col = Uint8Array | Uint32Array | Float64Array | BigUint64Array;

const GROUPS = ['strings', 'fn', 'param', 'site', 'lines'] as const;
type GroupName = (typeof GROUPS)[number];
/** Read with the header; the rest when first asked for. */
const EAGER: readonly GroupName[] = ['strings', 'fn', 'param'];

interface ColumnEntry {
  name: string;
  type: TypeName;
  length: number;
  /** Byte offset within its group. */
  at: number;
}

interface GroupEntry {
  offset: number;
  byteLength: number;
  columns: ColumnEntry[];
}

interface Header {
  codec: number;
  format: number;
  meta: Omit<EncodedIndex['meta'], 'lines'>;
  groups: Record<GroupName, GroupEntry>;
}

export class CacheDamagedError extends Error {
  constructor(file: string, what: string) {
    super(`the index cache entry ${file} is damaged (${what}); it was removed: run again to rebuild it`);
    this.name = 'CacheDamagedError';
  }
}

const typeName = (c: Col): TypeName =>
  c instanceof Uint8Array ? 'u8' : c instanceof Uint32Array ? 'u32' : c instanceof Float64Array ? 'f64' : 'u64';

const align8 = (n: number): number => (n + 7) & ~7;

function groupColumns(e: EncodedIndex, g: GroupName): Record<string, Col | undefined> | undefined {
  switch (g) {
    case 'strings':
      return nameRecord({ strings: e.strings, stringStarts: e.stringStarts });
    case 'fn':
      return e.fn;
    case 'param':
      return e.param;
    case 'site':
      return e.site;
    case 'lines':
      return e.meta.lines as unknown as Record<string, Col> | undefined;
  }
}

/** The entry's bytes, in pieces to write one after another. */
export function encodeContainer(e: EncodedIndex): Uint8Array[] {
  const groups = {} as Record<GroupName, GroupEntry>;
  const blobs: Array<{ at: number; col: Col }> = [];
  let offset = 0;
  for (const g of GROUPS) {
    const columns: ColumnEntry[] = [];
    let at = 0;
    // A column or group missing is written as missing (the tests' damaged entries): the load refuses it.
    for (const [name, col] of Object.entries(groupColumns(e, g) ?? {})) {
      if (!col) continue;
      columns.push({ name, type: typeName(col), length: col.length, at });
      blobs.push({ at: offset + at, col });
      at = align8(at + col.byteLength);
    }
    groups[g] = { offset, byteLength: at, columns };
    offset += at;
  }
  const { lines: _lines, ...meta } = e.meta;
  const header = serialize({ codec: e.codec, format: e.format, meta, groups } satisfies Header);
  const prefix = Buffer.alloc(PREFIX);
  MAGIC.copy(prefix);
  prefix.writeUInt32LE(header.length, 8);
  const start = align8(PREFIX + header.length);
  const body = Buffer.alloc(offset);
  for (const { at, col } of blobs) body.set(new Uint8Array(col.buffer, col.byteOffset, col.byteLength), at);
  return [prefix, header, Buffer.alloc(start - PREFIX - header.length), body];
}

function readAt(fd: number, length: number, position: number): Buffer {
  const buf = Buffer.allocUnsafe(length);
  let got = 0;
  while (got < length) {
    const n = readSync(fd, buf, got, length - got, position + got);
    if (n === 0) throw new Error(`the entry ends at ${position + got}, before ${position + length}`);
    got += n;
  }
  return buf;
}

/** The header's groups, checked against the file's size and each other: every column inside its group, aligned. */
function checkedGroups(h: Header, bodyStart: number, size: number): boolean {
  if (typeof h.groups !== 'object' || h.groups === null) return false;
  let end = bodyStart;
  for (const g of GROUPS) {
    const e = h.groups[g];
    if (!e || !Number.isSafeInteger(e.offset) || !Number.isSafeInteger(e.byteLength) || !Array.isArray(e.columns)) return false;
    if (bodyStart + e.offset !== end || e.offset % 8 || e.byteLength < 0) return false;
    end += e.byteLength;
    for (const c of e.columns) {
      const T = TYPES[c?.type];
      if (!T || !Number.isSafeInteger(c.length) || !Number.isSafeInteger(c.at) || c.length < 0 || c.at < 0 || c.at % 8) return false;
      if (c.at + c.length * T.BYTES_PER_ELEMENT > e.byteLength) return false;
    }
  }
  return end === size;
}

/** The columns of group `g` as views of `buf` (which holds the group from its first byte at `base`). */
function viewsOf(entry: GroupEntry, buf: Buffer, base: number): Record<string, Col> {
  const out: Record<string, Col> = nameRecord();
  for (const c of entry.columns) {
    const T = TYPES[c.type];
    // The Buffer's own offset into its ArrayBuffer may be unaligned: copy then (never for a buffer read here).
    const at = buf.byteOffset + base + c.at;
    out[c.name] =
      at % T.BYTES_PER_ELEMENT === 0
        ? new T(buf.buffer as ArrayBuffer, at, c.length)
        : new T((buf.buffer as ArrayBuffer).slice(at, at + c.length * T.BYTES_PER_ELEMENT));
  }
  return out;
}

const closer = new FinalizationRegistry<{ fd: number; open: boolean }>((h) => {
  if (h.open) closeSync(h.fd);
});
const closers = new WeakMap<EncodedIndex, () => void>();

/** Closes the entry's descriptor now, for an entry that will not be used (its lazy groups can no longer be read). */
export function releaseContainer(e: EncodedIndex): void {
  closers.get(e)?.();
}

/**
 * The encoded index of the entry open on `fd` (taken over: closed here, now or once its lazy groups are read), or
 * undefined when it is not a whole, sound entry of this codec and format. `file` names it in errors and is removed
 * when a group read later is damaged.
 */
export function openContainer(fd: number, file: string): EncodedIndex | undefined {
  const handle = { fd, open: true };
  const close = (): void => {
    if (handle.open) closeSync(fd);
    handle.open = false;
  };
  let e: EncodedIndex;
  let header: Header;
  let bodyStart: number;
  try {
    const size = fstatSync(fd).size;
    if (size < PREFIX) return (close(), undefined);
    const prefix = readAt(fd, PREFIX, 0);
    const headerLength = prefix.readUInt32LE(8);
    if (!prefix.subarray(0, 8).equals(MAGIC) || headerLength > MAX_HEADER || PREFIX + headerLength > size) return (close(), undefined);
    header = deserialize(readAt(fd, headerLength, PREFIX)) as Header;
    bodyStart = align8(PREFIX + headerLength);
    if (
      typeof header !== 'object' ||
      header === null ||
      header.codec !== CODEC_VERSION ||
      header.format !== INDEX_FORMAT ||
      !checkedGroups(header, bodyStart, size)
    )
      return (close(), undefined);
    const eagerBytes = EAGER.reduce((n, g) => n + header.groups[g].byteLength, 0);
    const buf = readAt(fd, eagerBytes, bodyStart);
    const strings = viewsOf(header.groups.strings, buf, 0);
    const fn = viewsOf(header.groups.fn, buf, header.groups.fn.offset);
    const param = viewsOf(header.groups.param, buf, header.groups.param.offset);
    e = {
      codec: CODEC_VERSION,
      format: INDEX_FORMAT,
      meta: { ...header.meta } as EncodedIndex['meta'],
      strings: strings.strings as Uint8Array,
      stringStarts: strings.stringStarts as Uint32Array,
      fn: fn as unknown as EncodedIndex['fn'],
      param: param as unknown as EncodedIndex['param'],
      site: undefined as unknown as EncodedIndex['site'],
    };
    const siteRows = header.groups.site.columns.find((c) => c.name === 'kind')?.length ?? -1;
    if (!validStringsGroup(e) || !validMeta(e.meta, false) || !validFnGroup(e, e.param.name?.length ?? -1, siteRows) || !validParamGroup(e))
      return (close(), undefined);
  } catch {
    close();
    return undefined;
  }

  // The lazy groups: read and checked on first use, then the descriptor is closed.
  const pending = new Set<GroupName>(['site', 'lines']);
  const load = (g: 'site' | 'lines'): Record<string, Col> => {
    const entry = header.groups[g];
    let cols: Record<string, Col>;
    try {
      if (!handle.open) throw new Error('the entry was closed');
      cols = viewsOf(entry, readAt(fd, entry.byteLength, bodyStart + entry.offset), 0);
    } catch (err) {
      throw damaged(`its ${g} could not be read: ${(err as Error).message}`);
    }
    const ok =
      g === 'site' ? validSiteGroup(cols as unknown as EncodedIndex['site'], e) : validLinesGroup(cols as never, e.meta.files.length);
    if (!ok) throw damaged(`its ${g} columns disagree with its header`);
    pending.delete(g);
    if (pending.size === 0) close();
    return cols;
  };
  const damaged = (what: string): CacheDamagedError => {
    close();
    try {
      unlinkSync(file);
    } catch {
      /* already gone */
    }
    return new CacheDamagedError(file, what);
  };
  // One function's sites: a slice of every site column, and of the ranges its rows span.
  const siteSlice = (start: number, count: number): EncodedIndex['site'] | undefined => {
    if (!pending.has('site')) return undefined;
    const entry = header.groups.site;
    let slice: Record<string, Col>;
    try {
      if (!handle.open) throw new Error('the entry was closed');
      slice = nameRecord();
      for (const c of entry.columns) {
        if (c.name === 'ranges') continue;
        const T = TYPES[c.type];
        if (start + count > c.length) throw new Error(`rows ${start}+${count} past its ${c.length}`);
        const bytes = readAt(fd, count * T.BYTES_PER_ELEMENT, bodyStart + entry.offset + c.at + start * T.BYTES_PER_ELEMENT);
        slice[c.name] = new T(bytes.buffer as ArrayBuffer, bytes.byteOffset, count);
      }
      const rs = slice.rangeStart as Uint32Array;
      const rc = slice.rangeCount as Uint32Array;
      const ranges = entry.columns.find((c) => c.name === 'ranges');
      if (!rs || !rc || !ranges) throw new Error('no range columns');
      const lo = rs[0];
      const hi = rs[count - 1] + rc[count - 1];
      if (hi < lo || hi > ranges.length) throw new Error(`ranges ${lo}…${hi} past its ${ranges.length}`);
      const rb = readAt(fd, (hi - lo) * 8, bodyStart + entry.offset + ranges.at + lo * 8);
      slice.ranges = new Float64Array(rb.buffer as ArrayBuffer, rb.byteOffset, hi - lo);
      slice.rangeStart = rs.map((x) => x - lo);
    } catch (err) {
      throw damaged(`its sites could not be read: ${(err as Error).message}`);
    }
    // A row whose ranges start before the first row's wraps past the slice's ranges: the check refuses it.
    if (!validSiteGroup(slice as unknown as EncodedIndex['site'], e)) throw damaged('its site columns disagree with its header');
    return slice as unknown as EncodedIndex['site'];
  };
  Object.defineProperty(e, 'siteSlice', { value: siteSlice, enumerable: false });
  lazy(e, 'site', () => load('site'));
  lazy(e.meta, 'lines', () => load('lines'));
  closer.register(e, handle);
  closers.set(e, close);
  return e;
}

/**
 * Defines `obj[key]` as a value computed once, on first access. Enumerable, so it reads like a plain property; a
 * copy of the property's descriptor (decodeIndex) shares the one computation.
 */
function lazy(obj: object, key: string, get: () => unknown): void {
  let done = false;
  let value: unknown;
  Object.defineProperty(obj, key, {
    enumerable: true,
    configurable: true,
    get: () => {
      if (!done) {
        value = get();
        done = true;
      }
      return value;
    },
  });
}

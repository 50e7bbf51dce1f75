// The cache's on-disk shape of IndexData. Functions are stored column-wise over one de-duplicated string
// table instead of as an object graph: v8.deserialize of tens of thousands of small objects dominates a cache
// load, while typed arrays load at memory speed. The function objects are rebuilt from the columns the first
// time anything asks for them, so opening a cached index costs only the deserialisation.
import { INDEX_FORMAT, type FunctionSite, type IndexData } from './model';
import { ALIAS_SEP, CODEC_VERSION, F_EXTERNAL, F_HAS_ADDRESS, F_HAS_OFFSET, F_PROBEABLE, NONE, type EncodedIndex } from './encoded';
import { FunctionTable, stringStarts } from './functionTable';
import { Interner } from '../../shared/interner';
import { SITE_KINDS } from '../../shared/site';

export { CODEC_VERSION, type EncodedIndex } from './encoded';

const EXACT = 2n ** 53n;

/** Encodes for the cache, or undefined when a file offset would not survive a float64 column (not cached then). */
export function encodeIndex(d: IndexData): EncodedIndex | undefined {
  const table = new Interner();
  const list = table.strings;
  const sid = (s: string | undefined): number => (s === undefined ? NONE : table.id(s));
  const n = d.functions.length;
  const fn: EncodedIndex['fn'] = {
    name: new Uint32Array(n),
    linkage: new Uint32Array(n),
    file: new Uint32Array(n),
    line: new Uint32Array(n),
    address: new BigUint64Array(n),
    fileOffset: new Float64Array(n),
    size: new Float64Array(n),
    inlined: new Uint32Array(n),
    flags: new Uint8Array(n),
    reason: new Uint32Array(n),
    unitOffset: new Float64Array(n),
    dieOffset: new Float64Array(n),
    paramStart: new Uint32Array(n),
    paramCount: new Uint32Array(n),
    siteStart: new Uint32Array(n),
    siteCount: new Uint32Array(n),
    aliases: new Uint32Array(n),
  };
  const sites: FunctionSite[] = [];
  const pn: number[] = [],
    pt: number[] = [],
    pl: number[] = [],
    pi: number[] = [];
  for (let i = 0; i < n; i++) {
    const f = d.functions[i];
    if ((f.fileOffset ?? 0n) >= EXACT) return undefined;
    fn.name[i] = sid(f.name);
    fn.linkage[i] = sid(f.linkageName);
    fn.file[i] = sid(f.file);
    fn.line[i] = f.line ?? 0;
    fn.address[i] = f.address ?? 0n;
    fn.fileOffset[i] = Number(f.fileOffset ?? 0n);
    fn.size[i] = f.size;
    fn.inlined[i] = f.inlinedInstances;
    fn.flags[i] =
      (f.probeable ? F_PROBEABLE : 0) |
      (f.external ? F_EXTERNAL : 0) |
      (f.address !== undefined ? F_HAS_ADDRESS : 0) |
      (f.fileOffset !== undefined ? F_HAS_OFFSET : 0);
    fn.reason[i] = sid(f.reason);
    fn.unitOffset[i] = f.unitOffset;
    fn.dieOffset[i] = f.dieOffset;
    fn.paramStart[i] = pn.length;
    fn.paramCount[i] = f.params.length;
    fn.siteStart[i] = sites.length;
    fn.siteCount[i] = f.sites.length;
    fn.aliases[i] = sid(f.aliases?.join(ALIAS_SEP));
    for (const s of f.sites) {
      if ((s.fileOffset ?? 0n) >= EXACT) return undefined;
      sites.push(s);
    }
    for (const p of f.params) {
      pn.push(sid(p.name));
      pt.push(sid(p.type));
      pl.push(sid(p.location));
      pi.push(p.inferred ? 1 : 0);
    }
  }
  // Before the string table is encoded: the site columns add strings of their own.
  const site: EncodedIndex['site'] = {
    kind: Uint8Array.from(sites, (s) => SITE_KINDS.indexOf(s.kind)),
    address: BigUint64Array.from(sites, (s) => s.address),
    fileOffset: Float64Array.from(sites, (s) => (s.fileOffset === undefined ? -1 : Number(s.fileOffset))),
    dieOffset: Float64Array.from(sites, (s) => s.dieOffset),
    unitOffset: Float64Array.from(sites, (s) => s.unitOffset),
    caller: Uint32Array.from(sites, (s) => sid(s.caller)),
    file: Uint32Array.from(sites, (s) => sid(s.file)),
    line: Uint32Array.from(sites, (s) => s.line ?? 0),
    symbol: Uint32Array.from(sites, (s) => sid(s.symbol)),
    rangeStart: new Uint32Array(sites.length),
    rangeCount: Uint32Array.from(sites, (s) => s.ranges?.length ?? 0),
    ranges: new Float64Array(sites.reduce((n, s) => n + (s.ranges?.length ?? 0), 0)),
  };
  let at = 0;
  sites.forEach((s, i) => {
    site.rangeStart[i] = at;
    if (s.ranges) site.ranges.set(s.ranges, at);
    at += s.ranges?.length ?? 0;
  });
  const strings = new TextEncoder().encode(list.join('\0'));
  const meta: Omit<IndexData, 'functions'> & { functions?: unknown } = { ...d };
  delete meta.functions;
  return {
    codec: CODEC_VERSION,
    format: INDEX_FORMAT,
    meta,
    strings,
    stringStarts: stringStarts(strings),
    fn,
    param: { name: Uint32Array.from(pn), type: Uint32Array.from(pt), location: Uint32Array.from(pl), inferred: Uint8Array.from(pi) },
    site,
  };
}

const tables = new WeakMap<IndexData, FunctionTable>();

/**
 * IndexData whose `functions` are built from the columns on first access; until then `functionTableOf` answers
 * queries by name and by file from the columns, building only the functions they return.
 */
export function decodeIndex(e: EncodedIndex): IndexData {
  // Descriptors, not values: a cache entry's line table is read when first asked for (container.ts).
  const data = Object.defineProperties({}, Object.getOwnPropertyDescriptors(e.meta)) as IndexData;
  const table = new FunctionTable(e);
  Object.defineProperty(data, 'functions', { enumerable: true, configurable: true, get: () => table.functions() });
  tables.set(data, table);
  return data;
}

/** The column reader behind a decoded cache entry (undefined for an index built in this process). */
export function functionTableOf(data: IndexData): FunctionTable | undefined {
  return tables.get(data);
}

/**
 * True for a cache entry of this codec and format whose columns agree with each other and with its header:
 * every column there with its type and length, every string id inside the string table, every param and site
 * span inside its columns, every number that becomes a bigint an exact non-negative integer. A damaged entry
 * (a disk error, a truncated copy, a hand edit) then reads as absent and is rebuilt, instead of failing every
 * later run with a JavaScript error or allocating what a huge count asks for.
 */
export function isEncodedIndex(v: unknown): v is EncodedIndex {
  if (typeof v !== 'object' || v === null) return false;
  const e = v as EncodedIndex;
  if (e.codec !== CODEC_VERSION || e.format !== INDEX_FORMAT) return false;
  try {
    return validColumns(e) && validMeta(e.meta);
  } catch {
    return false;
  }
}

/** The typed-array classes a column may be. */
type Column = typeof Uint8Array | typeof Uint32Array | typeof Float64Array | typeof BigUint64Array;

const FN_COLUMNS: Record<keyof EncodedIndex['fn'], Column> = {
  name: Uint32Array,
  linkage: Uint32Array,
  file: Uint32Array,
  line: Uint32Array,
  address: BigUint64Array,
  fileOffset: Float64Array,
  size: Float64Array,
  inlined: Uint32Array,
  flags: Uint8Array,
  reason: Uint32Array,
  unitOffset: Float64Array,
  dieOffset: Float64Array,
  paramStart: Uint32Array,
  paramCount: Uint32Array,
  siteStart: Uint32Array,
  siteCount: Uint32Array,
  aliases: Uint32Array,
};
const PARAM_COLUMNS: Record<keyof EncodedIndex['param'], Column> = {
  name: Uint32Array,
  type: Uint32Array,
  location: Uint32Array,
  inferred: Uint8Array,
};
const SITE_COLUMNS: Record<Exclude<keyof EncodedIndex['site'], 'ranges'>, Column> = {
  kind: Uint8Array,
  address: BigUint64Array,
  fileOffset: Float64Array,
  dieOffset: Float64Array,
  unitOffset: Float64Array,
  caller: Uint32Array,
  file: Uint32Array,
  line: Uint32Array,
  symbol: Uint32Array,
  rangeStart: Uint32Array,
  rangeCount: Uint32Array,
};

/** The columns of `group` exist with their types and one common length, which is returned (-1 otherwise). */
function columnsLength(group: unknown, types: Record<string, Column>): number {
  if (typeof group !== 'object' || group === null) return -1;
  let n = -1;
  for (const [key, type] of Object.entries(types)) {
    const c = (group as Record<string, unknown>)[key];
    if (!(c instanceof type) || (n >= 0 && (c as Uint8Array).length !== n)) return -1;
    n = (c as Uint8Array).length;
  }
  return n;
}

// Each check runs over one column in a small loop of its own: a load validates every row of a kernel's index
// (148,000 functions), and one tight loop per column is what the JIT makes fast.

/** Every id of `col` is below `count` (with `optional`, or the NONE marker). */
function idsBelow(col: Uint32Array, count: number, optional: boolean): boolean {
  for (let i = 0; i < col.length; i++) {
    const id = col[i];
    if (id >= count && !(optional && id === NONE)) return false;
  }
  return true;
}

/** Every value of `col` is below `limit`. */
function allBelow(col: Uint8Array | Uint32Array, limit: number): boolean {
  for (let i = 0; i < col.length; i++) if (col[i] >= limit) return false;
  return true;
}

/** Every span start[i] .. start[i] + count[i] ends within `length`. */
function spansWithin(start: Uint32Array, count: Uint32Array, length: number): boolean {
  for (let i = 0; i < start.length; i++) if (start[i] + count[i] > length) return false;
  return true;
}

function allFinite(col: Float64Array): boolean {
  for (let i = 0; i < col.length; i++) if (!Number.isFinite(col[i])) return false;
  return true;
}

/** A non-negative exact integer in every row of `col` (where `where`, when given, is set). */
function allExact(col: Float64Array, where?: { flags: Uint8Array; bit: number }, except?: number): boolean {
  for (let i = 0; i < col.length; i++) {
    if (where && !(where.flags[i] & where.bit)) continue;
    const x = col[i];
    if (x === except) continue;
    if (!Number.isSafeInteger(x) || x < 0) return false;
  }
  return true;
}

/** String starts that rise from 0, each after a NUL of the table, ending one past its end. */
function validStarts(bytes: Uint8Array, starts: unknown): starts is Uint32Array {
  if (!(starts instanceof Uint32Array) || starts.length < 2 || starts[0] !== 0 || starts[starts.length - 1] !== bytes.length + 1)
    return false;
  for (let i = 1; i < starts.length - 1; i++) if (starts[i] <= starts[i - 1] || bytes[starts[i] - 1] !== 0) return false;
  return true;
}

// The checks by group, so a cache entry's groups can be checked as they are read (container.ts).

/** The string table and its starts. */
export function validStringsGroup(e: Pick<EncodedIndex, 'strings' | 'stringStarts'>): boolean {
  return e.strings instanceof Uint8Array && validStarts(e.strings, e.stringStarts);
}

/** The function columns, given the string table and how many parameter and site rows there are. */
export function validFnGroup(e: Pick<EncodedIndex, 'fn' | 'stringStarts'>, paramRows: number, siteRows: number): boolean {
  const strings = e.stringStarts.length - 1;
  const { fn } = e;
  return (
    columnsLength(fn, FN_COLUMNS) >= 0 &&
    paramRows >= 0 &&
    siteRows >= 0 &&
    idsBelow(fn.name, strings, false) &&
    idsBelow(fn.linkage, strings, true) &&
    idsBelow(fn.file, strings, true) &&
    idsBelow(fn.reason, strings, true) &&
    idsBelow(fn.aliases, strings, true) &&
    spansWithin(fn.paramStart, fn.paramCount, paramRows) &&
    spansWithin(fn.siteStart, fn.siteCount, siteRows) &&
    allExact(fn.fileOffset, { flags: fn.flags, bit: F_HAS_OFFSET }) &&
    allFinite(fn.size) &&
    allFinite(fn.unitOffset) &&
    allFinite(fn.dieOffset)
  );
}

/** The parameter columns, given the string table. */
export function validParamGroup(e: Pick<EncodedIndex, 'param' | 'stringStarts'>): boolean {
  const strings = e.stringStarts.length - 1;
  const { param } = e;
  return (
    columnsLength(param, PARAM_COLUMNS) >= 0 &&
    idsBelow(param.name, strings, false) &&
    idsBelow(param.type, strings, false) &&
    idsBelow(param.location, strings, false)
  );
}

/** The site columns, given the string table. */
export function validSiteGroup(site: EncodedIndex['site'], e: Pick<EncodedIndex, 'stringStarts'>): boolean {
  const strings = e.stringStarts.length - 1;
  return (
    columnsLength(site, SITE_COLUMNS) >= 0 &&
    site.ranges instanceof Float64Array &&
    allBelow(site.kind, SITE_KINDS.length) &&
    allExact(site.fileOffset, undefined, -1) &&
    allFinite(site.dieOffset) &&
    allFinite(site.unitOffset) &&
    idsBelow(site.caller, strings, true) &&
    idsBelow(site.file, strings, true) &&
    idsBelow(site.symbol, strings, true) &&
    spansWithin(site.rangeStart, site.rangeCount, site.ranges.length)
  );
}

/** The line table's columns, given how many files the index names. */
export function validLinesGroup(lines: IndexData['lines'], files: number): boolean {
  return columnsLength(lines, LINE_COLUMNS) >= 0 && allBelow(lines.file, files);
}

function validColumns(e: EncodedIndex): boolean {
  if (!validStringsGroup(e)) return false;
  const np = columnsLength(e.param, PARAM_COLUMNS);
  const ns = columnsLength(e.site, SITE_COLUMNS);
  return validFnGroup(e, np, ns) && validParamGroup(e) && validSiteGroup(e.site, e);
}

const LINE_COLUMNS: Record<keyof IndexData['lines'], Column> = {
  address: Float64Array,
  line: Uint32Array,
  file: Uint32Array,
  flags: Uint8Array,
};

/**
 * The header fields the index reads without checking: their types, and (`withLines`, else checked when read) line
 * rows whose files exist.
 */
export function validMeta(m: EncodedIndex['meta'], withLines = true): boolean {
  if (typeof m !== 'object' || m === null) return false;
  if (typeof m.path !== 'string' || typeof m.size !== 'number' || typeof m.mtimeMs !== 'number') return false;
  if (m.buildId !== undefined && typeof m.buildId !== 'string') return false;
  if (m.arch !== 'x86_64' && m.arch !== 'aarch64') return false;
  if (!Array.isArray(m.files) || !m.files.every((f) => typeof f === 'string')) return false;
  if (withLines && !validLinesGroup(m.lines, m.files.length)) return false;
  if (!Array.isArray(m.usdt)) return false;
  for (const u of m.usdt) {
    if (typeof u !== 'object' || u === null || typeof u.provider !== 'string' || typeof u.name !== 'string') return false;
    if (typeof u.address !== 'bigint' || typeof u.fileOffset !== 'bigint' || !Array.isArray(u.args)) return false;
  }
  return true;
}

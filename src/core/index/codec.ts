// The cache's on-disk shape of IndexData. Functions are stored column-wise over one de-duplicated string
// table instead of as an object graph: v8.deserialize of tens of thousands of small objects dominates a cache
// load, while typed arrays load at memory speed. The function objects are rebuilt from the columns the first
// time anything asks for them, so opening a cached index costs only the deserialisation.
import { INDEX_FORMAT, type FunctionSite, type IndexData, type IndexedFunction, type IndexedParam } from './model';
import { Interner } from '../../shared/interner';
import { SITE_KINDS } from '../../shared/site';

export const CODEC_VERSION = 4;

export interface EncodedIndex {
  codec: typeof CODEC_VERSION;
  format: typeof INDEX_FORMAT;
  meta: Omit<IndexData, 'functions'>;
  /** All strings, NUL-separated, UTF-8. */
  strings: Uint8Array;
  fn: {
    name: Uint32Array;
    linkage: Uint32Array;
    file: Uint32Array;
    line: Uint32Array;
    /** 64-bit columns: a kernel's addresses lie above 2^53. */
    address: BigUint64Array;
    fileOffset: Float64Array;
    size: Float64Array;
    inlined: Uint32Array;
    flags: Uint8Array;
    reason: Uint32Array;
    unitOffset: Float64Array;
    dieOffset: Float64Array;
    paramStart: Uint32Array;
    paramCount: Uint32Array;
    siteStart: Uint32Array;
    siteCount: Uint32Array;
    /** String id of the function's aliases, joined by U+0001 (symbol names never hold it). */
    aliases: Uint32Array;
  };
  /** inferred: 1 when the location is the calling convention's guess (IndexedParam.inferred). */
  param: { name: Uint32Array; type: Uint32Array; location: Uint32Array; inferred: Uint8Array };
  site: {
    kind: Uint8Array;
    address: BigUint64Array;
    /** -1: no file offset. */
    fileOffset: Float64Array;
    dieOffset: Float64Array;
    unitOffset: Float64Array;
    caller: Uint32Array;
    file: Uint32Array;
    line: Uint32Array;
    symbol: Uint32Array;
    /** Each site's code ranges: rangeCount numbers (lo, hi pairs) from rangeStart in `ranges`. */
    rangeStart: Uint32Array;
    rangeCount: Uint32Array;
    ranges: Float64Array;
  };
}

const ALIAS_SEP = '\u0001';

const NONE = 0xffffffff;
const F_PROBEABLE = 1,
  F_EXTERNAL = 2,
  F_HAS_ADDRESS = 4,
  F_HAS_OFFSET = 8;
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
  const meta: Omit<IndexData, 'functions'> & { functions?: unknown } = { ...d };
  delete meta.functions;
  return {
    codec: CODEC_VERSION,
    format: INDEX_FORMAT,
    meta,
    strings: new TextEncoder().encode(list.join('\0')),
    fn,
    param: { name: Uint32Array.from(pn), type: Uint32Array.from(pt), location: Uint32Array.from(pl), inferred: Uint8Array.from(pi) },
    site,
  };
}

function materialize(e: EncodedIndex): IndexedFunction[] {
  const strings = new TextDecoder().decode(e.strings).split('\0');
  const opt = (i: number): string | undefined => (i === NONE ? undefined : strings[i]);
  const f = e.fn;
  const out: IndexedFunction[] = new Array(f.name.length);
  for (let i = 0; i < out.length; i++) {
    const flags = f.flags[i];
    const start = f.paramStart[i];
    const params: IndexedParam[] = new Array(f.paramCount[i]);
    for (let k = 0; k < params.length; k++) {
      params[k] = {
        name: strings[e.param.name[start + k]],
        type: strings[e.param.type[start + k]],
        location: strings[e.param.location[start + k]],
      };
      if (e.param.inferred[start + k]) params[k].inferred = true;
    }
    const sites: FunctionSite[] = new Array(f.siteCount[i]);
    for (let k = 0; k < sites.length; k++) {
      const j = f.siteStart[i] + k;
      const fo = e.site.fileOffset[j];
      sites[k] = {
        kind: SITE_KINDS[e.site.kind[j]],
        address: e.site.address[j],
        fileOffset: fo < 0 ? undefined : BigInt(fo),
        dieOffset: e.site.dieOffset[j],
        unitOffset: e.site.unitOffset[j],
        caller: opt(e.site.caller[j]),
        file: opt(e.site.file[j]),
        line: e.site.line[j] || undefined,
        symbol: opt(e.site.symbol[j]),
        ranges: e.site.rangeCount[j]
          ? Array.from(e.site.ranges.subarray(e.site.rangeStart[j], e.site.rangeStart[j] + e.site.rangeCount[j]))
          : undefined,
      };
    }
    const aliases = opt(f.aliases[i]);
    out[i] = {
      name: strings[f.name[i]],
      linkageName: opt(f.linkage[i]),
      file: opt(f.file[i]),
      line: f.line[i] || undefined,
      address: flags & F_HAS_ADDRESS ? f.address[i] : undefined,
      fileOffset: flags & F_HAS_OFFSET ? BigInt(f.fileOffset[i]) : undefined,
      size: f.size[i],
      params,
      inlinedInstances: f.inlined[i],
      sites,
      aliases: aliases === undefined ? undefined : aliases.split(ALIAS_SEP),
      probeable: (flags & F_PROBEABLE) !== 0,
      reason: opt(f.reason[i]),
      external: (flags & F_EXTERNAL) !== 0,
      unitOffset: f.unitOffset[i],
      dieOffset: f.dieOffset[i],
    };
  }
  return out;
}

/** IndexData whose `functions` are rebuilt from the columns on first access. */
export function decodeIndex(e: EncodedIndex): IndexData {
  const data = { ...e.meta } as IndexData;
  let fns: IndexedFunction[] | undefined;
  Object.defineProperty(data, 'functions', { enumerable: true, configurable: true, get: () => (fns ??= materialize(e)) });
  return data;
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

const exact = (x: number): boolean => Number.isSafeInteger(x) && x >= 0;

function validColumns(e: EncodedIndex): boolean {
  if (!(e.strings instanceof Uint8Array)) return false;
  let strings = 1;
  for (let i = 0; i < e.strings.length; i++) if (e.strings[i] === 0) strings++;
  const str = (id: number): boolean => id < strings;
  const opt = (id: number): boolean => id === NONE || id < strings;
  const n = columnsLength(e.fn, FN_COLUMNS);
  const np = columnsLength(e.param, PARAM_COLUMNS);
  const ns = columnsLength(e.site, SITE_COLUMNS);
  if (n < 0 || np < 0 || ns < 0 || !(e.site.ranges instanceof Float64Array)) return false;
  const { fn, param, site } = e;
  for (let i = 0; i < n; i++) {
    const flags = fn.flags[i];
    if (!str(fn.name[i]) || !opt(fn.linkage[i]) || !opt(fn.file[i]) || !opt(fn.reason[i]) || !opt(fn.aliases[i])) return false;
    if (fn.paramStart[i] + fn.paramCount[i] > np || fn.siteStart[i] + fn.siteCount[i] > ns) return false;
    if (flags & F_HAS_OFFSET && !exact(fn.fileOffset[i])) return false;
    if (!Number.isFinite(fn.size[i]) || !Number.isFinite(fn.unitOffset[i]) || !Number.isFinite(fn.dieOffset[i])) return false;
  }
  for (let i = 0; i < np; i++) if (!str(param.name[i]) || !str(param.type[i]) || !str(param.location[i])) return false;
  for (let i = 0; i < ns; i++) {
    if (site.kind[i] >= SITE_KINDS.length) return false;
    if (site.fileOffset[i] !== -1 && !exact(site.fileOffset[i])) return false;
    if (!Number.isFinite(site.dieOffset[i]) || !Number.isFinite(site.unitOffset[i])) return false;
    if (!opt(site.caller[i]) || !opt(site.file[i]) || !opt(site.symbol[i])) return false;
    if (site.rangeStart[i] + site.rangeCount[i] > site.ranges.length) return false;
  }
  return true;
}

const LINE_COLUMNS: Record<keyof IndexData['lines'], Column> = {
  address: Float64Array,
  line: Uint32Array,
  file: Uint32Array,
  flags: Uint8Array,
};

/** The header fields the index reads without checking: their types, and line rows whose files exist. */
function validMeta(m: EncodedIndex['meta']): boolean {
  if (typeof m !== 'object' || m === null) return false;
  if (typeof m.path !== 'string' || typeof m.size !== 'number' || typeof m.mtimeMs !== 'number') return false;
  if (m.buildId !== undefined && typeof m.buildId !== 'string') return false;
  if (m.arch !== 'x86_64' && m.arch !== 'aarch64') return false;
  if (!Array.isArray(m.files) || !m.files.every((f) => typeof f === 'string')) return false;
  if (columnsLength(m.lines, LINE_COLUMNS) < 0) return false;
  for (const f of m.lines.file) if (f >= m.files.length) return false;
  if (!Array.isArray(m.usdt)) return false;
  for (const u of m.usdt) {
    if (typeof u !== 'object' || u === null || typeof u.provider !== 'string' || typeof u.name !== 'string') return false;
    if (typeof u.address !== 'bigint' || typeof u.fileOffset !== 'bigint' || !Array.isArray(u.args)) return false;
  }
  return true;
}

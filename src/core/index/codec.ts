// The cache's on-disk shape of IndexData. Functions are stored column-wise over one de-duplicated string
// table instead of as an object graph: v8.deserialize of tens of thousands of small objects dominates a cache
// load, while typed arrays load at memory speed. The function objects are rebuilt from the columns the first
// time anything asks for them, so opening a cached index costs only the deserialisation.
import { INDEX_FORMAT, type FunctionSite, type IndexData, type IndexedFunction, type IndexedParam } from './model';
import { SITE_KINDS } from '../../shared/site';

export const CODEC_VERSION = 3;

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
    address: Float64Array;
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
    address: Float64Array;
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

/** Encodes for the cache, or undefined when an address would not survive a float64 column (not cached then). */
export function encodeIndex(d: IndexData): EncodedIndex | undefined {
  const ids = new Map<string, number>();
  const list: string[] = [];
  const sid = (s: string | undefined): number => {
    if (s === undefined) return NONE;
    let i = ids.get(s);
    if (i === undefined) {
      i = list.length;
      list.push(s);
      ids.set(s, i);
    }
    return i;
  };
  const n = d.functions.length;
  const fn: EncodedIndex['fn'] = {
    name: new Uint32Array(n),
    linkage: new Uint32Array(n),
    file: new Uint32Array(n),
    line: new Uint32Array(n),
    address: new Float64Array(n),
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
    if ((f.address ?? 0n) >= EXACT || (f.fileOffset ?? 0n) >= EXACT) return undefined;
    fn.name[i] = sid(f.name);
    fn.linkage[i] = sid(f.linkageName);
    fn.file[i] = sid(f.file);
    fn.line[i] = f.line ?? 0;
    fn.address[i] = Number(f.address ?? 0n);
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
      if (s.address >= EXACT || (s.fileOffset ?? 0n) >= EXACT) return undefined;
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
    address: Float64Array.from(sites, (s) => Number(s.address)),
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
        address: BigInt(e.site.address[j]),
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
      address: flags & F_HAS_ADDRESS ? BigInt(f.address[i]) : undefined,
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

export function isEncodedIndex(v: unknown): v is EncodedIndex {
  return typeof v === 'object' && v !== null && (v as EncodedIndex).codec === CODEC_VERSION && (v as EncodedIndex).format === INDEX_FORMAT;
}

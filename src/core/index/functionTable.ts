// The functions of a cached index, read from its columns one at a time. A cache load must cost the deserialisation
// and one query, not the whole index re-materialised: a kernel's 148,000 functions take half a second to rebuild as
// objects, while a query by name or by file reads a few Uint32Array columns and builds only what it returns. The
// string table is located, not decoded: the start of every string once (one pass over the bytes), a string decoded
// when a built function needs it, and a string looked up by searching its UTF-8 bytes between delimiters (native
// memchr-speed) instead of splitting the table. Every function is built once, whichever way it is reached, so the
// lazy queries and a later full materialisation hand out the same objects.
// Tests: test/unit/core/index/functionTable.test.ts, test/unit/core/index/cacheColumns.test.ts
import { ALIAS_SEP, F_EXTERNAL, F_HAS_ADDRESS, F_HAS_OFFSET, F_PROBEABLE, NONE, type EncodedIndex } from './encoded';
import type { FunctionSite, IndexedFunction, IndexedParam } from './model';
import { SITE_KINDS } from '../../shared/site';

const NUL = 0;
const SEP = 1;

/** The start offset of every string of a NUL-separated table, and one past the end of the table (length: count + 1). */
export function stringStarts(bytes: Uint8Array): Uint32Array {
  let count = 1;
  for (let i = 0; i < bytes.length; i++) if (bytes[i] === NUL) count++;
  const starts = new Uint32Array(count + 1);
  let k = 1;
  for (let i = 0; i < bytes.length; i++) if (bytes[i] === NUL) starts[k++] = i + 1;
  starts[count] = bytes.length + 1;
  return starts;
}

/** The rows (ascending) where any of `cols` holds one of `ids`: one tight loop per column, the common case a single id. */
function rowsHolding(ids: Set<number>, ...cols: Uint32Array[]): number[] {
  const rows = new Set<number>();
  for (const id of ids)
    for (const col of cols) {
      for (let i = col.indexOf(id); i >= 0; i = col.indexOf(id, i + 1)) rows.add(i);
    }
  return [...rows].sort((a, b) => a - b);
}

/**
 * Of `n` functions sorted by entry address, the one whose entry range holds an address: the last whose entry is at or
 * below it (`atOrBelow`), or one of the 7 before that one (a longer range that started earlier), whose end is past
 * it (`holds`). -1 when none is. BinaryIndex.functionContaining searches its built functions with it, the table
 * its columns.
 */
export function lastHolding(n: number, atOrBelow: (i: number) => boolean, holds: (i: number) => boolean): number {
  let lo = 0;
  let hi = n - 1;
  let found = -1;
  while (lo <= hi) {
    const mid = (lo + hi) >> 1;
    if (atOrBelow(mid)) {
      found = mid;
      lo = mid + 1;
    } else hi = mid - 1;
  }
  for (let i = found; i >= 0 && i > found - 8; i--) if (holds(i)) return i;
  return -1;
}

export class FunctionTable {
  private readonly bytes: Buffer;
  private readonly strs: Array<string | undefined>;
  private readonly built: Array<IndexedFunction | undefined>;
  private all?: IndexedFunction[];
  private decodedAll = false;
  /** containing(): rows by address, and each row's address in 32-bit halves. */
  private byAddress?: { rows: Uint32Array; hi: Uint32Array; lo: Uint32Array };
  private readonly decoder = new TextDecoder();

  constructor(private readonly e: EncodedIndex) {
    this.bytes = Buffer.from(e.strings.buffer, e.strings.byteOffset, e.strings.byteLength);
    this.built = new Array(e.fn.name.length);
    this.strs = [];
  }

  get count(): number {
    return this.e.fn.name.length;
  }

  /** How many functions have been built so far. */
  get builtCount(): number {
    let n = 0;
    for (const f of this.built) if (f) n++;
    return n;
  }

  /** Whether every function has been built (then queries may as well use the objects). */
  get complete(): boolean {
    return this.all !== undefined;
  }

  /** Every function, in index order (built on first call; those built before are reused). */
  functions(): IndexedFunction[] {
    if (this.all) return this.all;
    // Every site is wanted: a cache entry's site columns are read whole once, not function by function.
    void this.e.site;
    this.decodeAll();
    const out = new Array<IndexedFunction>(this.count);
    for (let i = 0; i < out.length; i++) out[i] = this.at(i);
    return (this.all = out);
  }

  /**
   * Functions whose name (with `linkage`, or linkage name) `re` matches, in index order: every name is tested
   * once, and only the functions that match are built (a glob over a kernel's 73,000 functions was a second of
   * building them all).
   */
  matching(re: RegExp, linkage: boolean): IndexedFunction[] {
    this.decodeAll();
    const f = this.e.fn;
    // Per string id: 0 not tested yet, 1 matches, 2 does not.
    const verdict = new Uint8Array(this.strs.length);
    const matches = (id: number): boolean => {
      if (id === NONE) return false;
      if (verdict[id] === 0) verdict[id] = re.test(this.str(id)) ? 1 : 2;
      return verdict[id] === 1;
    };
    const out: IndexedFunction[] = [];
    for (let i = 0; i < this.count; i++) if (matches(f.name[i]) || (linkage && matches(f.linkage[i]))) out.push(this.at(i));
    return out;
  }

  /** The function whose entry range [address, address + size) holds `address` (lastHolding), building only that one. */
  containing(address: bigint): IndexedFunction | undefined {
    const f = this.e.fn;
    const { rows, hi, lo } = (this.byAddress ??= this.addressOrder());
    const aHi = Number(address >> 32n);
    const aLo = Number(address & 0xffffffffn);
    const i = lastHolding(
      rows.length,
      (k) => hi[rows[k]] < aHi || (hi[rows[k]] === aHi && lo[rows[k]] <= aLo),
      (k) => address < f.address[rows[k]] + BigInt(f.size[rows[k]]),
    );
    return i < 0 ? undefined : this.at(rows[i]);
  }

  /**
   * Every site that is not an inlined copy (an entry, a clone, a part), with its function's size, in index order,
   * read from the columns: no function is built.
   */
  forEachOwnSite(visit: (site: Pick<FunctionSite, 'kind' | 'address' | 'dieOffset' | 'ranges'>, size: number) => void): void {
    const { fn: f, site } = this.e;
    for (let i = 0; i < this.count; i++) {
      const start = f.siteStart[i];
      const end = start + f.siteCount[i];
      for (let j = start; j < end; j++) {
        const kind = SITE_KINDS[site.kind[j]];
        if (kind === 'inlined') continue;
        const n = site.rangeCount[j];
        const ranges = n ? Array.from(site.ranges.subarray(site.rangeStart[j], site.rangeStart[j] + n)) : undefined;
        visit({ kind, address: site.address[j], dieOffset: site.dieOffset[j], ranges }, f.size[i]);
      }
    }
  }

  /** Rows with an address and a size, by address, then index order; each row's address in 32-bit halves. */
  private addressOrder(): { rows: Uint32Array; hi: Uint32Array; lo: Uint32Array } {
    const f = this.e.fn;
    const hi = new Uint32Array(this.count);
    const lo = new Uint32Array(this.count);
    const rows: number[] = [];
    for (let i = 0; i < this.count; i++) {
      if (!(f.flags[i] & F_HAS_ADDRESS) || !(f.size[i] > 0)) continue;
      const a = f.address[i];
      hi[i] = Number(a >> 32n);
      lo[i] = Number(a & 0xffffffffn);
      rows.push(i);
    }
    rows.sort((x, y) => hi[x] - hi[y] || lo[x] - lo[y] || x - y);
    return { rows: Uint32Array.from(rows), hi, lo };
  }

  /** Decodes the string table whole: cheaper than string by string when most strings are wanted. */
  private decodeAll(): void {
    if (this.decodedAll) return;
    const split = this.decoder.decode(this.e.strings).split('\0');
    for (let i = 0; i < split.length; i++) this.strs[i] ??= split[i];
    this.decodedAll = true;
  }

  /** The function of row `i`. */
  at(i: number): IndexedFunction {
    return (this.built[i] ??= this.build(i));
  }

  /** Functions whose name, linkage name or one of whose aliases is `name`, in index order. */
  named(name: string): IndexedFunction[] {
    const ids = this.idsHolding(name, true);
    const f = this.e.fn;
    const out: IndexedFunction[] = [];
    for (const i of rowsHolding(ids, f.name, f.linkage, f.aliases)) {
      // An alias list holds the name as an element; a name or linkage name equals it.
      if (ids.has(f.name[i]) || ids.has(f.linkage[i]) || this.str(f.aliases[i]).split(ALIAS_SEP).includes(name)) out.push(this.at(i));
    }
    return out;
  }

  /** Functions declared in `file` (normalised, as the index stores it), in index order. */
  inFile(file: string): IndexedFunction[] {
    return rowsHolding(this.idsHolding(file, false), this.e.fn.file).map((i) => this.at(i));
  }

  private str(id: number): string {
    let s = this.strs[id];
    if (s === undefined) {
      const starts = this.e.stringStarts;
      s = this.decoder.decode(this.e.strings.subarray(starts[id], starts[id + 1] - 1));
      this.strs[id] = s;
    }
    return s;
  }

  private opt(id: number): string | undefined {
    return id === NONE ? undefined : this.str(id);
  }

  /**
   * The ids of the strings equal to `s` and, with `inLists`, of the alias lists holding it as an element: every
   * occurrence of its bytes bounded by the table's delimiters (NUL, and with `inLists` the aliases' U+0001).
   */
  private idsHolding(s: string, inLists: boolean): Set<number> {
    const ids = new Set<number>();
    const needle = Buffer.from(s, 'utf8');
    const b = this.bytes;
    if (needle.length === 0 || needle.includes(NUL)) return ids;
    const bounded = (x: number | undefined): boolean => x === undefined || x === NUL || (inLists && x === SEP);
    for (let at = b.indexOf(needle); at >= 0; at = b.indexOf(needle, at + 1)) {
      if (!bounded(at === 0 ? undefined : b[at - 1]) || !bounded(at + needle.length === b.length ? undefined : b[at + needle.length]))
        continue;
      ids.add(this.idAt(at));
    }
    return ids;
  }

  /** The id of the string holding byte `offset`. */
  private idAt(offset: number): number {
    const starts = this.e.stringStarts;
    let lo = 0;
    let hi = starts.length - 2;
    while (lo < hi) {
      const mid = (lo + hi + 1) >> 1;
      if (starts[mid] <= offset) lo = mid;
      else hi = mid - 1;
    }
    return lo;
  }

  private build(i: number): IndexedFunction {
    const { fn: f, param } = this.e;
    const flags = f.flags[i];
    const start = f.paramStart[i];
    const params: IndexedParam[] = new Array(f.paramCount[i]);
    for (let k = 0; k < params.length; k++) {
      params[k] = {
        name: this.str(param.name[start + k]),
        type: this.str(param.type[start + k]),
        location: this.str(param.location[start + k]),
      };
      if (param.inferred[start + k]) params[k].inferred = true;
    }
    const sites: FunctionSite[] = new Array(f.siteCount[i]);
    // A cache entry's sites are read for this function alone until something reads them all.
    const slice = sites.length ? this.e.siteSlice?.(f.siteStart[i], sites.length) : undefined;
    const site = slice ?? this.e.site;
    const base = slice ? 0 : f.siteStart[i];
    for (let k = 0; k < sites.length; k++) {
      const j = base + k;
      const fo = site.fileOffset[j];
      sites[k] = {
        kind: SITE_KINDS[site.kind[j]],
        address: site.address[j],
        fileOffset: fo < 0 ? undefined : BigInt(fo),
        dieOffset: site.dieOffset[j],
        unitOffset: site.unitOffset[j],
        caller: this.opt(site.caller[j]),
        file: this.opt(site.file[j]),
        line: site.line[j] || undefined,
        symbol: this.opt(site.symbol[j]),
        ranges: site.rangeCount[j]
          ? Array.from(site.ranges.subarray(site.rangeStart[j], site.rangeStart[j] + site.rangeCount[j]))
          : undefined,
      };
    }
    const aliases = this.opt(f.aliases[i]);
    return {
      name: this.str(f.name[i]),
      linkageName: this.opt(f.linkage[i]),
      file: this.opt(f.file[i]),
      line: f.line[i] || undefined,
      address: flags & F_HAS_ADDRESS ? f.address[i] : undefined,
      fileOffset: flags & F_HAS_OFFSET ? BigInt(f.fileOffset[i]) : undefined,
      size: f.size[i],
      params,
      inlinedInstances: f.inlined[i],
      sites,
      aliases: aliases === undefined ? undefined : aliases.split(ALIAS_SEP),
      probeable: (flags & F_PROBEABLE) !== 0,
      reason: this.opt(f.reason[i]),
      external: (flags & F_EXTERNAL) !== 0,
      unitOffset: f.unitOffset[i],
      dieOffset: f.dieOffset[i],
    };
  }
}

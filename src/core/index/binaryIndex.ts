// Queries over one binary's IndexData. Lookup tables are built lazily on first use, so loading an index from
// the cache costs only the deserialisation; until something needs every function, a query by name or by file on a
// cached index reads the cache's columns and builds only the functions it returns (functionTable.ts).
import { Interner } from '../../shared/interner';
import { posix } from 'node:path';
import { CodeMap, type CopyAt } from './codeMap';
import { functionTableOf } from './codec';
import { lastHolding } from './functionTable';
import { LINE_END_SEQUENCE, LINE_IS_STMT, type FunctionSite, type IndexData, type IndexedFunction, type IndexedUsdt } from './model';
import { addressBig, addressNumber } from '../dwarf/format';

export interface LineLocation {
  file: string;
  line: number;
}

/** Glob (`*`, `?`) to an anchored RegExp; every other character is literal. */
export function globToRegExp(glob: string): RegExp {
  let re = '';
  for (const ch of glob) re += ch === '*' ? '.*' : ch === '?' ? '.' : ch.replace(/[.+^${}()|[\]\\]/g, '\\$&');
  return new RegExp(`^${re}$`);
}

/** Sorts functions by their declaration line, in place (stable: index order among equal lines). */
function byLine(l: IndexedFunction[]): IndexedFunction[] {
  return l.sort((a, b) => (a.line ?? 0) - (b.line ?? 0));
}

export class BinaryIndex {
  private byName?: Map<string, IndexedFunction[]>;
  private byFile?: Map<string, IndexedFunction[]>;
  private fileIds?: Interner;
  private byEntry?: IndexedFunction[];
  private codeMap?: CodeMap;

  constructor(readonly data: IndexData) {}

  get path(): string {
    return this.data.path;
  }
  get buildId(): string | undefined {
    return this.data.buildId;
  }
  get arch(): IndexData['arch'] {
    return this.data.arch;
  }
  get isGo(): boolean {
    return this.data.go !== undefined;
  }

  functions(): readonly IndexedFunction[] {
    return this.data.functions;
  }

  usdtProbes(): readonly IndexedUsdt[] {
    return this.data.usdt;
  }

  /**
   * Functions called `name` (its qualified name, linkage name, an alias symbol of its entry, or the qualified
   * name without a C++ parameter list), optionally only those declared in a source file whose path ends with `src`.
   */
  function(name: string, src?: string): IndexedFunction[] {
    // A cached index answers from its columns until every function has been built anyway.
    const table = functionTableOf(this.data);
    if (!this.byName && table && !table.complete) return this.filterBySource(table.named(name), src);
    if (!this.byName) {
      const m = new Map<string, IndexedFunction[]>();
      const add = (k: string | undefined, f: IndexedFunction) => {
        if (!k) return;
        const l = m.get(k);
        if (!l) m.set(k, [f]);
        else if (!l.includes(f)) l.push(f);
      };
      for (const f of this.data.functions) {
        add(f.name, f);
        add(f.linkageName, f);
        for (const a of f.aliases ?? []) add(a, f);
      }
      this.byName = m;
    }
    return this.filterBySource(this.byName.get(name) ?? [], src);
  }

  /** Functions whose name matches a glob; exact names win over the glob reading (Go's `(*T)` has a star). */
  findFunctions(pattern: string, src?: string): IndexedFunction[] {
    const exact = this.function(pattern, src);
    if (exact.length > 0 || !/[*?]/.test(pattern)) return exact;
    return this.filterBySource(this.functionsMatching(globToRegExp(pattern)), src);
  }

  /**
   * Functions whose name (with `linkage`, or linkage name) `re` matches, in index order. A cached index tests its
   * names column and builds only the functions that match.
   */
  functionsMatching(re: RegExp, linkage = false): IndexedFunction[] {
    const table = functionTableOf(this.data);
    if (table && !table.complete) return table.matching(re, linkage);
    return this.data.functions.filter((f) => re.test(f.name) || (linkage && f.linkageName !== undefined && re.test(f.linkageName)));
  }

  functionsInFile(file: string): IndexedFunction[] {
    const table = functionTableOf(this.data);
    if (!this.byFile && table && !table.complete) return byLine(table.inFile(posix.normalize(file)));
    if (!this.byFile) {
      const m = new Map<string, IndexedFunction[]>();
      for (const f of this.data.functions) {
        if (!f.file) continue;
        const l = m.get(f.file);
        if (l) l.push(f);
        else m.set(f.file, [f]);
      }
      for (const l of m.values()) byLine(l);
      this.byFile = m;
    }
    return this.byFile.get(posix.normalize(file)) ?? [];
  }

  /** Source files the binary's line table mentions. */
  sourceFiles(): readonly string[] {
    return this.data.files;
  }

  /** The function whose code holds `line` of `file` (by the line table), else the nearest declared above it. */
  functionAt(file: string, line: number): IndexedFunction | undefined {
    for (const addr of this.addressesForLine(file, line)) {
      const f = this.functionContaining(addr);
      if (f) return f;
    }
    let best: IndexedFunction | undefined;
    for (const f of this.functionsInFile(file)) if (f.line !== undefined && f.line <= line) best = f;
    return best;
  }

  /** The function whose entry range [address, address+size) contains `address`. */
  functionContaining(address: bigint): IndexedFunction | undefined {
    const table = functionTableOf(this.data);
    if (!this.byEntry && table && !table.complete) return table.containing(address);
    if (!this.byEntry) {
      this.byEntry = this.data.functions
        .filter((f) => f.address !== undefined && f.size > 0)
        .sort((a, b) => (a.address! < b.address! ? -1 : a.address! > b.address! ? 1 : 0));
    }
    const list = this.byEntry;
    const i = lastHolding(
      list.length,
      (k) => list[k].address! <= address,
      (k) => address < list[k].address! + BigInt(list[k].size),
    );
    return i < 0 ? undefined : list[i];
  }

  /**
   * Every site that is not an inlined copy (an entry, a clone, a part), with its function's size, in index order. A
   * cached index reads them from its columns without building the functions.
   */
  forEachOwnSite(visit: (site: Pick<FunctionSite, 'kind' | 'address' | 'dieOffset' | 'ranges'>, size: number) => void): void {
    const table = functionTableOf(this.data);
    if (table && !table.complete) return table.forEachOwnSite(visit);
    for (const f of this.data.functions) for (const s of f.sites) if (s.kind !== 'inlined') visit(s, f.size);
  }

  /** Every function copy (site) whose code holds `address`, innermost first. */
  copiesAt(address: bigint): CopyAt[] {
    return (this.codeMap ??= new CodeMap(this.data.functions)).at(addressNumber(address));
  }

  /** Every distinct `is_stmt` address of `file:line`, ascending. */
  addressesForLine(file: string, line: number): bigint[] {
    const id = this.fileId(file);
    if (id === undefined) return [];
    const { address, line: lines, file: files, flags } = this.data.lines;
    const out = new Set<number>();
    for (let i = 0; i < address.length; i++) {
      if (lines[i] === line && files[i] === id && flags[i] & LINE_IS_STMT && !(flags[i] & LINE_END_SEQUENCE)) out.add(address[i]);
    }
    return [...out].sort((a, b) => a - b).map((a) => addressBig(a));
  }

  /** Lines of `file` that have at least one is_stmt address (where a line probe can go). */
  probeableLines(file: string): number[] {
    const id = this.fileId(file);
    if (id === undefined) return [];
    const { line: lines, file: files, flags } = this.data.lines;
    const out = new Set<number>();
    for (let i = 0; i < lines.length; i++)
      if (files[i] === id && flags[i] & LINE_IS_STMT && !(flags[i] & LINE_END_SEQUENCE)) out.add(lines[i]);
    return [...out].sort((a, b) => a - b);
  }

  /**
   * Whether every row strictly between addresses `from` and `to` is `file:line`, in one sequence: the code from
   * `from` up to `to` is that line's alone (so `to` continues a block of it that starts at or before `from`).
   */
  onlyLineBetween(from: bigint, to: bigint, file: string, line: number): boolean {
    const id = this.fileId(file);
    const lo = addressNumber(from);
    const hi = addressNumber(to);
    const { address, line: lines, file: files, flags } = this.data.lines;
    let i = this.firstRowAbove(lo);
    for (; i < address.length && address[i] < hi; i++) {
      if (flags[i] & LINE_END_SEQUENCE || lines[i] !== line || files[i] !== id) return false;
    }
    return true;
  }

  /** Index of the first row whose address is above `a`. */
  private firstRowAbove(a: number): number {
    const { address } = this.data.lines;
    let lo = 0;
    let hi = address.length;
    while (lo < hi) {
      const mid = (lo + hi) >> 1;
      if (address[mid] <= a) lo = mid + 1;
      else hi = mid;
    }
    return lo;
  }

  /** The source line of an address (the last row at or below it in its sequence). */
  lineForAddress(addr: bigint): LineLocation | undefined {
    const a = addressNumber(addr);
    const { address, line, file, flags } = this.data.lines;
    let lo = 0;
    let hi = address.length - 1;
    let found = -1;
    while (lo <= hi) {
      const mid = (lo + hi) >> 1;
      if (address[mid] <= a) {
        found = mid;
        lo = mid + 1;
      } else hi = mid - 1;
    }
    // Rows are sorted with end-of-sequence rows first among equal addresses, so landing on one means the
    // address lies in a gap between sequences.
    if (found < 0 || flags[found] & LINE_END_SEQUENCE) return undefined;
    return { file: this.data.files[file[found]], line: line[found] };
  }

  private fileId(file: string): number | undefined {
    this.fileIds ??= new Interner(this.data.files);
    return this.fileIds.find(posix.normalize(file));
  }

  private filterBySource(list: IndexedFunction[], src?: string): IndexedFunction[] {
    if (!src) return list;
    const s = posix.normalize(src);
    return list.filter((f) => f.file !== undefined && (f.file === s || f.file.endsWith(`/${s.replace(/^\.\//, '')}`)));
  }
}

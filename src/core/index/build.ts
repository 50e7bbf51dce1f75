// Builds the full IndexData of a binary: symbols and PT_LOAD offsets from the executable, functions,
// parameters and line tables from DWARF (the binary's own or a separate debug file), USDT notes, Go facts.
// Runs in the index worker; callers use loadIndex() (cache first) rather than this directly.
// Tests: test/unit/core/index/build.test.ts, test/unit/core/index/openFile.test.ts, test/unit/core/index/oracles.test.ts, test/unit/core/index/corpusCases.test.ts,
//   test/unit/core/index/sites.test.ts
import { openBinary, type BinaryImage, type OpenBinaryOptions } from '../binary/binaryImage';
import { joinReadMaps, type FileReadMap } from '../binary/fileBytes';
import { demangle, withoutRustHash } from '../demangle';
import { readBinaryIdentity } from './identity';
import type { FunctionSymbol, SymbolGroup } from '../binary/symbols';
import { dwarfFileSlice, mergeDwarfSlices } from './fromDwarf';
import { dwarfSlices, indexWorkerCount } from './worker/pool';
import { reusingDwarfSlices, type UnitReuseStats } from './unitReuse';
import { symbolKind } from './sites';
import { INDEX_FORMAT, type IndexData, type IndexedFunction, type IndexedUsdt, type LineRows } from './model';
import { addressNumber } from '../dwarf/format';

export interface BuildOptions extends OpenBinaryOptions {
  onProgress?: (message: string) => void;
  /** Threads indexing the DWARF (this one included); absent or 0: sized to the machine and the binary. */
  workers?: number;
  /** The heap limit of each helper worker, in MiB (absent: V8's default). */
  memoryLimitMb?: number;
  /**
   * Index only what one source file (normalised absolute path, as the DWARF names it) needs: the units whose
   * line table names it; the rest of the binary is known by its symbol table only (so a name defined in another
   * unit too is still seen to be ambiguous). Where DIEs refer across units the whole index is built.
   */
  onlyFile?: string;
  /**
   * The index cache's directory: each DWARF unit's share of the index is read from its unit cache when nothing
   * the unit's indexing reads changed, and stored there otherwise (unitReuse.ts). Absent: no reuse.
   */
  unitCacheDir?: string;
  /** What the unit cache gave (called once, when it was used). */
  onUnitReuse?: (stats: UnitReuseStats) => void;
  /**
   * What the build read of the binary and its debug file, by this thread and its helpers together (called once,
   * at the end): which chunks of each file, so a caller can tell how much of which section was read.
   */
  onReads?: (maps: FileReadMap[]) => void;
}

export async function buildIndex(path: string, opts: BuildOptions = {}): Promise<IndexData> {
  const identity = readBinaryIdentity(path);
  // The binary is read range by range, never whole: one file's index reads the few ranges its units need, the
  // whole index the sections it decodes (not the code, nor a vmlinux's relocation sections); each helper worker
  // reads its own share the same way.
  const image = await openBinary(path, { ...opts, readOnDemand: true });
  try {
    return await build(path, image, identity, opts);
  } finally {
    image.close();
  }
}

async function build(
  path: string,
  image: BinaryImage,
  identity: ReturnType<typeof readBinaryIdentity>,
  opts: BuildOptions,
): Promise<IndexData> {
  const arch = image.elf.requireProbeableArch();
  const go = image.goInfo();
  let functions: IndexedFunction[] = [];
  let files: string[] = [];
  let lines: LineRows = emptyLines();
  let code: number[] = [];
  let onlyFile: string | undefined;
  let helperReads: FileReadMap[] = [];
  if (image.hasDwarf) {
    const fileSlice = opts.onlyFile !== undefined ? dwarfFileSlice(image, opts.onlyFile) : undefined;
    if (fileSlice) onlyFile = opts.onlyFile;
    const parts = fileSlice ? 1 : indexWorkerCount(image.dwarf().section('.debug_info')?.length ?? 0, opts.workers);
    opts.onProgress?.(
      `reading DWARF of ${path}${image.debugPath !== path ? ` from ${image.debugPath}` : ''}${onlyFile ? ` for ${onlyFile}` : ''}${parts > 1 && !opts.unitCacheDir ? ` on ${parts} threads` : ''}`,
    );
    const reused =
      !fileSlice && opts.unitCacheDir !== undefined
        ? await reusingDwarfSlices(image, { ...opts, indexCacheDir: opts.unitCacheDir })
        : undefined;
    if (reused) {
      const s = reused.stats;
      opts.onUnitReuse?.(s);
      opts.onProgress?.(`reused ${s.reused} of ${s.units} DWARF units from the unit cache, indexed ${s.indexed}`);
    }
    const slices = reused ? reused.slices : fileSlice ? [fileSlice] : await dwarfSlices(image, parts, opts);
    helperReads = slices.flatMap((s) => s.fileReads ?? []);
    // The shares are not used again: their line columns go as the merged ones are made.
    const part = mergeDwarfSlices(slices, true);
    functions = part.functions;
    files = part.files;
    lines = part.lines;
    code = part.code;
  }
  functions = mergeSymbols(image, functions, code);
  const usdt = image.usdtProbes();
  opts.onReads?.(joinReadMaps([...image.readMaps(), ...helperReads]));
  return {
    format: INDEX_FORMAT,
    path,
    size: identity.size,
    mtimeMs: identity.mtimeMs,
    buildId: image.buildId,
    arch,
    elfType: image.type,
    debugFile: image.debugPath !== path ? image.debugPath : undefined,
    symbolsOnly: !image.hasDwarf,
    onlyFile,
    go: go?.version ? { version: go.version, regabi: go.abi === 'register' } : undefined,
    functions,
    files,
    lines,
    usdt: usdt.map((p): IndexedUsdt => ({
      provider: p.provider,
      name: p.name,
      address: p.address,
      fileOffset: BigInt(p.fileOffset),
      semaphore: p.semaphore,
      semaphoreFileOffset: p.semaphoreFileOffset !== undefined ? BigInt(p.semaphoreFileOffset) : undefined,
      args: p.args.map((a) => ({ size: a.size, signed: a.signed, operand: a.text, parsed: a.operand })),
    })),
  };
}

export function emptyLines(): LineRows {
  return { address: new Float64Array(0), line: new Uint32Array(0), file: new Uint32Array(0), flags: new Uint8Array(0) };
}

/**
 * Functions the symbol table knows but DWARF does not (assembly, libraries built without -g, a binary with no
 * debug info at all) are listed too, by symbol, without source or parameters. DWARF functions get their file
 * offsets here, from the executable's program headers.
 */
function mergeSymbols(image: BinaryImage, fromDwarf: IndexedFunction[], code: number[]): IndexedFunction[] {
  const { groups } = image.functionSymbols();
  const offsetOf = (a: bigint): bigint | undefined => {
    try {
      return BigInt(image.fileOffsetOf(a));
    } catch {
      return undefined;
    }
  };
  const known = new Set<bigint>();
  const entries = new Map<bigint, IndexedFunction>();
  if (image.goInfo()) fromDwarf = withoutAbiWrappers(image, fromDwarf, known);
  fromDwarf = mergeSameDeclaration(mergeSameEntry(fromDwarf));
  for (const f of fromDwarf) {
    f.sites = f.sites.filter((s) => (s.fileOffset = offsetOf(s.address)) !== undefined);
    for (const s of f.sites) {
      known.add(s.address);
      if (s.kind === 'entry') entries.set(s.address, f);
    }
    if (f.address === undefined) continue;
    known.add(f.address);
    f.fileOffset = offsetOf(f.address);
    if (f.fileOffset === undefined) {
      f.probeable = false;
      f.reason = 'its address is in no loadable segment of the binary';
    } else f.probeable = f.sites.length > 0;
  }
  // The first address of each name a DWARF function without code is known by (only those are looked up).
  const wanted = new Set<string>();
  for (const f of fromDwarf) if (f.sites.length === 0) wanted.add(f.linkageName ?? f.name);
  const byName = new Map<string, bigint>();
  if (wanted.size > 0)
    for (let i = 0; i < groups.length; i++) {
      const g = groups[i];
      for (let j = 0; j < g.symbols.length; j++) {
        const name = g.symbols[j].name;
        if (wanted.has(name) && !byName.has(name)) byName.set(name, g.address);
      }
    }
  // Other names of an entry (aliases, .localalias) name the same function.
  for (const [address, f] of entries) {
    const g = groupAt(groups, address);
    const other = g?.symbols.map((s) => s.name).filter((n) => n !== f.name && n !== f.linkageName && symbolKind(n) === 'entry');
    if (other?.length) f.aliases = other;
  }
  // A DWARF declaration whose code lives under another symbol (an alias declared in a header) is that code.
  const dropped = new Set<IndexedFunction>();
  for (const f of fromDwarf) {
    if (f.sites.length > 0) continue;
    const address = byName.get(f.linkageName ?? f.name);
    if (address === undefined) continue;
    if (entries.has(address)) {
      dropped.add(f);
      continue;
    }
    const fileOffset = offsetOf(address);
    const g = groupAt(groups, address);
    if (fileOffset === undefined || !g || insideCode(code, address)) continue;
    f.address = address;
    f.fileOffset = fileOffset;
    f.size = Number(g.size);
    f.sites = [{ kind: 'entry', address, fileOffset, dieOffset: f.dieOffset, unitOffset: f.unitOffset }];
    f.probeable = true;
    f.reason = undefined;
    known.add(address);
    entries.set(address, f);
  }
  const out = dropped.size ? fromDwarf.filter((f) => !dropped.has(f)) : fromDwarf;
  // Functions the symbol table knows but DWARF does not. Symbols inside a DWARF function's code (its .cold
  // block, a part) belong to that function and are not listed again.
  for (let i = 0; i < groups.length; i++) {
    // A kernel has 46,000 groups: this loop makes no more than the function it lists.
    const g = groups[i];
    const address = g.address;
    if (address === 0n || known.has(address) || insideCode(code, address)) continue;
    const syms = g.symbols;
    // A `.cold` block is code split off a function (its unlikely paths), never a function or an entry of its own,
    // even when, as for libraries built without -g, no DWARF says whose it is. The function is named by the first
    // global symbol of the others, else the first of them.
    let first: FunctionSymbol | undefined, global: FunctionSymbol | undefined;
    for (let j = 0; j < syms.length; j++) {
      const s = syms[j];
      if (symbolKind(s.name) === 'cold') continue;
      first ??= s;
      if (!global && s.binding === 'global') global = s;
    }
    const sym = global ?? first;
    if (!sym) continue;
    const fileOffset = offsetOf(address);
    if (fileOffset === undefined) continue;
    // Only a demangled name has parameters or a Rust hash to drop.
    const name = sym.name;
    const demangled = demangle(name);
    const pretty = /[:(]/.test(demangled) ? withoutRustHash(demangled).replace(/\(.*\)( const)?$/, '') : demangled;
    const probeable = sym.kind === 'func';
    let aliases: string[] | undefined;
    if (syms.length > 1) for (let j = 0; j < syms.length; j++) if (syms[j].name !== name) (aliases ??= []).push(syms[j].name);
    out.push({
      name: pretty,
      linkageName: pretty !== name ? name : undefined,
      address,
      fileOffset,
      size: Number(g.size),
      params: [],
      inlinedInstances: 0,
      sites: probeable ? [{ kind: 'entry', address, fileOffset, dieOffset: -1, unitOffset: -1 }] : [],
      aliases,
      probeable,
      reason: sym.kind === 'ifunc' ? 'it is an IFUNC resolver, not the implementation' : undefined,
      external: sym.binding !== 'local',
      unitOffset: -1,
      dieOffset: -1,
    });
  }
  return out;
}

/**
 * Go's linker emits ABI wrappers (ABI0 <-> ABIInternal, DWARF file `<autogenerated>`) under the name of the
 * function they forward to: `pkg.F.abi0` for a Go function called from assembly, plain `pkg.F` for an assembly
 * function (`pkg.F.abi0`) called from Go. A call through a wrapper reaches the function's own entry, so a wrapper
 * is not a site (arming both would count such a call twice); its address is marked known so the symbol pass does
 * not list it either. The function keeps the symbol at its own entry as its linkage name.
 */
function withoutAbiWrappers(image: BinaryImage, fns: IndexedFunction[], known: Set<bigint>): IndexedFunction[] {
  const real = new Map<string, IndexedFunction>();
  for (const f of fns) if (f.file !== '<autogenerated>' && f.sites.length > 0) real.set(f.name, f);
  const { groups } = image.functionSymbols();
  const out: IndexedFunction[] = [];
  for (const f of fns) {
    const target = f.file === '<autogenerated>' ? real.get(f.name) : undefined;
    if (!target) {
      out.push(f);
      continue;
    }
    for (const s of f.sites) known.add(s.address);
    if (f.address !== undefined) known.add(f.address);
    const at = target.address !== undefined ? groupAt(groups, target.address) : undefined;
    const own = at?.symbols.find((s) => s.name === `${target.linkageName ?? target.name}.abi0`);
    if (own) target.linkageName = own.name;
  }
  return out;
}

/**
 * One function per (name, entry address): a C++ template instance or inline function has a concrete DIE in every
 * unit that emitted it, while the linker kept one copy of the code, which each of those DIEs describes. Their
 * sites merge; a site another unit's DIE already gave (same address) is that same code. Within one unit two
 * sites at one address stay two: inlined copies of two calls whose code GCC merged (`f(k) + f(k)`) are two calls
 * each time that address runs.
 */
export function mergeSameEntry(fns: IndexedFunction[]): IndexedFunction[] {
  const first = new Map<string, IndexedFunction>();
  const out: IndexedFunction[] = [];
  for (const f of fns) {
    const key = f.address !== undefined ? `${f.name}\0${f.address}` : undefined;
    const into = key !== undefined ? first.get(key) : undefined;
    if (!into) {
      if (key !== undefined) first.set(key, f);
      out.push(f);
      continue;
    }
    const have = new Set(into.sites.map((s) => s.address));
    into.sites = [...into.sites, ...f.sites.filter((s) => !have.has(s.address))];
    into.inlinedInstances += f.inlinedInstances;
    into.probeable ||= f.probeable;
  }
  return out;
}

/**
 * One function per declaration: a header's inline function (the kernel's `get_current`, `fdget_pos`, its
 * `extern inline` fortify helpers) has an abstract DIE in every unit that uses it, each with that unit's inlined
 * copies. DIEs of one name declared at one file:line are that one source function: those without code of their own
 * merge into the one out-of-line copy when there is one, else into one function. Where two or more units emitted it
 * out of line (two entries) those copies stay separate functions, as statics of one name in different files are, and
 * the units that only inlined it are one more.
 */
export function mergeSameDeclaration(fns: IndexedFunction[]): IndexedFunction[] {
  const groups = new Map<string, IndexedFunction[]>();
  for (const f of fns) {
    if (!f.file || f.line === undefined || f.dieOffset < 0) continue;
    const key = `${f.name}\0${f.file}\0${f.line}`;
    const g = groups.get(key);
    if (g) g.push(f);
    else groups.set(key, [f]);
  }
  const gone = new Set<IndexedFunction>();
  for (const g of groups.values()) {
    const withCode = g.filter((f) => f.address !== undefined);
    const rest = g.filter((f) => f.address === undefined);
    if (rest.length === 0 || (rest.length === 1 && withCode.length !== 1)) continue;
    const into = withCode.length === 1 ? withCode[0] : (rest.find((f) => f.probeable) ?? rest[0]);
    for (const f of rest) {
      if (f === into) continue;
      into.sites = [...into.sites, ...f.sites];
      into.inlinedInstances += f.inlinedInstances;
      if (f.probeable && !into.probeable) {
        into.probeable = true;
        into.reason = undefined;
      }
      gone.add(f);
    }
  }
  return gone.size ? fns.filter((f) => !gone.has(f)) : fns;
}

function groupAt(groups: readonly SymbolGroup[], address: bigint): SymbolGroup | undefined {
  let lo = 0,
    hi = groups.length - 1;
  while (lo <= hi) {
    const mid = (lo + hi) >> 1;
    const a = groups[mid].address;
    if (a === address) return groups[mid];
    if (a < address) lo = mid + 1;
    else hi = mid - 1;
  }
  return undefined;
}

/** Whether `address` lies in a DWARF function's code (its ranges as [lo, hi) pairs sorted by start). */
function insideCode(code: readonly number[], address: bigint): boolean {
  const a = addressNumber(address);
  // Ranges may nest or overlap (a copy's ranges inside another's are rare but legal): look back a little.
  let lo = 0,
    hi = code.length / 2 - 1,
    found = -1;
  while (lo <= hi) {
    const mid = (lo + hi) >> 1;
    if (code[mid * 2] <= a) {
      found = mid;
      lo = mid + 1;
    } else hi = mid - 1;
  }
  for (let i = found; i >= 0 && i > found - 16; i--) if (a >= code[i * 2] && a < code[i * 2 + 1]) return true;
  return false;
}

// What the rest of ProbeLens opens: the executable (symbols, PT_LOAD offsets, notes, code bytes) paired with
// wherever its DWARF lives (itself, or a separate debug file found by build-id/debuglink).
import { findDebugFile, type DebugCandidate, type DebugLookupOptions, type DebugVia } from './debugFile';
import { ElfFile, machineName, type Arch, type ElfType } from './elfFile';
import { EM_AARCH64, EM_X86_64, ET_CORE, elfKind } from './elfHeader';
import { CoreFileError, UnsupportedArchError } from './errors';
import { readGoInfo, type GoInfo } from './goinfo';
import type { FileReadMap } from './fileBytes';
import type { SectionSource } from './sections';
import type { FunctionSymbol, SymbolGroup } from './symbols';
import { readRegularFile } from './regularFile';
import { readUsdtProbes, type UsdtProbe } from './usdt';

export interface OpenBinaryOptions extends DebugLookupOptions {
  /** Open objects of any machine (listing only); by default non-x86-64/AArch64 throws UnsupportedArchError. */
  anyArch?: boolean;
}

export class BinaryImage {
  private usdtCache?: UsdtProbe[];
  private goCache?: { v: GoInfo | undefined };

  constructor(
    /** The executable or shared library. */
    readonly elf: ElfFile,
    /** The separate debug file, when one was found and verified. */
    readonly debugElf: ElfFile | undefined,
    /** How the DWARF was found: 'self' when the binary carries it, undefined when there is none. */
    readonly debugVia: DebugVia | 'self' | undefined,
    /** Every debug-file candidate that was tried and why it was (not) used. */
    readonly debugCandidates: DebugCandidate[],
  ) {}

  get path(): string {
    return this.elf.path;
  }
  get arch(): Arch | undefined {
    return this.elf.arch;
  }
  get type(): ElfType {
    return this.elf.type;
  }
  get buildId(): string | undefined {
    return this.elf.buildId;
  }
  /** Path of the file the DWARF comes from, or undefined when there is no DWARF. */
  get debugPath(): string | undefined {
    return this.debugVia === 'self' ? this.elf.path : this.debugElf?.path;
  }
  get hasDwarf(): boolean {
    return this.debugVia !== undefined;
  }

  /** Closes the files an image opened with `readOnDemand` reads from (what was read stays readable). */
  close(): void {
    this.elf.close();
    this.debugElf?.close();
  }

  /** What was read of the binary and its debug file so far (all of a file not opened with `readOnDemand`). */
  readMaps(): FileReadMap[] {
    return this.debugElf ? [this.elf.readMap(), this.debugElf.readMap()] : [this.elf.readMap()];
  }

  /** DWARF sections (decompressed) from the debug file, or from the binary itself. */
  dwarf(): SectionSource {
    return (this.debugElf ?? this.elf).sectionSource();
  }

  /**
   * Function symbols of the executable; when it has no .symtab (stripped), the debug file's .symtab is
   * merged in (its addresses are the executable's, objcopy --only-keep-debug keeps them).
   */
  functionSymbols(): { symbols: FunctionSymbol[]; groups: SymbolGroup[] } {
    const own = this.elf.functionSymbols();
    if (this.elf.section('.symtab') || !this.debugElf?.section('.symtab')) return own;
    const theirs = this.debugElf.functionSymbols();
    return mergeSymbolSets(own, theirs);
  }

  fileOffsetOf(vaddr: bigint): number {
    return this.elf.fileOffsetOf(vaddr);
  }

  /** N for a tracefs `@+N` fetch of the global at `address` from a probe at `probeAddress` (see ElfFile). */
  fetchOffsetOf(address: bigint, probeAddress: bigint): bigint {
    return this.elf.fetchOffsetOf(address, probeAddress);
  }

  functionBytes(sym: Pick<FunctionSymbol, 'address' | 'size'>): Uint8Array {
    return this.elf.functionBytes(sym);
  }

  usdtProbes(): UsdtProbe[] {
    return (this.usdtCache ??= readUsdtProbes(this.elf));
  }

  /** Go toolchain facts, or undefined for a non-Go binary. */
  goInfo(): GoInfo | undefined {
    return (this.goCache ??= { v: readGoInfo(this.elf) }).v;
  }
}

function mergeSymbolSets(a: { groups: SymbolGroup[] }, b: { groups: SymbolGroup[] }): { symbols: FunctionSymbol[]; groups: SymbolGroup[] } {
  const byAddr = new Map<bigint, SymbolGroup>();
  for (const g of [...a.groups, ...b.groups]) {
    const have = byAddr.get(g.address);
    if (!have) {
      byAddr.set(g.address, { address: g.address, size: g.size, symbols: [...g.symbols] });
      continue;
    }
    for (const s of g.symbols) if (!have.symbols.some((x) => x.name === s.name)) have.symbols.push(s);
    if (g.size > have.size) have.size = g.size;
  }
  const groups = [...byAddr.values()].sort((x, y) => (x.address < y.address ? -1 : x.address > y.address ? 1 : 0));
  return { symbols: groups.flatMap((g) => g.symbols), groups };
}

/**
 * Opens a binary and locates its DWARF. Throws NotRegularFileError (a directory, FIFO, device, socket or link
 * loop: never opened for blocking reads), NotElfError, CoreFileError, ElfFormatError, UnsupportedArchError
 * (unless anyArch), DebugFileMismatchError (explicit debugFile only), or the fs error when it can't be read.
 */
export async function openBinary(path: string, opts: OpenBinaryOptions = {}): Promise<BinaryImage> {
  const anyArch = opts.anyArch ?? false;
  let elf: ElfFile;
  if (opts.readOnDemand) elf = ElfFile.open(path, {}, (head) => checkKind(head, path, anyArch));
  else {
    const data = await readRegularFile(path);
    checkKind(data, path, anyArch);
    elf = ElfFile.parse(data, path);
  }
  try {
    if (!opts.anyArch) elf.requireProbeableArch();
    if (elf.hasDebugInfo && !opts.debugFile) return new BinaryImage(elf, undefined, 'self', []);
    const found = await findDebugFile(elf, opts);
    if (found.debug) return new BinaryImage(elf, found.debug, found.via, found.tried);
    return new BinaryImage(elf, undefined, elf.hasDebugInfo ? 'self' : undefined, found.tried);
  } catch (e) {
    elf.close();
    throw e;
  }
}

/**
 * What the ELF header's identification says, before the tables are parsed: a core dump is not a program,
 * and a foreign machine's file is refused as such, not reported as whatever its tables trip over first.
 */
function checkKind(data: Buffer, path: string, anyArch: boolean): void {
  const kind = elfKind(data);
  if (!kind) return;
  if (kind.type === ET_CORE) throw new CoreFileError(path);
  if (!anyArch && kind.machine !== EM_X86_64 && kind.machine !== EM_AARCH64)
    throw new UnsupportedArchError(machineName(kind.machine), path);
}

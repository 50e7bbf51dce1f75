// Builds the full IndexData of a binary: symbols and PT_LOAD offsets from the executable, functions,
// parameters and line tables from DWARF (the binary's own or a separate debug file), USDT notes, Go facts.
// Runs in the index worker; callers use loadIndex() (cache first) rather than this directly.
import { openBinary, type BinaryImage, type OpenBinaryOptions } from '../binary/binaryImage';
import { demangle, withoutRustHash } from '../demangle';
import { readBinaryIdentity } from './identity';
import { dwarfIndexPart } from './fromDwarf';
import { INDEX_FORMAT, type IndexData, type IndexedFunction, type IndexedUsdt, type LineRows } from './model';

export interface BuildOptions extends OpenBinaryOptions {
  onProgress?: (message: string) => void;
}

export async function buildIndex(path: string, opts: BuildOptions = {}): Promise<IndexData> {
  const identity = readBinaryIdentity(path);
  const image = await openBinary(path, opts);
  const arch = image.elf.requireProbeableArch();
  const go = image.goInfo();
  let functions: IndexedFunction[] = [];
  let files: string[] = [];
  let lines: LineRows = emptyLines();
  if (image.hasDwarf) {
    opts.onProgress?.(`reading DWARF of ${path}${image.debugPath !== path ? ` from ${image.debugPath}` : ''}`);
    const part = dwarfIndexPart(image);
    functions = part.functions;
    files = part.files;
    lines = part.lines;
  }
  functions = mergeSymbols(image, functions);
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
    go: go?.version ? { version: go.version, regabi: go.abi === 'register' } : undefined,
    functions,
    files,
    lines,
    usdt: image.usdtProbes().map((p): IndexedUsdt => ({
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
function mergeSymbols(image: BinaryImage, fromDwarf: IndexedFunction[]): IndexedFunction[] {
  const known = new Set<bigint>();
  for (const f of fromDwarf) {
    if (f.address === undefined) continue;
    known.add(f.address);
    try {
      f.fileOffset = BigInt(image.fileOffsetOf(f.address));
    } catch {
      f.probeable = false;
      f.reason = 'its address is in no loadable segment of the binary';
    }
  }
  const out = fromDwarf;
  for (const g of image.functionSymbols().groups) {
    if (known.has(g.address) || g.address === 0n) continue;
    const sym = g.symbols.find((s) => s.binding === 'global') ?? g.symbols[0];
    let fileOffset: bigint | undefined;
    try {
      fileOffset = BigInt(image.fileOffsetOf(g.address));
    } catch {
      continue;
    }
    const pretty = withoutRustHash(demangle(sym.name)).replace(/\(.*\)( const)?$/, '');
    out.push({
      name: pretty,
      linkageName: pretty !== sym.name ? sym.name : undefined,
      address: g.address,
      fileOffset,
      size: Number(g.size),
      params: [],
      inlinedInstances: 0,
      probeable: sym.kind === 'func',
      reason: sym.kind === 'ifunc' ? 'it is an IFUNC resolver, not the implementation' : undefined,
      external: sym.binding !== 'local',
      unitOffset: -1,
      dieOffset: -1,
    });
  }
  return out;
}

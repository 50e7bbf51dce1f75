// What discovery needs to know of each candidate binary before anything is indexed: its identity (build-id,
// inode), whether it is a program or a library, where its DWARF is (its own, a separate debug file, none and
// why), and which source files its DWARF names (compile units' root names and line-table file lists only;
// see dwarf/sourceFiles.ts), read range by range as the index reads it (a quarter of the file, not all of it).
// Results are kept per path until the file changes.
import { stat } from 'node:fs/promises';
import { openBinary, type BinaryImage } from '../binary/binaryImage';
import type { FileReadMap } from '../binary/fileBytes';
import { ET_DYN, ET_EXEC, ET_REL } from '../binary/elfHeader';
import { isKernelModule } from '../probes/kernel';
import { sourceFilesOf } from '../dwarf/sourceFiles';
import { elfType, type BinaryKind } from './discover';

const PT_INTERP = 3;

export interface BinaryScan {
  path: string;
  size: number;
  mtimeMs: number;
  dev: number;
  ino: number;
  buildId?: string;
  kind: BinaryKind;
  /** 'self': the binary carries DWARF; 'separate': a verified debug file does; 'none': nothing does */
  debug: 'self' | 'separate' | 'none';
  debugPath?: string;
  /** Why there is no DWARF, as a user should read it (debug 'none'). */
  noDebugReason?: string;
  /** Compile units' primary source files (normalised absolute build-side paths). */
  units: ReadonlySet<string>;
  /** Every source file the line tables name, headers included. */
  files: ReadonlySet<string>;
  /** The file could not be read or parsed: why (units and files are empty). */
  error?: string;
}

export interface ScanOptions {
  debugDirs?: string[];
  /** tests: stay independent of the machine's /usr/lib/debug */
  noSystemDebugDir?: boolean;
  /** What was read of the binary and its debug file (read range by range: the headers and the DWARF scanned). */
  onReads?: (maps: FileReadMap[]) => void;
}

/**
 * Scans one file; undefined when it is not a linked ELF program or shared library, nor a kernel module (a relocatable
 * object with the module's `.modinfo`, read as if linked, as the index reads it).
 */
export async function scanBinary(path: string, opts: ScanOptions = {}): Promise<BinaryScan | undefined> {
  const type = elfType(path);
  if (type !== ET_EXEC && type !== ET_DYN && type !== ET_REL) return undefined;
  const st = await stat(path);
  const base = { path, size: st.size, mtimeMs: st.mtimeMs, dev: st.dev, ino: st.ino };
  try {
    const image = await openBinary(path, { debugDirs: opts.debugDirs, noSystemDebugDir: opts.noSystemDebugDir, readOnDemand: true });
    try {
      return scanImage(image, path, type, base);
    } finally {
      opts.onReads?.(image.readMaps());
      image.close();
    }
  } catch (e) {
    return {
      ...base,
      kind: type === ET_REL ? 'kernel-module' : 'executable',
      debug: 'none',
      noDebugReason: (e as Error).message,
      error: (e as Error).message,
      units: new Set(),
      files: new Set(),
    };
  }
}

function scanImage(
  image: BinaryImage,
  path: string,
  type: number,
  base: Pick<BinaryScan, 'path' | 'size' | 'mtimeMs' | 'dev' | 'ino'>,
): BinaryScan | undefined {
  if (type === ET_REL && !isKernelModule(image)) return undefined;
  const kind: BinaryKind =
    type === ET_REL
      ? 'kernel-module'
      : type === ET_DYN && !image.elf.segments.some((s) => s.type === PT_INTERP)
        ? 'shared-library'
        : 'executable';
  if (!image.hasDwarf) {
    const tried = image.debugCandidates.map((c) => `${c.path}: ${c.verdict}`);
    const lookedFor = ` and no separate debug file was found${
      tried.length
        ? ` (tried ${tried.join('; ')})`
        : !image.buildId && !image.elf.debugLink
          ? ' (it has no build-id or .gnu_debuglink to find one by)'
          : ''
    }`;
    // Without -g and after `strip --strip-debug` a file looks the same; without .symtab it was fully stripped.
    const noDebugReason = image.elf.section('.symtab')
      ? `it has no debug info (built without -g, or stripped)${lookedFor}`
      : `it is stripped (no symbols, no debug info)${lookedFor}`;
    return { ...base, buildId: image.buildId, kind, debug: 'none', noDebugReason, units: new Set(), files: new Set() };
  }
  const sf = sourceFilesOf(image.dwarf());
  return {
    ...base,
    buildId: image.buildId,
    kind,
    debug: image.debugVia === 'self' ? 'self' : 'separate',
    debugPath: image.debugPath !== path ? image.debugPath : undefined,
    units: new Set(sf.units),
    files: new Set(sf.files),
  };
}

/** Scans kept per path and reused while the file's size, mtime and inode stay the same. */
export class ScanCache {
  private readonly byPath = new Map<string, Promise<BinaryScan | undefined>>();

  constructor(private readonly opts: () => ScanOptions = () => ({})) {}

  async get(path: string): Promise<BinaryScan | undefined> {
    const st = await stat(path).catch(() => undefined);
    if (!st) {
      this.byPath.delete(path);
      return undefined;
    }
    const have = this.byPath.get(path);
    if (have) {
      const s = await have;
      if (s && s.size === st.size && s.mtimeMs === st.mtimeMs && s.ino === st.ino) return s;
    }
    const p = scanBinary(path, this.opts());
    this.byPath.set(path, p);
    return p;
  }

  forget(path: string): void {
    this.byPath.delete(path);
  }

  clear(): void {
    this.byPath.clear();
  }
}

// Finding the separate debug file of a stripped binary, in gdb's order: by build-id under each debug root
// (`ROOT/.build-id/ab/cdef….debug`), then by .gnu_debuglink next to the binary, in its `.debug/` subfolder,
// and under each root mirrored by the binary's directory (`/usr/lib/debug/usr/bin/x.debug`). A candidate is
// used only when it proves it belongs: same build-id, or the debuglink's CRC32 over the whole file.
import { realpath } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { crc32 } from './crc32';
import { debuginfodRoot } from './debuginfod';
import { ElfFile } from './elfFile';
import { DebugFileMismatchError, isBinaryFormatError } from './errors';
import { NotRegularFileError, readRegularFile } from './regularFile';

export const SYSTEM_DEBUG_DIR = '/usr/lib/debug';

export interface DebugLookupOptions {
  /** Extra debug roots, searched before /usr/lib/debug (both for .build-id/ and for debuglink mirrors). */
  debugDirs?: string[];
  /** Don't search /usr/lib/debug (tests use this to stay independent of the machine). */
  noSystemDebugDir?: boolean;
  /** An explicit debug file; a mismatch is an error instead of being skipped. */
  debugFile?: string;
  /**
   * Read the binary and its debug file range by range as they are needed (ElfFile.open) instead of whole: the
   * index of one source file reads a few of a large binary's megabytes. The caller closes what it opened
   * (BinaryImage.close); a candidate found wanting is closed here.
   */
  readOnDemand?: boolean;
}

export type DebugVia = 'explicit' | 'build-id' | 'debuglink';

/** What was tried, for "why was no debug info found" messages. */
export interface DebugCandidate {
  path: string;
  via: DebugVia;
  verdict: 'used' | 'missing' | 'build-id mismatch' | 'crc mismatch' | 'not an ELF file' | 'no debug info';
}

export interface DebugLookupResult {
  debug?: ElfFile;
  via?: DebugVia;
  tried: DebugCandidate[];
}

export async function findDebugFile(binary: ElfFile, opts: DebugLookupOptions = {}): Promise<DebugLookupResult> {
  const tried: DebugCandidate[] = [];
  // After the system's: the files debuginfod servers gave us (debuginfod.ts), found by build-id as the system's are.
  const roots = [...(opts.debugDirs ?? []), ...(opts.noSystemDebugDir ? [] : [SYSTEM_DEBUG_DIR, debuginfodRoot()])];
  const buildId = binary.buildId;
  const link = binary.debugLink;
  const self = await realpath(binary.path).catch(() => binary.path);

  const check = async (path: string, via: DebugVia): Promise<ElfFile | undefined> => {
    const elf = await open(path, via);
    if (!elf) return undefined;
    try {
      const used = verify(elf, path, via);
      if (!used) elf.close();
      return used;
    } catch (e) {
      elf.close();
      throw e;
    }
  };

  const open = async (path: string, via: DebugVia): Promise<ElfFile | undefined> => {
    let data: Buffer | undefined;
    try {
      if ((await realpath(path)) === self) return undefined;
      if (!opts.readOnDemand) data = await readRegularFile(path);
    } catch {
      tried.push({ path, via, verdict: 'missing' });
      return undefined;
    }
    try {
      return data ? ElfFile.parse(data, path) : ElfFile.open(path);
    } catch (e) {
      if (!isBinaryFormatError(e)) {
        // Read on demand, the file is opened here: an fs error is a missing file as above.
        if (data || !(e instanceof NotRegularFileError || (e as NodeJS.ErrnoException).code !== undefined)) throw e;
        tried.push({ path, via, verdict: 'missing' });
        return undefined;
      }
      tried.push({ path, via, verdict: 'not an ELF file' });
      return undefined;
    }
  };

  const verify = (elf: ElfFile, path: string, via: DebugVia): ElfFile | undefined => {
    const theirs = elf.buildId;
    if (buildId && theirs && theirs !== buildId) {
      tried.push({ path, via, verdict: 'build-id mismatch' });
      if (via === 'explicit') throw new DebugFileMismatchError(path, binary.path, `build-id ${theirs} vs ${buildId}`);
      return undefined;
    }
    if (via === 'debuglink' && link && crc32(elf.wholeFile()) !== link.crc32) {
      tried.push({ path, via, verdict: 'crc mismatch' });
      return undefined;
    }
    if (via === 'explicit' && !(buildId && theirs) && link && crc32(elf.wholeFile()) !== link.crc32) {
      tried.push({ path, via, verdict: 'crc mismatch' });
      throw new DebugFileMismatchError(
        path,
        binary.path,
        `CRC32 0x${crc32(elf.wholeFile()).toString(16)} vs .gnu_debuglink's 0x${link.crc32.toString(16)}`,
      );
    }
    if (!elf.hasDebugInfo) {
      tried.push({ path, via, verdict: 'no debug info' });
      return undefined;
    }
    tried.push({ path, via, verdict: 'used' });
    return elf;
  };

  if (opts.debugFile) {
    const debug = await check(opts.debugFile, 'explicit');
    if (debug) return { debug, via: 'explicit', tried };
  }
  if (buildId && buildId.length > 2) {
    for (const root of roots) {
      const debug = await check(join(root, '.build-id', buildId.slice(0, 2), `${buildId.slice(2)}.debug`), 'build-id');
      if (debug) return { debug, via: 'build-id', tried };
    }
  }
  if (link) {
    const dir = dirname(self);
    for (const path of [join(dir, link.file), join(dir, '.debug', link.file), ...roots.map((r) => join(r, dir, link.file))]) {
      const debug = await check(path, 'debuglink');
      if (debug) return { debug, via: 'debuglink', tried };
    }
  }
  return { tried };
}

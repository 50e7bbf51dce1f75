// Finding a project's ELF binaries: the user's globs (setting `probelens.binaries`, relative to the workspace)
// or, without them, ELF executables and shared libraries in the usual build folders. Reads 4 bytes per
// candidate, never follows symlinked directories, and stops at fixed limits so a huge tree cannot stall.
import { closeSync, openSync, readSync, type Dirent } from 'node:fs';
import { readdir, stat } from 'node:fs/promises';
import { join, relative, sep } from 'node:path';

export const DEFAULT_BUILD_DIRS = [
  '.',
  'build',
  'builddir',
  'out',
  'bin',
  'target/debug',
  'target/release',
  'cmake-build-debug',
  'cmake-build-release',
  '_build',
  'dist',
];
const SKIP_DIRS = new Set(['node_modules', '.git', '.hg', '.svn', '.vscode', '.cache', 'vendor', '.deps', 'incremental', 'deps']);
const MAX_DEPTH = 4;
const MAX_ENTRIES = 20000;
const MAX_RESULTS = 200;

export interface FoundBinary {
  path: string;
  /** Path relative to the workspace root, for display. */
  label: string;
  kind: 'executable' | 'shared-library';
  size: number;
  mtimeMs: number;
}

export function isElfFile(path: string): boolean {
  let fd: number | undefined;
  try {
    fd = openSync(path, 'r');
    const b = Buffer.alloc(4);
    return readSync(fd, b, 0, 4, 0) === 4 && b.readUInt32BE(0) === 0x7f454c46;
  } catch {
    return false;
  } finally {
    if (fd !== undefined) closeSync(fd);
  }
}

/**
 * ELF binaries under `root`: those matching `globs` (relative, `**` allowed) when given, else executables and
 * `.so` files in DEFAULT_BUILD_DIRS (the root itself only one level deep). Sorted newest first.
 */
export async function discoverBinaries(root: string, globs: readonly string[] = []): Promise<FoundBinary[]> {
  const found = new Map<string, FoundBinary>();
  let budget = MAX_ENTRIES;
  const matchers = globs.map((g) => globToPathRegExp(g));
  const walk = async (dir: string, depth: number): Promise<void> => {
    if (depth > MAX_DEPTH || budget <= 0 || found.size >= MAX_RESULTS) return;
    let entries: Dirent[];
    try {
      entries = await readdir(dir, { withFileTypes: true });
    } catch {
      return;
    }
    for (const e of entries) {
      if (--budget <= 0) return;
      const p = join(dir, e.name);
      if (e.isDirectory()) {
        if (!SKIP_DIRS.has(e.name) && !e.name.startsWith('.')) await walk(p, depth + 1);
        continue;
      }
      if (!e.isFile()) continue;
      const rel = relative(root, p).split(sep).join('/');
      if (matchers.length > 0 && !matchers.some((m) => m.test(rel))) continue;
      await consider(p, rel, matchers.length > 0);
    }
  };
  const consider = async (p: string, rel: string, explicit: boolean): Promise<void> => {
    const st = await stat(p).catch(() => undefined);
    if (!st) return;
    const isSo = /\.so(\.[0-9]+)*$/.test(p);
    if (!explicit && !isSo && (st.mode & 0o111) === 0) return;
    if (/\.(o|a|ko|debug)$/.test(p) || !isElfFile(p)) return;
    found.set(p, { path: p, label: rel, kind: isSo ? 'shared-library' : 'executable', size: st.size, mtimeMs: st.mtimeMs });
  };
  if (matchers.length > 0) await walk(root, 0);
  else {
    for (const d of DEFAULT_BUILD_DIRS) {
      const dir = join(root, d);
      if (d !== '.') {
        await walk(dir, 1);
        continue;
      }
      // Only the root's own files: its subfolders are either build dirs (walked here) or sources.
      const entries = await readdir(dir, { withFileTypes: true }).catch(() => [] as Dirent[]);
      for (const e of entries) if (e.isFile()) await consider(join(dir, e.name), e.name, false);
    }
  }
  return [...found.values()].sort((a, b) => b.mtimeMs - a.mtimeMs || a.label.localeCompare(b.label));
}

/** A workspace-relative glob: `**` spans folders, `*` and `?` stay within one. */
export function globToPathRegExp(glob: string): RegExp {
  const g = glob.replace(/^\.\//, '');
  let re = '';
  for (let i = 0; i < g.length; i++) {
    const ch = g[i];
    if (ch === '*' && g[i + 1] === '*') {
      re += g[i + 2] === '/' ? '(?:.*/)?' : '.*';
      i += g[i + 2] === '/' ? 2 : 1;
    } else if (ch === '*') re += '[^/]*';
    else if (ch === '?') re += '[^/]';
    else re += ch.replace(/[.+^${}()|[\]\\]/g, '\\$&');
  }
  return new RegExp(`^${re}$`);
}

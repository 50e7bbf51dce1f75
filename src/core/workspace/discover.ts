// Finding a project's ELF binaries: the user's globs (setting `probelens.binaries`, relative to the workspace)
// or, without them, every ELF executable and shared library anywhere in the tree — in-tree Make/autotools
// builds (redis, PostgreSQL, nginx put binaries next to their sources), CMake/Meson build folders, Cargo's
// `target/`, Go module roots, a kernel tree's `vmlinux` and its loadable modules (`*.ko`). Reads 20 bytes per
// candidate, follows a symbolic link only to a file outside the tree (never into a folder: no loops, no walking the whole disk; a link inside the tree
// names a file the walk finds anyway), and stops at a file and a time budget so a huge tree cannot stall the
// editor; the result says when a budget cut the walk short. A kernel image is not executable (the dbg package's
// `vmlinux-RELEASE` is mode 0644, and too big to copy: a workspace links to it), so a file named `vmlinux*` needs
// no execute bit; nor does a module (`NAME.ko`, an ELF relocatable object: the kernel links it when it loads it),
// which is the one kind of relocatable object discovery keeps. A compressed module (`.ko.xz`, `.ko.zst`) is not.
// Tests: test/unit/core/workspace/discover.test.ts
import { closeSync, readSync, type Dirent } from 'node:fs';
import { ET_DYN, ET_EXEC, ET_REL, elfKind } from '../binary/elfHeader';
import { openRegularFileSync } from '../binary/regularFile';
import { readdir, realpath, stat } from 'node:fs/promises';
import { basename, join, relative, sep } from 'node:path';

// Folders that never hold the project's own build output, or hold only copies and intermediates of it:
// Cargo's deps/ (hash-suffixed copies of target/*/NAME), incremental/ and .fingerprint/, build-script
// binaries under target/*/build/ are skipped by skipDir().
const SKIP_DIRS = new Set(['node_modules', 'vendor', 'incremental', 'deps', '__pycache__', 'CMakeFiles']);
const MAX_DEPTH = 16;

export interface DiscoverBudget {
  /** directory entries looked at (files and folders) */
  maxEntries: number;
  /** wall-clock milliseconds for the walk */
  maxMs: number;
  /** binaries kept */
  maxResults: number;
}

export const DEFAULT_BUDGET: DiscoverBudget = { maxEntries: 200_000, maxMs: 5_000, maxResults: 1_000 };

/** A program, a shared library, or a kernel's loadable module (a `.ko`). */
export type BinaryKind = 'executable' | 'shared-library' | 'kernel-module';

export interface FoundBinary {
  path: string;
  /** Path relative to the workspace root, for display. */
  label: string;
  kind: BinaryKind;
  size: number;
  mtimeMs: number;
}

export interface Discovery {
  binaries: FoundBinary[];
  /** directory entries looked at */
  entries: number;
  elapsedMs: number;
  /** set when a budget ended the walk early: which one */
  truncated?: 'entries' | 'time' | 'results';
}

/** The ELF object type (e_type) of a file, or undefined when it is not an ELF file. */
export function elfType(path: string): number | undefined {
  let fd: number | undefined;
  try {
    fd = openRegularFileSync(path);
    const b = Buffer.alloc(20);
    return elfKind(b.subarray(0, readSync(fd, b, 0, 20, 0)))?.type;
  } catch {
    return undefined;
  } finally {
    if (fd !== undefined) closeSync(fd);
  }
}

export function isElfFile(path: string): boolean {
  return elfType(path) !== undefined;
}

function skipDir(name: string, parentRel: string): boolean {
  // libtool keeps the real ELF files in .libs/ (the top-level names are wrapper scripts).
  if ((name.startsWith('.') && name !== '.libs') || SKIP_DIRS.has(name)) return true;
  // Cargo: target/<profile>/build/ holds build-script executables, not the crate's program.
  return name === 'build' && /(^|\/)target\/[^/]+$/.test(parentRel);
}

/**
 * ELF executables, shared libraries and kernel modules (`.ko`) under `root` (other relocatable objects, cores and
 * scripts are not), newest
 * first: those matching `globs` (relative, `**` allowed) when given, else all of them; an absolute entry of
 * `globs` is one file, anywhere, listed by its path.
 */
export async function discoverWorkspace(
  root: string,
  globs: readonly string[] = [],
  budget: DiscoverBudget = DEFAULT_BUDGET,
): Promise<Discovery> {
  const t0 = Date.now();
  const found = new Map<string, FoundBinary>();
  // An absolute entry names one file, wherever it is (a kernel's vmlinux under /usr/lib/debug): taken as it is.
  const files = globs.filter((g) => g.startsWith('/'));
  const matchers = globs.filter((g) => !g.startsWith('/')).map((g) => globToPathRegExp(g));
  let entries = 0;
  let truncated: Discovery['truncated'];
  const over = (): boolean => {
    if (truncated) return true;
    if (entries >= budget.maxEntries) truncated = 'entries';
    else if (found.size >= budget.maxResults) truncated = 'results';
    else if (Date.now() - t0 > budget.maxMs) truncated = 'time';
    return truncated !== undefined;
  };
  const consider = async (p: string, rel: string, named = false): Promise<void> => {
    const explicit = globs.length > 0;
    if (explicit && !named && !matchers.some((m) => m.test(rel))) return;
    const isSo = /\.so(\.[0-9]+)*$/.test(p);
    const isKo = p.endsWith('.ko');
    if (/\.(o|a|debug|dwo)$/.test(p)) return;
    const st = await stat(p).catch(() => undefined);
    if (!st?.isFile() || st.size < 64) return;
    if (!explicit && !isSo && !isKo && (st.mode & 0o111) === 0 && !/^vmlinux([-.][^/]*)?$/.test(basename(p))) return;
    const type = elfType(p);
    if (isKo ? type !== ET_REL : type !== ET_EXEC && type !== ET_DYN) return;
    const kind = isKo ? 'kernel-module' : isSo ? 'shared-library' : 'executable';
    found.set(p, { path: p, label: rel, kind, size: st.size, mtimeMs: st.mtimeMs });
  };
  // A link to a file in the tree (libfoo.so → libfoo.so.1.2) names a file the walk finds anyway: only links that
  // leave the tree (a kernel tree's vmlinux → /usr/lib/debug/boot/vmlinux-RELEASE) are followed.
  const realRoot = await realpath(root).catch(() => root);
  const outside = async (link: string): Promise<boolean> => {
    const to = await realpath(link).catch(() => undefined);
    return to !== undefined && to !== realRoot && !to.startsWith(`${realRoot}${sep}`);
  };
  for (const f of files) await consider(f, f, true);
  // Breadth-first: a budget that runs out leaves the shallow folders (where builds usually put their
  // programs) looked at rather than one deep corner. Only absolute entries in the setting: nothing to walk for.
  let level: Array<{ dir: string; rel: string }> = files.length && !matchers.length ? [] : [{ dir: root, rel: '' }];
  for (let depth = 0; level.length > 0 && depth <= MAX_DEPTH && !over(); depth++) {
    const next: typeof level = [];
    for (const { dir, rel } of level) {
      if (over()) break;
      let list: Dirent[];
      try {
        list = await readdir(dir, { withFileTypes: true });
      } catch {
        continue;
      }
      for (const e of list) {
        if (over()) break;
        entries++;
        const childRel = rel ? `${rel}/${e.name}` : e.name;
        if (e.isDirectory()) {
          if (!skipDir(e.name, rel)) next.push({ dir: join(dir, e.name), rel: childRel });
        } else if (e.isFile()) await consider(join(dir, e.name), childRel);
        else if (e.isSymbolicLink() && (await outside(join(dir, e.name)))) await consider(join(dir, e.name), childRel);
      }
    }
    level = next;
  }
  const binaries = [...found.values()].sort((a, b) => b.mtimeMs - a.mtimeMs || a.label.localeCompare(b.label));
  return { binaries, entries, elapsedMs: Date.now() - t0, truncated };
}

/** discoverWorkspace's binaries alone. */
export async function discoverBinaries(root: string, globs: readonly string[] = []): Promise<FoundBinary[]> {
  return (await discoverWorkspace(root, globs)).binaries;
}

/** The workspace-relative form of a path, `/`-separated. */
export function workspaceLabel(root: string, path: string): string {
  return relative(root, path).split(sep).join('/');
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

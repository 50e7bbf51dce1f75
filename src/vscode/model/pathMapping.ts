// Builds made elsewhere (a CI box, a container) name sources by the build machine's paths. The setting
// `probelens.pathMappings` maps a build-side prefix to a local one ({"/build/src": "${workspaceFolder}"});
// these two functions translate in both directions. A build-side prefix may be relative: a build made with
// -fdebug-prefix-map (Debian's kernel) names its sources relative to a relative compilation directory
// (`debian/build/build_amd64_none_cloud-amd64/fs/open.c`). No `vscode` import: unit-tested in plain node.
import { posix } from 'node:path';

export type PathMappings = Readonly<Record<string, string>>;

/** Expands `${workspaceFolder}` (and `${workspaceFolder:NAME}` with only one folder known) in a local prefix. */
export function expandLocalPrefix(prefix: string, workspaceFolder: string | undefined): string | undefined {
  if (!/\$\{workspaceFolder(:[^}]*)?\}/.test(prefix)) return prefix;
  if (!workspaceFolder) return undefined;
  return prefix.replace(/\$\{workspaceFolder(:[^}]*)?\}/g, workspaceFolder);
}

function under(path: string, prefix: string): string | undefined {
  const p = posix.normalize(prefix).replace(/\/+$/, '');
  if (path === p) return '';
  if (path.startsWith(`${p}/`)) return path.slice(p.length);
  return undefined;
}

interface Pair {
  build: string;
  local: string;
}

function pairs(mappings: PathMappings, workspaceFolder: string | undefined): Pair[] {
  const out: Pair[] = [];
  for (const [build, localRaw] of Object.entries(mappings)) {
    const local = expandLocalPrefix(localRaw, workspaceFolder);
    // A relative build prefix is kept relative (`./x` is `x`); `.` alone or one climbing out (`../x`) maps nothing.
    const b = posix.normalize(build).replace(/\/+$/, '');
    if (local && b && b !== '.' && b !== '..' && !b.startsWith('../')) out.push({ build: b, local: posix.normalize(local) });
  }
  // The most specific prefix wins, whichever side is matched.
  return out;
}

function longest(path: string, ps: Pair[], from: 'build' | 'local'): string {
  let best: { rest: string; len: number; to: string } | undefined;
  for (const p of ps) {
    const rest = under(path, p[from]);
    if (rest !== undefined && (!best || p[from].length > best.len))
      best = { rest, len: p[from].length, to: p[from === 'build' ? 'local' : 'build'] };
  }
  return best ? posix.normalize(best.to.replace(/\/+$/, '') + best.rest) : path;
}

/** A local source path as the binary's DWARF names it. Unmapped paths are returned unchanged. */
export function localToBuild(localPath: string, mappings: PathMappings, workspaceFolder?: string): string {
  return longest(posix.normalize(localPath), pairs(mappings, workspaceFolder), 'local');
}

/** A DWARF source path as a local file. Unmapped paths are returned unchanged. */
export function buildToLocal(buildPath: string, mappings: PathMappings, workspaceFolder?: string): string {
  return longest(posix.normalize(buildPath), pairs(mappings, workspaceFolder), 'build');
}

/** The binary's path on a remote target: the same path unless the target maps a local prefix to a remote one. */
export function remoteBinaryPath(localBinary: string, remote: { localPrefix?: string; remotePrefix?: string }): string {
  if (!remote.localPrefix || !remote.remotePrefix) return localBinary;
  const rest = under(posix.normalize(localBinary), remote.localPrefix);
  return rest === undefined ? localBinary : posix.normalize(remote.remotePrefix.replace(/\/+$/, '') + rest);
}

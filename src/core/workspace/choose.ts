// Choosing the binary for a source file among a workspace's binaries. Copies of one build (redis installs
// redis-server as redis-sentinel, redis-check-aof and redis-check-rdb: one build-id) are one choice; of
// the distinct builds, those whose DWARF names the file are candidates, best first. Pure: unit-tested on
// real scans.
// Tests: test/unit/core/workspace/scan.test.ts
import type { BinaryScan } from './scan';

export interface Build {
  /** The copy shown and indexed: the oldest (the linker's output; copies are made after it), then the shortest path. */
  primary: BinaryScan;
  /** Every file of this build, the primary included. */
  copies: BinaryScan[];
}

export interface Choice {
  /** Distinct builds whose DWARF names the file, best first. */
  builds: Build[];
  /** Builds whose DWARF could not be read (stripped, no debug file, damaged): they might hold the file. */
  unreadable: Build[];
}

/** Groups copies of one build: same GNU build-id, else same file (hard links). */
export function groupBuilds(scans: readonly BinaryScan[]): Build[] {
  const groups = new Map<string, BinaryScan[]>();
  for (const s of scans) {
    const key = s.buildId ? `id:${s.buildId}` : `ino:${s.dev}:${s.ino}`;
    const g = groups.get(key);
    if (g) g.push(s);
    else groups.set(key, [s]);
  }
  return [...groups.values()].map((copies) => {
    copies.sort((a, b) => a.mtimeMs - b.mtimeMs || a.path.length - b.path.length || a.path.localeCompare(b.path));
    return { primary: copies[0], copies };
  });
}

/**
 * The builds that `buildFile` (a normalised absolute path as the DWARF would name it) was compiled into.
 * Ranked: the file is a compile unit's own source (not just an included header) first, then programs before
 * libraries, then the newest build.
 */
export function chooseBinaries(scans: readonly BinaryScan[], buildFile: string): Choice {
  const builds = groupBuilds(scans);
  const matching = builds.filter((b) => b.primary.files.has(buildFile) || b.primary.units.has(buildFile));
  const score = (b: Build): number => (b.primary.units.has(buildFile) ? 2 : 0) + (b.primary.kind === 'executable' ? 1 : 0);
  const newest = (b: Build): number => Math.max(...b.copies.map((c) => c.mtimeMs));
  matching.sort((a, b) => score(b) - score(a) || newest(b) - newest(a) || a.primary.path.localeCompare(b.primary.path));
  const unreadable = builds.filter((b) => b.primary.debug === 'none');
  return { builds: matching, unreadable };
}

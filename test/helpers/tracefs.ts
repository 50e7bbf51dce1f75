// Integration tests need the real tracefs. This finds it (mounting it when root and absent) and checks that the
// kernel offers uprobe events; anything short of that is a missing prerequisite (skip locally, fail under CI).
import type { TestContext } from 'node:test';
import { execFileSync } from 'node:child_process';
import { accessSync, constants, existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { missing } from './require';

export const TRACEFS = '/sys/kernel/tracing';
const LEGACY = '/sys/kernel/debug/tracing';

function isTracefsMount(path: string): boolean {
  // /proc/self/mounts escapes spaces; our candidate paths have none.
  return readFileSync('/proc/self/mounts', 'utf8')
    .split('\n')
    .some((line) => {
      const [, mountPoint, fsType] = line.split(' ');
      return mountPoint === path && fsType === 'tracefs';
    });
}

function isRoot(): boolean {
  return typeof process.getuid === 'function' && process.getuid() === 0;
}

/**
 * Finds (and if needed mounts) tracefs, or explains why not. Exported so non-test code (benchmarks,
 * fixtures scripts) can reuse the probing without a TestContext.
 */
export function locateTracefs(): { path: string } | { reason: string } {
  let path: string | undefined = [TRACEFS, LEGACY].find((p) => existsSync(join(p, 'uprobe_events')));
  if (!path) {
    if (!isRoot()) {
      return isTracefsMount(TRACEFS)
        ? { reason: `tracefs at ${TRACEFS} is not accessible to this user (run the tests as root)` }
        : { reason: `tracefs is not mounted at ${TRACEFS} and mounting it needs root` };
    }
    if (!existsSync(TRACEFS)) return { reason: `${TRACEFS} does not exist: the kernel lacks tracefs (CONFIG_TRACING)` };
    if (!isTracefsMount(TRACEFS)) {
      try {
        execFileSync('mount', ['-t', 'tracefs', 'nodev', TRACEFS], { stdio: ['ignore', 'ignore', 'pipe'] });
      } catch (e) {
        const stderr = (e as { stderr?: Buffer }).stderr?.toString().trim();
        return { reason: `mount -t tracefs nodev ${TRACEFS} failed: ${stderr || (e as Error).message}` };
      }
    }
    if (!existsSync(join(TRACEFS, 'uprobe_events'))) {
      return { reason: `${TRACEFS}/uprobe_events is missing: the kernel was built without CONFIG_UPROBE_EVENTS` };
    }
    path = TRACEFS;
  }
  try {
    accessSync(join(path, 'uprobe_events'), constants.R_OK | constants.W_OK);
  } catch {
    return { reason: `${path}/uprobe_events is not readable and writable by this user (run the tests as root)` };
  }
  return { path };
}

/**
 * Returns the tracefs mount path, or `undefined` after marking the test skipped (under CI=true it throws instead,
 * failing the test). The return type forces the check; use it as:
 *
 *   const tracefs = requireTracefs(t);
 *   if (!tracefs) return;
 */
export function requireTracefs(t: TestContext): string | undefined {
  const found = locateTracefs();
  if ('reason' in found) {
    missing(t, found.reason);
    return undefined;
  }
  return found.path;
}

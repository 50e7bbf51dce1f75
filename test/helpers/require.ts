// Node's test runner counts a skip as a pass. A prerequisite that is missing (no root, no tracefs, no sshd)
// therefore skips with its reason on a developer's machine, but fails under CI=true, where every tier
// must really run.
import type { TestContext } from 'node:test';

export const IN_CI = process.env.CI === 'true' || process.env.CI === '1';

export class PrerequisiteMissing extends Error {
  constructor(what: string) {
    super(`prerequisite missing: ${what}`);
    this.name = 'PrerequisiteMissing';
  }
}

/**
 * Call when a prerequisite is missing. Returns normally after marking the test skipped (the caller must
 * then return); under CI it throws so the test fails.
 */
export function missing(t: TestContext, what: string): void {
  if (IN_CI) throw new PrerequisiteMissing(`${what} (CI=true: tests that need it must run)`);
  t.skip(what);
}

/**
 * `get()`, except that a missing prerequisite — an error of class `Missing` (a toolchain, a corpus project) — skips
 * the test, and fails it under CI=true, via missing().
 */
export async function orSkip<T>(
  t: TestContext,
  get: () => Promise<T>,
  Missing: abstract new (...args: never[]) => Error,
): Promise<T | undefined> {
  try {
    return await get();
  } catch (e) {
    if (!(e instanceof Missing)) throw e;
    missing(t, e.message);
    return undefined;
  }
}

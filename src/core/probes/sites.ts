// What the compiler says about a function's sites: the site a probe (and so each of its hits) belongs to, and the
// limit on how many sites one spec may arm before someone confirms it.
// Tests: test/unit/core/probes/lines.test.ts, test/unit/core/probes/compiler.test.ts, test/unit/cli/sites.test.ts
import { siteAddress } from '../../shared/site';
import type { BinaryIndex } from '../index/binaryIndex';
import { resolvePoint } from './resolve';
import { parseSpec, type ProbeSpec } from './spec';

export class CompileError extends Error {
  constructor(
    readonly spec: string,
    message: string,
  ) {
    super(`${spec}: ${message}`);
    this.name = 'CompileError';
  }
}

/**
 * Sites a spec may arm before it must be confirmed, where each site is an event of its own (a kernel without
 * immediate fetch arguments): each event costs ≈45 ms of kernel time to disarm, which the agent spends after the
 * session has stopped, the traced program still taking the event's traps meanwhile. Elsewhere sites share events.
 */
export const DEFAULT_MAX_SITES = 128;
/** Kernel time to disarm one uprobe event, measured on Linux 6.1 (synchronize_rcu per event). */
export const DISARM_MS_PER_SITE = 45;

/** A spec would arm more sites than allowed: the caller confirms (editor) or raises the limit (CLI --max-sites). */
export class TooManySitesError extends CompileError {
  constructor(
    spec: string,
    readonly sites: number,
    readonly limit: number,
  ) {
    super(
      spec,
      `would arm ${sites} sites (more than ${limit}); after the trace the target spends about ${teardownText(sites)} disarming them, the program still trapping meanwhile. Narrow it with NAME@FILE, or allow it (CLI: --max-sites ${sites})`,
    );
    this.name = 'TooManySitesError';
  }
}

export function teardownText(sites: number): string {
  const ms = sites * DISARM_MS_PER_SITE;
  return ms < 1000 ? `${ms} ms` : `${(Math.round(ms / 100) / 10).toFixed(1)} s`;
}

/**
 * How many sites each spec would arm (resolution only, no compilation): what the editor asks about and the CLI
 * checks before anything is armed. Specs that do not resolve count 0 (compiling them reports why).
 */
export function siteCounts(
  specs: ReadonlyArray<string | ProbeSpec>,
  index: BinaryIndex,
  disabledSites?: ReadonlySet<string>,
): Array<{ spec: string; sites: number }> {
  return specs.map((s) => {
    const spec = typeof s === 'string' ? parseSpec(s) : s;
    try {
      const sites = resolvePoint(spec.point, index);
      return { spec: spec.text, sites: sites.filter((x) => !x.site || !disabledSites?.has(siteAddress(x.address))).length };
    } catch {
      return { spec: spec.text, sites: 0 };
    }
  });
}

/** Throws TooManySitesError for the first spec over the limit. */
export function checkSiteLimit(
  specs: ReadonlyArray<string | ProbeSpec>,
  index: BinaryIndex,
  opts: { maxSites?: number; disabledSites?: ReadonlySet<string> },
): void {
  const limit = opts.maxSites ?? DEFAULT_MAX_SITES;
  for (const c of siteCounts(specs, index, opts.disabledSites)) if (c.sites > limit) throw new TooManySitesError(c.spec, c.sites, limit);
}

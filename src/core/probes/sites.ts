// What the compiler says about a function's sites: the site a probe (and so each of its hits) belongs to, and the
// limit on how many sites one spec may arm before someone confirms it.
import type { SiteKind } from '../index/model';

export class CompileError extends Error {
  constructor(
    readonly spec: string,
    message: string,
  ) {
    super(`${spec}: ${message}`);
    this.name = 'CompileError';
  }
}

/** A hit's site, as JSON carries it (addresses as "0x…"). */
export interface ProbeSite {
  kind: SiteKind;
  address: string;
  caller?: string;
  file?: string;
  line?: number;
}

/** Sites a spec may arm before it must be confirmed (each costs ≈45 ms of kernel time to disarm). */
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
      `would arm ${sites} sites (more than ${limit}); disarming them takes about ${teardownText(sites)} of kernel time. Narrow it with NAME@FILE, or allow it (CLI: --max-sites ${sites})`,
    );
    this.name = 'TooManySitesError';
  }
}

export function teardownText(sites: number): string {
  const ms = sites * DISARM_MS_PER_SITE;
  return ms < 1000 ? `${ms} ms` : `${(ms / 1000).toFixed(1)} s`;
}

export const siteAddress = (a: bigint): string => `0x${a.toString(16)}`;

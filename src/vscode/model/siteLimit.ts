// Where each site is an event of its own (a target kernel without immediate fetch arguments), arming many sites is
// slow to undo: nobody waits for the teardown (the agent disarms after the session has stopped), but each uprobe
// event costs the kernel ≈45 ms to disarm, and until it is disarmed the traced program still takes its trap. Arming
// them is cheap (definitions and enables cost no synchronisation). So a spec over the limit is armed only once the
// user has agreed to its size. Pure: the question's text and what was agreed.
import { DEFAULT_MAX_SITES, teardownText } from '../../core/probes/sites';

export interface SiteCount {
  spec: string;
  sites: number;
}

/** The modal question for the specs over the limit, or undefined when none is. */
export function siteQuestion(counts: readonly SiteCount[], limit = DEFAULT_MAX_SITES): { message: string; over: SiteCount[] } | undefined {
  const over = counts.filter((c) => c.sites > limit);
  if (over.length === 0) return undefined;
  const total = over.reduce((n, c) => n + c.sites, 0);
  const what = over.map((c) => `'${c.spec}' (${c.sites} sites)`).join(', ');
  return {
    message: `${what} would arm ${total} sites, more than ${limit}. Stopping does not wait for them, but the target then spends about ${teardownText(total)} disarming them, while the traced program still takes their traps. Arm every site?`,
    over,
  };
}

/** The site limit a set of specs may arm with, given the sizes the user agreed to. */
export function allowedSites(specs: readonly string[], agreed: ReadonlyMap<string, number>): number {
  return Math.max(DEFAULT_MAX_SITES, ...specs.map((s) => agreed.get(s) ?? 0));
}

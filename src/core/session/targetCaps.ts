// Each target's kernel capabilities (the agent's reading of tracefs README and files), remembered in memory per
// target once a session has started there, so later sessions and edits compile before any agent runs.
import type { CompileOptions } from '../probes/compiler';
import type { Target } from '../target/target';

const known = new Map<string, ReadonlySet<string>>();

/** A target is identified by its description (user, host, port and jump hosts for SSH; "local" here). */
const keyOf = (target: Target) => `${target.host}\0${target.describe()}`;

export function knownCaps(target: Target): ReadonlySet<string> | undefined {
  return known.get(keyOf(target));
}

export function rememberCaps(target: Target, caps: ReadonlySet<string>): void {
  known.set(keyOf(target), new Set(caps));
}

/**
 * Whether some target seen so far lacks immediate fetch arguments: there each site of a probe is an event of its
 * own and disarming costs kernel time per site, which is when arming many sites needs consent.
 */
export function someTargetArmsPerSite(): boolean {
  for (const caps of known.values()) if (!caps.has('imm')) return true;
  return false;
}

/** The compiler options that depend on the target's kernel. */
export function compileOptionsFor(caps: ReadonlySet<string>): Pick<CompileOptions, 'refCtrOffset' | 'immediates'> {
  // The agent lists `ref_ctr` when README documents uprobe reference counters (Linux 4.20+), `imm` for
  // immediate fetch arguments (Linux 5.4+).
  return { refCtrOffset: caps.has('ref_ctr'), immediates: caps.has('imm') };
}

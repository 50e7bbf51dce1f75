// A probe definition as a structure (what the compiler produces and the session binds and sends), and its tracefs
// text, written only here at the edge (Documentation/trace/uprobetracer.rst, kprobetrace.rst):
//   p[:[GRP/]EVENT] PATH:OFFSET[(REF_CTR_OFFSET)] [NAME=FETCHARG[:TYPE] …]
//   r[:[GRP/]EVENT] PATH:OFFSET [NAME=FETCHARG[:TYPE] …]
//   p[:[GRP/]EVENT] [MODULE:]SYMBOL[+OFFS] [NAME=FETCHARG[:TYPE] …]  (a kernel probe; MODULE: a loadable module's)
//   r[MAXACTIVE][:[GRP/]EVENT] [MODULE:]SYMBOL [NAME=FETCHARG[:TYPE] …]  (a kernel return probe)
// Several definitions with one GRP/EVENT are one event with several probe points: the kernel appends a point
// when its arguments have the same names and types (in the same order) as the event's; the fetches may differ.
// Everything written here is later checked again by the target-side agent against the same strict shape.

export interface FetchArg {
  /** Field name in the event (a C identifier). */
  name: string;
  /** Fetcharg text: %di, +8(%sp), +0(+16(%di)), $retval, $comm. */
  fetch: string;
  /** u8…u64, s8…s64, x8…x64, string, ustring; omitted for the kernel's default (register width, hex). */
  type?: string;
}

/** Where a probe point sits: a file offset in a binary (uprobe), or a kernel symbol and offset (kprobe). */
export type ProbeTarget =
  | { type: 'uprobe'; path: string; offset: bigint; /** semaphore (USDT) */ refCtrOffset?: bigint }
  | { type: 'kprobe'; symbol: string; offset: bigint; /** a loadable module's symbol: `MODULE:SYMBOL` */ module?: string };

export interface ProbeDefinition {
  kind: 'p' | 'r';
  group: string;
  event: string;
  target: ProbeTarget;
  args: FetchArg[];
  /**
   * A kernel return probe's instances (`rN:`): how many calls of the function can be open at once before the
   * kernel misses one. Absent: the kernel's default (on 5.10 one per possible CPU on a non-preemptible kernel).
   */
  maxactive?: number;
}

/** The most instances a kernel return probe may have (the kernel's KRETPROBE_MAXACTIVE_MAX). */
export const KRETPROBE_MAXACTIVE_MAX = 4096;
// About 64 bytes of kernel memory each: 65,536 instances over a session's return probes is 4 MiB.
const KRETPROBE_INSTANCE_BUDGET = 65_536;

/**
 * The instances each of `returnProbes` kernel return probes gets: the kernel's maximum while the session's total
 * stays within its budget, else its share of the budget (never below 64). A function that sleeps (a read, a
 * lock, a wait) can have as many calls open as the system has threads; the kernel's default, sized by CPUs, misses
 * the rest, and the misses are reported as lost.
 */
export function kretprobeMaxactive(returnProbes: number): number {
  return Math.max(64, Math.min(KRETPROBE_MAXACTIVE_MAX, Math.floor(KRETPROBE_INSTANCE_BUDGET / Math.max(1, returnProbes))));
}

export class DefinitionError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'DefinitionError';
  }
}

/**
 * Groups are named by the target's agent, `probelens_<pid>_<nsdev>_<nsino>_<nonce>`: its pid in its own PID
 * namespace, that namespace's device and inode in hex (see agentScript.ts), and the session's nonce; older agents
 * named them `probelens_<pid>_<nonce>`. tracefs refuses group names of 64 characters or more.
 */
export const GROUP_PATTERN = /^(?=.{1,63}$)probelens_[0-9]+_(?:[0-9a-f]+_[0-9a-f]+_)?[a-z0-9]+$/;
/**
 * The group probes are compiled under before any agent runs: a session's real group is only known once its
 * agent has started (it names the agent's process), so definitions are bound to it when they are sent.
 */
export const UNBOUND_GROUP = 'probelens_unbound';
const IDENT = /^[A-Za-z_][A-Za-z0-9_]*$/;
/** A loadable module's name as kallsyms and /sys/module spell it (the agent's pattern allows 56 characters). */
export const MODULE_NAME = /^[A-Za-z0-9_]{1,56}$/;
const MAX_EVENT = 63;
// Fetchargs: registers, stack, memory and dereference chains; no spaces, quotes or shell/tracefs separators.
// `\N` is an immediate (a constant the compiler folded the value to), decimal only; `+uN(…)` reads user memory
// and `$argN` is the kernel's calling-convention accessor for the Nth argument (kernel probes).
const FETCH =
  /^(%[a-z][a-z0-9]{1,5}|\\[0-9]{1,20}|\$retval|\$comm|\$stack[0-9]{0,3}|\$arg[1-9][0-9]?|@\+?(0x[0-9a-f]+|[0-9]+)|([+-]u?(0x[0-9a-f]+|[0-9]+)\()+(%[a-z][a-z0-9]{1,5}|\$stack[0-9]{0,3}|\$arg[1-9][0-9]?|@\+?(0x[0-9a-f]+|[0-9]+))\)+)$/;
const TYPE = /^([sux](8|16|32|64)|string|ustring|b[0-9]{1,2}@[0-9]{1,2}\/(8|16|32|64))(\[[0-9]{1,4}\])?$/;

/** Throws unless `path` can appear in a uprobe definition (tracefs splits definitions on spaces and colons). */
export function checkProbePath(path: string): void {
  if (!path.startsWith('/') || /[\s:()'"\\]/.test(path) || path.length > 4095)
    throw new DefinitionError(
      `the binary path '${path}' cannot be used in a uprobe definition (it must be absolute, without spaces, colons, parentheses or quotes); use --remote-path with a plain path or a symlink`,
    );
}

/** `base` (a function or spec name) as a valid tracefs event name, before any suffix makes it unique. */
export function eventName(base: string): string {
  let name = base
    .replace(/[^A-Za-z0-9_]+/g, '_')
    .replace(/^_+|_+$/g, '')
    .replace(/__+/g, '_');
  if (!name || !/^[A-Za-z_]/.test(name)) name = `p_${name}`;
  return name.slice(0, MAX_EVENT);
}

/** A valid, unique tracefs event name derived from `base` (a function or spec name). */
export function uniqueEventName(base: string, used: Set<string>): string {
  const name = eventName(base);
  let candidate = name;
  for (let n = 2; used.has(candidate); n++) {
    const suffix = `_${n}`;
    candidate = name.slice(0, MAX_EVENT - suffix.length) + suffix;
  }
  used.add(candidate);
  return candidate;
}

/** `definition` (compiled under any group) as a definition of `group`. */
export function bindGroup(definition: ProbeDefinition, group: string): ProbeDefinition {
  if (!GROUP_PATTERN.test(group)) throw new DefinitionError(`invalid probe group '${group}'`);
  return { ...definition, group };
}

/** The definition's tracefs text (one line, no newline). */
export function formatDefinition(d: ProbeDefinition): string {
  if (d.group !== UNBOUND_GROUP && !GROUP_PATTERN.test(d.group)) throw new DefinitionError(`invalid probe group '${d.group}'`);
  if (!IDENT.test(d.event) || d.event.length > MAX_EVENT) throw new DefinitionError(`invalid event name '${d.event}'`);
  if (d.target.offset < 0n) throw new DefinitionError('negative offset');
  const names = new Set<string>();
  const args = d.args.map((a) => {
    if (!IDENT.test(a.name) || a.name.length > 63) throw new DefinitionError(`invalid argument name '${a.name}'`);
    if (names.has(a.name)) throw new DefinitionError(`duplicate argument name '${a.name}'`);
    names.add(a.name);
    if (!FETCH.test(a.fetch)) throw new DefinitionError(`invalid fetch argument '${a.fetch}' for '${a.name}'`);
    if (a.type !== undefined && !TYPE.test(a.type)) throw new DefinitionError(`invalid fetch type '${a.type}' for '${a.name}'`);
    return `${a.name}=${a.fetch}${a.type ? `:${a.type}` : ''}`;
  });
  let kind: string = d.kind;
  if (d.maxactive !== undefined) {
    if (d.kind !== 'r' || d.target.type !== 'kprobe') throw new DefinitionError('only a kernel return probe takes a maxactive');
    if (!Number.isInteger(d.maxactive) || d.maxactive < 1 || d.maxactive > KRETPROBE_MAXACTIVE_MAX)
      throw new DefinitionError(`maxactive ${d.maxactive} is not between 1 and ${KRETPROBE_MAXACTIVE_MAX}`);
    kind = `r${d.maxactive}`;
  }
  return [`${kind}:${d.group}/${d.event}`, targetText(d), ...args].join(' ');
}

function targetText(d: ProbeDefinition): string {
  const t = d.target;
  if (t.type === 'kprobe') {
    if (!/^[A-Za-z_][A-Za-z0-9_.]*$/.test(t.symbol)) throw new DefinitionError(`invalid kernel symbol '${t.symbol}'`);
    if (t.module !== undefined && !MODULE_NAME.test(t.module)) throw new DefinitionError(`invalid kernel module name '${t.module}'`);
    const symbol = t.module !== undefined ? `${t.module}:${t.symbol}` : t.symbol;
    return t.offset === 0n ? symbol : `${symbol}+${t.offset.toString(10)}`;
  }
  checkProbePath(t.path);
  if (d.kind === 'r' && t.refCtrOffset !== undefined) throw new DefinitionError('return probes take no semaphore');
  const ref = t.refCtrOffset !== undefined ? `(0x${t.refCtrOffset.toString(16)})` : '';
  return `${t.path}:0x${t.offset.toString(16)}${ref}`;
}

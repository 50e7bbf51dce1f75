// What the agent's replies say, read from their text: HELLO's capabilities and sweep, STOP's counters (per-CPU
// ring-buffer stats, uprobe_profile on both sides of the cut, the binary stream's thread-group ids), and the
// sentence a refused command is reported with. The client (agentClient.ts) sends the commands.
// Tests: test/unit/core/tracefs/agentClient.test.ts
export interface AgentHello {
  pid: number;
  group: string;
  tracefs: string;
  uid: number;
  caps: Set<string>;
  /** Groups/instances of dead owners removed by the start-of-session sweep. */
  swept: string[];
  /**
   * Leftovers the sweep kept because it cannot tell whether their owner is alive (an agent in a PID namespace
   * this target's /proc does not show); `probelens cleanup --force GROUP` removes one.
   */
  undecided: Array<{ group: string; why: string }>;
}

export interface CpuBufferStats {
  cpu: number;
  overrun: number;
  commitOverrun: number;
  dropped: number;
  entries: number;
}

export interface StopReport {
  cpus: CpuBufferStats[];
  /** uprobe_profile hits per event name of our group (an event of several probe points: their sum). */
  kernelHits: Map<string, number>;
  /** The same per probe point, in the order the points were defined (uprobe_profile lists them so). */
  pointHits?: Map<string, number[]>;
  /**
   * STOP's counts read just before its cut (recording stopped, events still enabled): the count at the cut lies
   * between these and `kernelHits`. Absent from other replies.
   */
  kernelHitsBefore?: Map<string, number>;
  pointHitsBefore?: Map<string, number[]>;
  /** The binary stream's STOP: every thread's process id the kernel saved (saved_tgids), for the last pages' threads. */
  tgids?: Map<number, number>;
  /** event → its hist file's lines (entries and totals), read after the cut; only events with hist triggers. */
  hist?: Map<string, string[]>;
  /**
   * Kernel probes only: calls the kernel missed per event (kprobe_profile's second column, nonzero only): a
   * return probe with every instance in use, or a hit inside another probe's handler. Neither hits nor records.
   */
  kernelMissed?: Map<string, number>;
}

/** What removing one event reported: its final uprobe_profile count, and entries still unread at removal. */
export interface UndefReport {
  hits: number;
  /** Entries of any event the reader had not consumed when the kernel reset the buffer (see the agent's UNDEF). */
  unread: number;
  /** The per-CPU ring-buffer counters just before the reset zeroed them. */
  cpus: CpuBufferStats[];
}

/**
 * From a rejected definition's error_log lines (`Command: …` then a line with a caret), the whitespace-separated
 * token of the definition the caret points into — the ARG to name in the user's error — or null.
 */
export function offendingToken(details: readonly string[]): string | null {
  const ci = details.findIndex((l) => /^\s*Command: /.test(l));
  if (ci < 0 || ci + 1 >= details.length) return null;
  const cmd = details[ci];
  const caret = details[ci + 1].indexOf('^');
  if (caret < 0 || caret >= cmd.length) return null;
  let start = caret;
  while (start > 0 && cmd[start - 1] !== ' ') start--;
  let end = caret;
  while (end < cmd.length && cmd[end] !== ' ') end++;
  return cmd.slice(start, end) || null;
}

export function describeAgentError(verb: string, code: string, msg: string, info: string[]): string {
  if (verb === 'BUILDID' && code === 'EMISMATCH') {
    return `binary on the target differs from the local build (its build-id is ${msg}): rebuild or deploy, or pass --no-build-id-check`;
  }
  if (verb === 'DEF' && code === 'EKERNEL') {
    const log = info.filter((l) => l.trim()).join('\n');
    return `the kernel rejected a probe definition${log ? `:\n${log}` : ''}`;
  }
  if (verb === 'HELLO' && code === 'EPERM') {
    // The agent asks for root whenever uprobe_events is not writable; as root that is a read-only tracefs.
    const ro = /\(uid 0 cannot write (\S+)\)/.exec(msg);
    if (ro) {
      const dir = ro[1].replace(/\/[^/]*$/, '');
      return `${ro[1]} is read-only even for root (tracefs is mounted read-only, or kernel lockdown or a security module forbids it): remount it read-write (mount -o remount,rw ${dir}) or lift the restriction, then trace again`;
    }
  }
  return `${verb} failed (${code}): ${msg}`;
}

export function parseHello(text: string, info: string[]): AgentHello {
  const kv = new Map<string, string>();
  for (const w of text.split(' ')) {
    const eq = w.indexOf('=');
    if (eq > 0) kv.set(w.slice(0, eq), w.slice(eq + 1));
  }
  return {
    pid: Number(kv.get('pid')),
    group: kv.get('group') ?? '',
    tracefs: kv.get('tracefs') ?? '',
    uid: Number(kv.get('uid')),
    caps: new Set((kv.get('caps') ?? '').split(',').filter(Boolean)),
    swept: info.map((l) => /^swept (\S+)$/.exec(l)?.[1]).filter((x): x is string => !!x),
    undecided: info.flatMap((l) => {
      const m = /^undecided (\S+) (.*)$/.exec(l);
      return m ? [{ group: m[1], why: m[2] }] : [];
    }),
  };
}

export function parseStop(info: string[]): StopReport {
  const byCpu = new Map<number, CpuBufferStats>();
  const kernelHits = new Map<string, number>();
  const pointHits = new Map<string, number[]>();
  const kernelHitsBefore = new Map<string, number>();
  const pointHitsBefore = new Map<string, number[]>();
  let before = false;
  let tgids: Map<number, number> | undefined;
  let hist: Map<string, string[]> | undefined;
  let missed: Map<string, number> | undefined;
  for (const l of info) {
    const x = /^missed ([A-Za-z_][A-Za-z0-9_]*) (\d+)$/.exec(l);
    if (x) {
      missed ??= new Map();
      missed.set(x[1], (missed.get(x[1]) ?? 0) + Number(x[2]));
      continue;
    }
    const h = /^hist ([A-Za-z_][A-Za-z0-9_]*) (.*)$/.exec(l);
    if (h) {
      hist ??= new Map();
      const list = hist.get(h[1]);
      if (list) list.push(h[2]);
      else hist.set(h[1], [h[2]]);
      continue;
    }
    const t = /^tgid (\d+) (\d+)$/.exec(l);
    if (t) {
      (tgids ??= new Map()).set(+t[1], +t[2]);
      continue;
    }
    let m = /^stat \S*\/cpu(\d+) ([a-z ]+): *(\d+)/.exec(l);
    if (m) {
      const cpu = +m[1];
      const c = byCpu.get(cpu) ?? { cpu, overrun: 0, commitOverrun: 0, dropped: 0, entries: 0 };
      byCpu.set(cpu, c);
      const v = +m[3];
      if (m[2] === 'overrun') c.overrun = v;
      else if (m[2] === 'commit overrun') c.commitOverrun = v;
      else if (m[2] === 'dropped events') c.dropped = v;
      else if (m[2] === 'entries') c.entries = v;
      continue;
    }
    // uprobe_profile: `  PATH EVENT HITS` (the path has no spaces: the agent's pattern forbids them), one line
    // per probe point: an event of several points is their sum.
    m = /^profile(-before)?\s+\S+\s+([A-Za-z_][A-Za-z0-9_]*)\s+(\d+)\s*$/.exec(l);
    if (m) {
      const [totals, points] = m[1] ? [kernelHitsBefore, pointHitsBefore] : [kernelHits, pointHits];
      before ||= !!m[1];
      totals.set(m[2], (totals.get(m[2]) ?? 0) + +m[3]);
      const list = points.get(m[2]);
      if (list) list.push(+m[3]);
      else points.set(m[2], [+m[3]]);
    }
  }
  return {
    cpus: [...byCpu.values()].sort((a, b) => a.cpu - b.cpu),
    kernelHits,
    pointHits,
    ...(before ? { kernelHitsBefore, pointHitsBefore } : {}),
    ...(tgids ? { tgids } : {}),
    ...(hist ? { hist } : {}),
    ...(missed ? { kernelMissed: missed } : {}),
  };
}

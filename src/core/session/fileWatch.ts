// The client's half of the agent's file watcher (see "The file watcher" in src/core/tracefs/agentScript.ts).
// A uprobe sits at a file offset: when its file is written over in place, records taken after that moment may
// come from other code at the old offsets, and must not be shown as hits of the old code. So, while the agent
// watches, a hit is held until a later check has proved its file unchanged: each check writes `tick K` into the
// trace stream before it stats the files and `ok K D` after (D: files it has found changed so far), and `ok`
// releases every held hit up to tick K's timestamp. A file found changed loses every hit after its last good
// check (they are counted as discarded), and its later records too. A replaced file (a new inode: a new build
// renamed over it) is only reported: its probes stay on the old build, whose processes they still trace rightly.
import type { ProbeDefinition } from '../probes/definition';
import type { TracefsAgent } from '../tracefs/agentClient';
import type { Hit } from '../tracefs/hitParser';

export type FileChangeKind = 'changed' | 'replaced' | 'removed';

export interface FileChange {
  host: string;
  /** The probed file's path on the target. */
  path: string;
  /** changed: written over in place (same inode); replaced: a new file at the path; removed: none there. */
  kind: FileChangeKind;
  /** changed: how many of its events the agent disabled, once it says so. */
  disabled?: number;
  /** changed: records of this file discarded so far because they may come from the new content. */
  discarded: number;
  /**
   * Seconds (trace clock) from the last check that saw the file unchanged to the marker of the one that saw the
   * change: how late the change was noticed at most. Known when the stream's marker arrives.
   */
  within?: number;
}

/**
 * What keeps a probed file from being written while armed: `lease`, a read lease the agent's guard holds (a writer's
 * open waits until the file's probes are disabled), or `poll`, the watcher's checks alone (a write between two of
 * them can reach an armed probe).
 */
export interface FileGuard {
  host: string;
  path: string;
  guard: 'lease' | 'poll';
  /** lease: the program holding it (perl or python3). */
  tool?: string;
}

export interface WatchGateOptions {
  host: string;
  /** The probed file of an event, from its definition. */
  pathOf(event: string): string | undefined;
  /** A hit whose file was proved unchanged after it: shown. */
  release(hit: Hit): void;
  /** A file's verdict, once when it is first heard of and again when more is known (disabled, within). */
  notify(change: FileChange): void;
  /** Which guard a probed file has, once per file as the agent starts watching it. */
  guarded?(guard: FileGuard): void;
}

export class WatchGate {
  /** Records discarded because their file changed under them. */
  discarded = 0;
  readonly changes = new Map<string, FileChange>();
  /** Each watched file's guard, as the agent said it. */
  readonly guards = new Map<string, FileGuard>();
  private held: Hit[] = [];
  private head = 0;
  private readonly ticks = new Map<string, number>();
  /** Timestamp of the latest tick whose check found every file as it was (or its change reported). */
  private lastGood = -Infinity;
  /** Changed files: hits after this timestamp are not trusted. */
  private readonly cutoff = new Map<string, number>();
  private marksReceived = 0;
  private readonly marksWritten = new Map<string, number>();

  constructor(private readonly o: WatchGateOptions) {}

  hit(h: Hit): void {
    if (this.untrusted(h)) return;
    this.held.push(h);
  }

  /** A stream marker's text (after `probelens_watch `, without the key: `GEN.COUNT VERB …`) and its timestamp. */
  marker(ts: number, text: string): void {
    const all = text.split(' ');
    const dot = all[0].indexOf('.');
    this.marksReceived++;
    this.wrote(all[0].slice(0, dot), Number(all[0].slice(dot + 1)));
    const w = all.slice(1);
    switch (w[0]) {
      case 'tick':
        this.ticks.set(w[1], ts);
        break;
      case 'ok': {
        const t = this.ticks.get(w[1]);
        this.ticks.delete(w[1]);
        // Held back while the check found a changed file we have not heard of yet (its marker was lost to a
        // full buffer; its stderr note is on its way): a later `ok` releases them.
        if (t === undefined || Number(w[2]) > this.cutoff.size) return;
        this.lastGood = Math.max(this.lastGood, t);
        this.releaseUpTo(t);
        break;
      }
      case 'changed':
      case 'replaced':
      case 'removed':
        this.verdict(w[0], w[2], ts);
        break;
      case 'disabled':
        this.disabled(w[2], Number(w[3]));
        break;
    }
  }

  /** The agent's NOTE WATCH words: the same verdicts on stderr (never lost to a full buffer; unordered with hits). */
  note(words: readonly string[]): void {
    const [verb, path, n] = words;
    if (verb === 'marks') return this.wrote(path, Number(n));
    if (verb === 'guard' && (path === 'lease' || path === 'poll') && n !== undefined) {
      const g: FileGuard = { host: this.o.host, path: n, guard: path };
      if (words[3]) g.tool = words[3];
      this.guards.set(n, g);
      return this.o.guarded?.({ ...g });
    }
    if (verb === 'changed' || verb === 'replaced' || verb === 'removed') this.verdict(verb, path, undefined);
    else if (verb === 'disabled') this.disabled(path, Number(n));
  }

  /** End of stream: what is still held is shown (no check can follow; the agent's last one ran at STOP). */
  end(): void {
    for (let i = this.head; i < this.held.length; i++) this.o.release(this.held[i]);
    this.held = [];
    this.head = 0;
  }

  /**
   * Markers the ring buffer lost: they are counted by its per-CPU loss counters like hits, so the session takes
   * them out of its loss figures. Each watcher's count is the highest it numbered or said at its end.
   */
  get markersLost(): number {
    let written = 0;
    for (const n of this.marksWritten.values()) written += n;
    return Math.max(0, written - this.marksReceived);
  }

  private wrote(gen: string | undefined, n: number): void {
    if (!gen || !Number.isFinite(n)) return;
    this.marksWritten.set(gen, Math.max(this.marksWritten.get(gen) ?? 0, n));
  }

  private untrusted(h: Hit): boolean {
    if (this.cutoff.size === 0) return false;
    const path = this.o.pathOf(h.event ?? '');
    const c = path === undefined ? undefined : this.cutoff.get(path);
    if (c === undefined || h.ts <= c) return false;
    this.discarded++;
    const ch = this.changes.get(path!);
    if (ch) ch.discarded++;
    return true;
  }

  private releaseUpTo(t: number): void {
    const held = this.held;
    let i = this.head;
    while (i < held.length && held[i].ts <= t) this.o.release(held[i++]);
    this.head = i;
    if (i === held.length) {
      this.held = [];
      this.head = 0;
    } else if (i > 4096 && i * 2 > held.length) {
      this.held = held.slice(i);
      this.head = 0;
    }
  }

  private verdict(kind: FileChangeKind, path: string | undefined, ts: number | undefined): void {
    if (!path) return;
    let ch = this.changes.get(path);
    const first = !ch;
    if (!ch) {
      ch = { host: this.o.host, path, kind, discarded: 0 };
      this.changes.set(path, ch);
    }
    if (kind === 'changed' && !this.cutoff.has(path)) {
      ch.kind = 'changed';
      this.cutoff.set(path, this.lastGood);
      const kept: Hit[] = [];
      for (let i = this.head; i < this.held.length; i++) if (!this.untrusted(this.held[i])) kept.push(this.held[i]);
      this.held = kept;
      this.head = 0;
    }
    let more = false;
    if (ts !== undefined && ch.within === undefined && Number.isFinite(this.lastGood)) {
      ch.within = Math.max(0, ts - this.lastGood);
      more = true;
    }
    if (first || more) this.o.notify(ch);
  }

  private disabled(path: string | undefined, n: number): void {
    const ch = path === undefined ? undefined : this.changes.get(path);
    if (!ch || ch.disabled !== undefined || !Number.isFinite(n)) return;
    ch.disabled = n;
    this.o.notify(ch);
  }
}

/** The file a probe point sits in (a uprobe's path; a kernel probe has none). */
export function probedPath(definition: ProbeDefinition | undefined): string | undefined {
  return definition?.target.type === 'uprobe' ? definition.target.path : undefined;
}

/** Arming is refused on a file another process has open for writing: its content may change under the probes. */
export class FileBusyError extends Error {
  constructor(
    readonly host: string,
    readonly path: string,
    readonly writers: ReadonlyArray<{ pid: number; comm: string }>,
  ) {
    const who = writers
      .slice(0, 3)
      .map((w) => `pid ${w.pid} (${w.comm})`)
      .join(', ');
    const more = writers.length > 3 ? ` and ${writers.length - 3} more` : '';
    super(
      `${path} on ${host} is open for writing by ${who}${more}: probes armed now could end up inside other ` +
        `instructions when it is written; wait until it has finished (or stop it), then trace again`,
    );
    this.name = 'FileBusyError';
  }
}

/** Refuses (FileBusyError) when a process on the target has `path` open for writing. */
export async function checkWriters(agent: TracefsAgent, host: string, path: string): Promise<void> {
  let writers: Array<{ pid: number; comm: string }>;
  try {
    writers = await agent.writers(path);
  } catch (e) {
    // No such file: defining its probes says so, in the kernel's words.
    if (e instanceof Error && 'code' in e && e.code === 'ENOENT') return;
    throw e;
  }
  if (writers.length) throw new FileBusyError(host, path, writers);
}

/**
 * The sentence the CLI prints (and the editor shows) when a file's change is first heard of; `how` says how to trace
 * the new build. A changed file's probes are being disabled then (the kernel may make that wait): `describeDisabled`
 * says when they are.
 */
export function describeFileChange(c: FileChange, how: string): string {
  const where = `${c.path} on ${c.host}`;
  if (c.kind === 'changed')
    return (
      `${where} was written over in place while traced: disabling its probes (left at the old build's offsets they ` +
      `would sit inside other instructions of the new one); records taken after the change are discarded; to trace ` +
      `the new build, ${how}`
    );
  if (c.kind === 'replaced')
    return (
      `${where} was replaced by a new build, which is not being traced (processes still running the old build are); ` +
      `to trace the new build, ${how}`
    );
  return `${where} was removed while traced (processes still running it are traced); once it is back, ${how}`;
}

/** One line for the user: how a probed file is kept from being written while its probes are armed. */
export function describeGuard(g: FileGuard): string {
  return g.guard === 'lease'
    ? `${g.path} on ${g.host}: a write to it waits until its probes are disabled (a read lease held by ${g.tool ?? 'the agent'})`
    : `${g.path} on ${g.host}: checked for writes every 0.025 s (no perl or python3 there to hold a read lease): a write between two checks can reach its armed probes`;
}

/** The sentence that follows once a changed file's probes are disabled. */
export function describeDisabled(c: FileChange): string {
  const n = c.disabled ?? 0;
  return `${c.path} on ${c.host}: ${n} probe event${n === 1 ? '' : 's'} disabled; the new build runs untraced`;
}

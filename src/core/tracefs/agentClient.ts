// Client side of the tracefs agent protocol (version 1). One agent per session, over one exec channel.
//
// stdin  (client → agent), one command per line:
//   HELLO 1 <nonce> [heartbeat-seconds]   find tracefs, check root, sweep dead owners' leftovers, create the instance
//                                         (INFO `swept <group>` / `undecided <group> <why>` per leftover)
//   BUILDID <offset> <length> <hex> <path> compare <length> bytes at <offset> of <path> with <hex>
//   DEF <definition>                      append one definition (must name our group)
//                                         (a kernel one, `p:G/E SYMBOL[+OFFS] …`, to kprobe_events: ENOKPROBES without)
//   DEFS <n>, then n definition lines     the same for n definitions, checked by one grep: n DEF replies
//   BUF <kib>                             instance buffer_size_kb
//   OVERWRITE 0|1                         ring-buffer policy (1, the default, drops oldest and says LOST in the stream)
//   STATS                                 per-CPU ring-buffer counters now (live loss when overwrite is off)
//   PID <pid>                             trace only that process's threads (set_event_pid + event-fork)
//   PROCS <offset> <length> <hex> <name|->  the processes whose executable (or mapped file named <name>) holds the
//                                         build-id: INFO `proc <pid> <nspid> <path>` each (any namespace)
//   PIDFILE <pid> <offset> <length> <hex> <name|->  the process <pid> names (host PID, else a namespace's) and its
//                                         copy: `pid=<host pid> nspid=<n> path=<path>`; ESRCH, ENOTBUILD, EAMBIGUOUS
//   FILTER <event> <expr>                 the event's filter in the instance
//   WATCH <key>                           once armed, watch the probed files (see "The file watcher" in the agent):
//                                         stream markers `probelens_watch GEN.COUNT tick|ok|changed|disabled|
//                                         replaced|removed … <key>` and NOTE lines (`marks GEN COUNT` as a watcher ends)
//   WRITERS <path>                        the processes that have <path> open for writing: INFO `<pid> <comm>` each
//   ARM [hist]                            record-tgid, trace_clock mono, start the reader, enable the group (not with
//                                         hist: the events' hist triggers count, nothing is recorded); `clock=… watch=0|1`
//   SYNTH <GROUP_lN>                      a synthetic event of ours with one field, `u64 lat` (see hist.ts)
//   TRIG <event> <hist trigger>           add a hist trigger to an event of ours (or a synthetic event of ours)
//   HISTREAD <event>                      its hist entries and totals: INFO `hist <event> <line>` each
//   EV ON|OFF <event>                     (armed) enable or disable one event; OFF replies `hits=<uprobe_profile count>`
//   UNDEF <event>                         disable one event, read its count, wait (bounded) until the reader has
//                                         consumed the buffer, report the per-CPU counters, remove the definition:
//                                         `hits=<n> unread=<n>`
//   HB                                    heartbeat (no reply); any line also counts
//   PAUSE <seconds>                       (no reply) the client is about to stop (Ctrl-Z): the agent's next wait
//                                         allows that much silence instead of the heartbeat timeout
//   FORCE <group>                         remove a leftover whose owner cannot be judged (refused if it is alive)
//   STOP                                  stop recording (the instance's tracing_on), read the kernel's counts
//                                         on both sides of that cut (the hist files between the two reads), the
//                                         last file check, drain, report stats;
//                                         after the reply: close stdout and stderr, disable, remove, exit
// stderr (agent → client), each line `<nonce> OK <VERB> …`, `<nonce> ERR <VERB> <CODE> <message>` or
//   `<nonce> INFO <VERB> …` (INFO lines precede the OK/ERR they belong to), and unsolicited `<nonce> NOTE <VERB> …`
//   (the file watcher's verdicts, at any time). Lines without the nonce are tool chatter, kept as diagnostics.
//   RAW                                   (before ARM) stream ring-buffer pages instead of trace_pipe text, when the
//                                         target can (else ENOTSUP): INFO `page …`/`event …` (header_page,
//                                         header_event), `pagesize=N cpus=A,B`; STOP then adds INFO `tgid TID TGID`
//   FMT <event>|ftrace/print              an event's format file as INFO lines
//   TGID <tid>…                           INFO `<tid> <tgid>` per thread found (/proc, else saved_tgids)
// stdout: the instance's trace_pipe, verbatim; after RAW, CPU headers and pages (see agentRaw.ts).
import { StringDecoder } from 'node:string_decoder';
import { randomBytes } from 'node:crypto';
import { AGENT_ARGV0, AGENT_PROTOCOL_VERSION, AGENT_SCRIPT } from './agentScript';
import type { ExecChannel, ExecExit, Target } from '../target/target';
import { frameDefinition, frameProbe, newSentinel, type Sentinel } from './framing';
import { formatDefinition, GROUP_PATTERN, type ProbeDefinition } from '../probes/definition';
import {
  describeAgentError,
  parseHello,
  parseStop,
  type AgentHello,
  type CpuBufferStats,
  type StopReport,
  type UndefReport,
} from './agentReplies';

export { offendingToken, parseStop } from './agentReplies';
export type { AgentHello, CpuBufferStats, StopReport, UndefReport } from './agentReplies';

/** What RAW answered: the target streams ring-buffer pages (see agentRaw.ts). */
export interface RawSetup {
  /** The instance's events/header_page and events/header_event, as the kernel prints them. */
  headerPage: string;
  headerEvent: string;
  pageSize: number;
  cpus: number[];
}

export interface AgentOptions {
  sudo?: boolean;
  /** The agent cleans up after this many seconds without a line from us (0: never). Default 3: with a heartbeat a second, three missed in a row. */
  heartbeatTimeoutSeconds?: number;
  /** How often we send HB (ms). Default 1000. */
  heartbeatIntervalMs?: number;
  /** Per-session nonce ([a-z0-9]{6,32}); random when absent. */
  nonce?: string;
  /** Append the anti-forgery sentinel fetcharg to definitions when supported (default true). */
  sentinel?: boolean;
}

/** A command the agent (or the kernel behind it) refused. `details` holds the INFO lines, e.g. error_log. */
/** A process that runs a build (PROCS, PIDFILE). */
export interface BuildProcess {
  /** Its PID on the target (the host's PID namespace, as the agent sees it). */
  pid: number;
  /** Its PID in its own PID namespace (the same where it is the host's). */
  nsPid: number;
  /** Where the target arms its copy of the build: its own path, through /proc/PID/root, or a /proc magic link. */
  path: string;
}

export class AgentError extends Error {
  constructor(
    readonly verb: string,
    readonly code: string,
    message: string,
    readonly details: string[] = [],
    /** The agent's own text after the code (for BUILDID EMISMATCH, the build-id it read), before any rewording. */
    readonly reply = '',
  ) {
    super(message);
    this.name = 'AgentError';
  }
}

export class AgentExitedError extends Error {
  constructor(
    readonly exitInfo: ExecExit,
    readonly diagnostics: string[],
  ) {
    const tail = diagnostics.slice(-3).join(' | ');
    const sudo = /password is required|sudo:/.test(tail);
    super(
      sudo
        ? `the agent could not start: sudo needs a password (${tail}): run as root or configure passwordless sudo for sh`
        : `the tracefs agent exited (code ${exitInfo.code}, signal ${exitInfo.signal})${tail ? `: ${tail}` : ''}`,
    );
    this.name = 'AgentExitedError';
  }
}

interface Pending {
  verb: string;
  info: string[];
  resolve: (rest: { text: string; info: string[] }) => void;
  reject: (err: Error) => void;
}

/** Splits a byte stream into '\n'-terminated lines (only '\n': traced strings may contain '\r'). */
export function lineSplitter(onLine: (line: string) => void): { push(chunk: Buffer): void; end(): void } {
  const decoder = new StringDecoder('utf8');
  let carry = '';
  return {
    push(chunk) {
      const text = carry + decoder.write(chunk);
      let start = 0;
      for (let nl = text.indexOf('\n'); nl >= 0; nl = text.indexOf('\n', start)) {
        onLine(text.slice(start, nl));
        start = nl + 1;
      }
      carry = text.slice(start);
    },
    end() {
      const rest = carry + decoder.end();
      carry = '';
      if (rest) onLine(rest);
    },
  };
}

export class TracefsAgent {
  readonly nonce: string;
  hello!: AgentHello;
  /** stderr lines that were not protocol replies (sudo, shell errors), newest last, bounded. */
  readonly diagnostics: string[] = [];
  readonly exit: Promise<ExecExit>;
  private readonly pending: Pending[] = [];
  private exited: ExecExit | null = null;
  private sentinelValue: Sentinel | null = null;
  private hbTimer: NodeJS.Timeout | null = null;
  private hbEveryMs = 0;
  private lastHb = 0;
  /** The agent's heartbeat timeout in seconds (0: none). */
  private heartbeatTimeout = 0;
  /**
   * The last pause announced (pause()): how long the agent allows, and since when. Cleared by a heartbeat sent
   * within that time (the agent is then back to its heartbeat timeout); one sent later finds the agent gone.
   */
  private paused: { seconds: number; at: number } | undefined;
  private traceListeners: Array<(line: string) => void> = [];
  private noteListeners: Array<(verb: string, words: string[]) => void> = [];
  private watchKeyValue: string | null = null;
  private watchingFiles = false;
  private endListeners: Array<() => void> = [];
  private rawListeners: Array<(chunk: Buffer) => void> = [];
  /** Set by useRawStream (before ARM): stdout carries pages, not lines. */
  private rawMode = false;

  private constructor(
    private readonly channel: ExecChannel,
    nonce: string,
  ) {
    this.nonce = nonce;
    const err = lineSplitter((l) => this.onStderr(l));
    channel.stderr.on('data', (c: Buffer) => err.push(c));
    channel.stderr.on('end', () => err.end());
    // A flood of hits can keep this process busy for longer than the agent's heartbeat timeout without the timer
    // getting a turn (one event-loop pass reads up to ~2 MiB of trace text, and a loaded machine gives it little
    // CPU): heartbeats are also sent from the stream itself, checked every 16 lines.
    let lines = 0;
    const out = lineSplitter((l) => {
      if ((++lines & 15) === 0) this.beat();
      for (const f of this.traceListeners) f(l);
    });
    channel.stdout.on('data', (c: Buffer) => {
      this.beat();
      if (this.rawMode) for (const f of this.rawListeners) f(c);
      else out.push(c);
    });
    channel.stdout.on('end', () => {
      out.end();
      for (const f of this.endListeners) f();
    });
    this.exit = channel.exit.then((e) => {
      this.exited = e;
      this.stopHeartbeat();
      for (const p of this.pending.splice(0)) p.reject(new AgentExitedError(e, this.diagnostics));
      return e;
    });
  }

  /** Start the agent on `target` and say HELLO. Rejects with AgentError (EPERM, ENOTRACEFS…) or AgentExitedError. */
  static async start(target: Target, opts: AgentOptions = {}): Promise<TracefsAgent> {
    const nonce = opts.nonce ?? randomBytes(6).toString('hex');
    if (!/^[a-z0-9]{6,32}$/.test(nonce)) throw new Error(`bad nonce ${JSON.stringify(nonce)}`);
    const channel = await target.exec(['sh', '-c', AGENT_SCRIPT, AGENT_ARGV0], { sudo: opts.sudo });
    const agent = new TracefsAgent(channel, nonce);
    const timeout = opts.heartbeatTimeoutSeconds ?? 3;
    agent.heartbeatTimeout = Math.max(0, Math.floor(timeout));
    try {
      const r = await agent.command('HELLO', `${AGENT_PROTOCOL_VERSION} ${nonce} ${Math.max(0, Math.floor(timeout))}`);
      agent.hello = parseHello(r.text, r.info);
      if (agent.hello.caps.has('imm') && opts.sentinel !== false) agent.sentinelValue = newSentinel();
    } catch (e) {
      channel.stdin.end();
      throw e;
    }
    if (timeout > 0) agent.startHeartbeat(opts.heartbeatIntervalMs ?? 1000);
    return agent;
  }

  get group(): string {
    return this.hello.group;
  }

  onTraceLine(f: (line: string) => void): void {
    this.traceListeners.push(f);
  }

  /** The binary stream's bytes as they come (after useRawStream): CPU headers and pages, cut anywhere. */
  onTraceData(f: (chunk: Buffer) => void): void {
    this.rawListeners.push(f);
  }

  /** Which stream the agent writes: ring-buffer pages (after useRawStream) or trace_pipe text. */
  get stream(): 'raw' | 'text' {
    return this.rawMode ? 'raw' : 'text';
  }

  /**
   * Asks for the binary stream (before any definition and ARM). Records then need no framing secret (their lengths
   * are explicit), so definitions are sent unframed. Rejects with the agent's AgentError (ENOTSUP: the target
   * cannot; the text stream stays, framed).
   */
  async useRawStream(): Promise<RawSetup> {
    const r = await this.command('RAW');
    const kv = new Map(r.text.split(' ').map((w) => [w.slice(0, w.indexOf('=')), w.slice(w.indexOf('=') + 1)]));
    const lines = (what: string) =>
      r.info
        .filter((l) => l.startsWith(what + ' '))
        .map((l) => l.slice(what.length + 1))
        .join('\n');
    const setup: RawSetup = {
      headerPage: lines('page'),
      headerEvent: lines('event'),
      pageSize: Number(kv.get('pagesize')),
      cpus: (kv.get('cpus') ?? '').split(',').filter(Boolean).map(Number),
    };
    this.rawMode = true;
    this.sentinelValue = null;
    return setup;
  }

  /** The format files of `events` (of this session's group; `ftrace/print` for trace_marker's records), in order. */
  async formats(events: readonly string[]): Promise<string[]> {
    const results = await this.pipeline(events.map((e) => ['FMT', e] as [string, string]));
    return results.map((r) => {
      if (r instanceof Error) throw r;
      return r.info.join('\n');
    });
  }

  /** The process id of each thread id the target can still tell (/proc while it lives, else saved_tgids). */
  async tgids(tids: readonly number[]): Promise<Map<number, number>> {
    const out = new Map<number, number>();
    for (let i = 0; i < tids.length; i += 200) {
      const r = await this.command('TGID', tids.slice(i, i + 200).join(' '));
      for (const l of r.info) {
        const m = /^(\d+) (\d+)$/.exec(l);
        if (m) out.set(+m[1], +m[2]);
      }
    }
    return out;
  }

  /** Called once the trace stream has ended (after STOP, or when the agent died). */
  onTraceEnd(f: () => void): void {
    this.endListeners.push(f);
  }

  /**
   * Append one definition. When the kernel supports immediate fetchargs, the session's secret frames it (see
   * framing.ts: nothing the traced program prints can then end, start or alter a record); pass `this.sentinel`
   * to HitParser. The framed text is sent only to the agent: the secret stays out of logs.
   */
  async define(definition: ProbeDefinition | string): Promise<void> {
    await this.command('DEF', this.wireText(definition));
  }

  /** A definition as the agent receives it: framed by the session's secret when there is one, then rendered. */
  private wireText(d: ProbeDefinition | string): string {
    if (typeof d === 'string') return this.sentinelValue ? frameDefinition(d, this.sentinelValue) : d;
    return formatDefinition(this.sentinelValue ? frameProbe(d, this.sentinelValue) : d);
  }

  /**
   * A rejected definition comes back in error_log's `Command:` line, and errors reach logs a traced program of
   * the same user may read: the secret is masked, with as many characters so the caret under it still points right.
   */
  private redact(text: string): string {
    if (!this.sentinelValue) return text;
    const secret = BigInt(this.sentinelValue.printed).toString(10);
    return text.replaceAll(secret, '*'.repeat(secret.length));
  }

  /**
   * Append many definitions in one round trip: DEFS and every definition line are written at once, then the
   * replies are read.
   * The agent writes each definition with its own write() (one write carrying several lines stops at the first
   * line the kernel rejects), so each gets its own verdict: null when accepted, else the AgentError.
   */
  async defineAll(definitions: ReadonlyArray<ProbeDefinition | string>): Promise<Array<AgentError | null>> {
    const lines = definitions.map((d) => this.wireText(d));
    if (lines.some((l) => !l.trim())) throw new AgentError('DEF', 'EINVAL', 'empty definition');
    const results = await this.pipeline(
      lines.map((l) => ['DEF', l] as [string, string]),
      `DEFS ${lines.length}\n${lines.join('\n')}\n`,
    );
    return results.map((r) => (r instanceof Error ? asAgentError(r) : null));
  }

  /**
   * Enable or disable single events of an armed session, in one round trip. Disabling replies with the
   * event's kernel hit count (uprobe_profile), returned in order; an event that failed yields its AgentError.
   */
  async setEventsEnabled(events: readonly string[], on: boolean): Promise<Array<AgentError | { hits?: number }>> {
    const results = await this.pipeline(events.map((e) => ['EV', `${on ? 'ON' : 'OFF'} ${e}`] as [string, string]));
    return results.map((r) => {
      if (r instanceof Error) return asAgentError(r);
      const m = /(?:^| )hits=(\d+)/.exec(r.text);
      return m ? { hits: Number(m[1]) } : {};
    });
  }

  /** Disable and remove one event of the session, leaving every other one armed (see UndefReport). */
  async undefine(event: string): Promise<UndefReport> {
    const r = await this.command('UNDEF', event);
    return {
      hits: Number(/(?:^| )hits=(\d+)/.exec(r.text)?.[1] ?? 0),
      unread: Number(/(?:^| )unread=(\d+)/.exec(r.text)?.[1] ?? 0),
      cpus: parseStop(r.info).cpus,
    };
  }

  /** What every record ends with, or null when the kernel has no immediate fetchargs. */
  get sentinel(): Sentinel | null {
    return this.sentinelValue;
  }

  /** Compare the target file's build-id bytes (file offset and length computed locally) with `hex`. */
  async checkBuildId(path: string, offset: number, length: number, hex: string): Promise<void> {
    await this.command('BUILDID', `${offset} ${length} ${hex.toLowerCase()} ${path}`);
  }

  async setBufferKb(kib: number): Promise<void> {
    await this.command('BUF', String(kib));
  }

  /** false: when full, drop new events (counted per CPU as dropped) instead of overwriting old ones. */
  async setOverwrite(on: boolean): Promise<void> {
    await this.command('OVERWRITE', on ? '1' : '0');
  }

  /** Per-CPU ring-buffer counters now. */
  async cpuStats(): Promise<CpuBufferStats[]> {
    const r = await this.command('STATS');
    return parseStop(r.info).cpus;
  }

  async filterPid(pid: number): Promise<void> {
    await this.command('PID', String(pid));
  }

  async setFilter(event: string, expr: string): Promise<void> {
    await this.command('FILTER', `${event} ${expr}`);
  }

  /** Remove another session's leftover `group` that the sweep could not judge; refused when its owner is alive. */
  async forceRemove(group: string): Promise<void> {
    if (!GROUP_PATTERN.test(group)) throw new AgentError('FORCE', 'EINVAL', `'${group}' is not a ProbeLens group name`);
    await this.command('FORCE', group);
  }

  /** A synthetic latency event of this session (`GROUP_lN`, see hist.ts). */
  async defineSynthetic(name: string): Promise<void> {
    await this.command('SYNTH', name);
  }

  /** Hist triggers on events of this session, in order (one round trip); the kernel's error_log is in a refusal's details. */
  async addTriggers(triggers: ReadonlyArray<{ event: string; trigger: string }>): Promise<void> {
    const results = await this.pipeline(triggers.map((t) => ['TRIG', `${t.event} ${t.trigger}`] as [string, string]));
    const bad = results.find((r) => r instanceof Error);
    if (bad) throw bad;
  }

  /** The hist files of `events` now: event → its entries and totals (see parseHist). */
  async readHist(events: readonly string[]): Promise<Map<string, string[]>> {
    const results = await this.pipeline(events.map((e) => ['HISTREAD', e] as [string, string]));
    const out = new Map<string, string[]>();
    results.forEach((r, i) => {
      if (r instanceof Error) throw r;
      out.set(events[i], parseStop(r.info).hist?.get(events[i]) ?? []);
    });
    return out;
  }

  /** `hist`: arm for in-kernel aggregation (the events are not enabled; their triggers count). */
  async arm(hist = false): Promise<void> {
    const r = await this.command('ARM', hist ? 'hist' : undefined);
    this.watchingFiles = this.watchKeyValue !== null && /(?:^| )watch=1(?: |$)/.test(r.text);
  }

  /**
   * Asks the agent to watch the probed files once armed (call before arm()). Resolves false when this target
   * cannot (no trace_marker in instances): nothing is watched then.
   */
  async watchFiles(): Promise<boolean> {
    const key = randomBytes(8).toString('hex');
    try {
      await this.command('WATCH', key);
    } catch (e) {
      if (e instanceof AgentError && e.code === 'ENOTSUP') return false;
      throw e;
    }
    this.watchKeyValue = key;
    return true;
  }

  /** Whether the armed agent watches its files: every stream line ending with ` <watchKey>` is then its marker. */
  get watching(): boolean {
    return this.watchingFiles;
  }

  get watchKey(): string | null {
    return this.watchKeyValue;
  }

  /** The file watcher's verdicts as they come (`changed PATH`, `disabled PATH N`, `replaced PATH`, `removed PATH`). */
  onNote(f: (verb: string, words: string[]) => void): void {
    this.noteListeners.push(f);
  }

  /** The processes on the target that have `path` open for writing. */
  /**
   * The processes running the build whose `length` build-id bytes at file `offset` are `hex`: their executable, or a
   * mapped file named `name` (null: executables only). Each with its PID on the target and in its own namespace,
   * and a path the target can arm its copy by.
   */
  async processes(offset: number, length: number, hex: string, name: string | null): Promise<BuildProcess[]> {
    const r = await this.command('PROCS', `${offset} ${length} ${hex.toLowerCase()} ${name ?? '-'}`);
    return r.info.flatMap((l) => {
      const m = /^proc (\d+) (\d+) (\/\S+)$/.exec(l);
      return m ? [{ pid: Number(m[1]), nsPid: Number(m[2]), path: m[3] }] : [];
    });
  }

  /**
   * The process `pid` names (its PID on the target or, where none there runs the build, in its own namespace) and
   * where its copy of the build is; AgentError ESRCH, ENOTBUILD or EAMBIGUOUS (reply: the PID, then the candidates).
   */
  async processOf(pid: number, offset: number, length: number, hex: string, name: string | null): Promise<BuildProcess> {
    const r = await this.command('PIDFILE', `${pid} ${offset} ${length} ${hex.toLowerCase()} ${name ?? '-'}`);
    const m = /(?:^| )pid=(\d+) nspid=(\d+) path=(\/\S+)/.exec(r.text);
    if (!m) throw new AgentError('PIDFILE', 'EPROTO', `unexpected PIDFILE reply: ${r.text}`);
    return { pid: Number(m[1]), nsPid: Number(m[2]), path: m[3] };
  }

  async writers(path: string): Promise<Array<{ pid: number; comm: string }>> {
    const r = await this.command('WRITERS', path);
    return r.info.flatMap((l) => {
      const m = /^(\d+) (\S*)$/.exec(l);
      return m ? [{ pid: Number(m[1]), comm: m[2] }] : [];
    });
  }

  /**
   * Stop recording, drain the stream, collect loss and profile counters. The reply comes before the kernel's
   * teardown: the agent then disables and removes its probes by itself and exits (`exit` settles then).
   */
  async stop(): Promise<StopReport> {
    this.stopHeartbeat();
    const r = await this.command('STOP');
    return parseStop(r.info);
  }

  /** Drop the channel without STOP: the agent sees EOF and cleans up on its own. */
  abandon(): void {
    this.stopHeartbeat();
    this.channel.stdin.end();
  }

  /** Leave the agent to finish (and clean up) by itself: stdin EOF, and this process no longer waits for it. */
  detach(): void {
    this.abandon();
    this.channel.detach?.();
  }

  kill(signal: 'TERM' | 'INT' | 'HUP' | 'KILL' = 'TERM'): void {
    this.stopHeartbeat();
    this.channel.kill(signal);
  }

  /**
   * Tells the agent this client is about to stop (the user's Ctrl-Z) and may be silent for up to `seconds`; resolves
   * once the line is handed to the channel. The next heartbeat, sent when the client runs again, ends the allowance.
   */
  pause(seconds: number): Promise<void> {
    if (this.exited) return Promise.resolve();
    this.paused = { seconds: Math.max(1, Math.min(99_999, Math.floor(seconds))), at: Date.now() };
    return new Promise((res) => this.channel.stdin.write(`PAUSE ${this.paused!.seconds}\n`, () => res()));
  }

  /** Seconds of silence the agent allows now: the heartbeat timeout, or a pause's allowance until the next line. */
  get silenceAllowance(): number {
    return this.paused?.seconds ?? this.heartbeatTimeout;
  }

  /** Stop sending heartbeats while keeping the channel open (the agent's watchdog then fires). For tests. */
  stopHeartbeat(): void {
    if (this.hbTimer) clearInterval(this.hbTimer);
    this.hbTimer = null;
    this.hbEveryMs = 0;
  }

  private startHeartbeat(ms: number): void {
    this.hbEveryMs = ms;
    this.hbTimer = setInterval(() => this.beat(true), ms);
    this.hbTimer.unref();
  }

  /**
   * A sign of life from whoever consumes the stream: a heartbeat when one is due. Work on hits the stream released
   * at once can outlast the agent's timeout without the heartbeat timer getting a turn; this is sent at once.
   */
  keepAlive(): void {
    this.beat();
  }

  /** Sends a heartbeat when one is due (the timer's always are). */
  private beat(timer = false): void {
    if (this.hbEveryMs === 0 || this.exited) return;
    const now = Date.now();
    if (!timer && now - this.lastHb < this.hbEveryMs) return;
    this.lastHb = now;
    if (this.paused && now - this.paused.at < this.paused.seconds * 1000) this.paused = undefined;
    this.channel.stdin.write('HB\n');
  }

  private command(verb: string, arg?: string): Promise<{ text: string; info: string[] }> {
    if (arg !== undefined && /[\r\n\0]/.test(arg)) {
      return Promise.reject(new AgentError(verb, 'EINVAL', `${verb} argument contains a line break or NUL`));
    }
    if (this.exited) return Promise.reject(new AgentExitedError(this.exited, this.diagnostics));
    return new Promise((resolve, reject) => {
      this.pending.push({ verb, info: [], resolve, reject });
      this.channel.stdin.write(arg === undefined ? `${verb}\n` : `${verb} ${arg}\n`);
    });
  }

  /**
   * Writes every command line with one write() and then collects the replies in order (the agent answers
   * each line in turn). A rejected command does not stop the later ones; its Error takes its place.
   */
  private pipeline(
    cmds: ReadonlyArray<[string, string]>,
    /** What to write instead of one line per command (a batch command whose lines get one reply each). */
    text?: string,
  ): Promise<Array<{ text: string; info: string[] } | Error>> {
    if (cmds.length === 0) return Promise.resolve([]);
    const bad = cmds.find(([, a]) => /[\r\n\0]/.test(a));
    if (bad) return Promise.reject(new AgentError(bad[0], 'EINVAL', `${bad[0]} argument contains a line break or NUL`));
    if (this.exited) return Promise.reject(new AgentExitedError(this.exited, this.diagnostics));
    const replies = cmds.map(
      ([verb]) =>
        new Promise<{ text: string; info: string[] }>((resolve, reject) => this.pending.push({ verb, info: [], resolve, reject })),
    );
    this.channel.stdin.write(text ?? cmds.map(([verb, arg]) => `${verb} ${arg}\n`).join(''));
    return Promise.all(replies.map((p) => p.catch((e: unknown) => (e instanceof Error ? e : new Error(String(e))))));
  }

  private onStderr(line: string): void {
    const prefix = `${this.nonce} `;
    if (!line.startsWith(prefix)) {
      this.diagnostics.push(line);
      if (this.diagnostics.length > 50) this.diagnostics.shift();
      return;
    }
    const note = /^NOTE (\S+) (.*)$/.exec(line.slice(prefix.length));
    if (note) {
      const words = note[2].split(' ');
      for (const f of this.noteListeners) f(note[1], words);
      return;
    }
    const m = /^(OK|ERR|INFO) (\S+) ?(.*)$/.exec(line.slice(prefix.length));
    const head = this.pending[0];
    if (!m || !head) {
      this.diagnostics.push(line);
      return;
    }
    const [, kind, verb, rest] = m;
    if (kind === 'INFO') {
      head.info.push(this.redact(rest));
      return;
    }
    this.pending.shift();
    if (kind === 'OK') {
      head.resolve({ text: rest, info: head.info });
    } else {
      const em = /^(\S+) ?(.*)$/.exec(rest);
      const code = em?.[1] ?? 'EUNKNOWN';
      const msg = em?.[2] ?? rest;
      head.reject(new AgentError(verb, code, describeAgentError(verb, code, msg, head.info), head.info, msg));
    }
  }
}

function asAgentError(e: Error): AgentError {
  if (e instanceof AgentError) return e;
  throw e; // the agent exited: not a verdict on this one command
}

// Shared by the agent integration tests: a throwaway gcc-built workload, a Target that runs the agent under a
// chosen shell (dash, busybox ash, bash), and checks of what a session left on the machine.
import { execFileSync, spawn, spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, readdirSync, readlinkSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { LocalTarget } from '../../src/core/target/local';
import type { ExecChannel, ExecOptions, Target } from '../../src/core/target/target';
import { HitParser, type EventSchema, type Hit } from '../../src/core/tracefs/hitParser';
import type { TracefsAgent } from '../../src/core/tracefs/agentClient';
import { AGENT_SCRIPT } from '../../src/core/tracefs/agentScript';

export const SHELLS: Record<string, string[]> = { dash: ['dash'], 'busybox sh': ['busybox', 'sh'], bash: ['bash'] };

/** Runs the agent's `sh -c …` under another shell. */
export class ShellTarget implements Target {
  readonly host = 'local';
  private readonly local = new LocalTarget();
  constructor(private readonly shell: string[]) {}
  describe(): string {
    return `local (${this.shell.join(' ')})`;
  }
  exec(argv: readonly string[], opts?: ExecOptions): Promise<ExecChannel> {
    if (argv[0] !== 'sh') throw new Error(`unexpected program ${argv[0]}`);
    return this.local.exec([...this.shell, ...argv.slice(1)], opts);
  }
  close(): Promise<void> {
    return this.local.close();
  }
}

export interface Workload {
  path: string;
  addOffset: string;
  leafOffset: string;
  buildIdOffset: number;
  buildId: string;
}

/**
 * Builds the workload into a folder of this process's own (removed when it exits). Probes sit on the file's inode,
 * so a copy shared by every test process would be probed and run by all of them: another run's calls of it would
 * be counted here (402 hits for 400 calls), and another process rebuilding it mid-test changes its build-id.
 */
export function buildWorkload(): Workload {
  const dir = workloadDir();
  const path = join(dir, 'workload');
  execFileSync('gcc', ['-O0', '-g', '-Wl,--build-id', '-o', path, join(__dirname, '../fixtures/trace-samples/workload.c')]);
  const nm = execFileSync('nm', [path]).toString();
  const sym = (name: string) => BigInt('0x' + new RegExp(`^([0-9a-f]+) T ${name}$`, 'm').exec(nm)![1]);
  // File offset from the PT_LOAD containing the symbol (docs/architecture.md: never a single-base shortcut).
  const loads = [
    ...execFileSync('readelf', ['-lW', path])
      .toString()
      .matchAll(/^\s*LOAD\s+(0x[0-9a-f]+)\s+(0x[0-9a-f]+)\s+\S+\s+\S+\s+(0x[0-9a-f]+)/gm),
  ].map((m) => ({ off: BigInt(m[1]), vaddr: BigInt(m[2]), memsz: BigInt(m[3]) }));
  const fileOffset = (v: bigint) => {
    const l = loads.find((s) => v >= s.vaddr && v < s.vaddr + s.memsz)!;
    return '0x' + (v - l.vaddr + l.off).toString(16);
  };
  const sec = /\.note\.gnu\.build-id\s+NOTE\s+[0-9a-f]+\s+([0-9a-f]+)/.exec(execFileSync('readelf', ['-SW', path]).toString())!;
  const noteOff = parseInt(sec[1], 16);
  const buildIdOffset = noteOff + 16; // namesz, descsz, type, "GNU\0"
  const buildId = readFileSync(path)
    .subarray(buildIdOffset, buildIdOffset + 20)
    .toString('hex');
  return { path, addOffset: fileOffset(sym('pl_add')), leafOffset: fileOffset(sym('pl_leaf')), buildIdOffset, buildId };
}

let privateDir: string | undefined;
function workloadDir(): string {
  if (!privateDir) {
    const dir = mkdtempSync(join(tmpdir(), 'probelens-workload-'));
    process.once('exit', () => rmSync(dir, { recursive: true, force: true }));
    privateDir = dir;
  }
  return privateDir;
}

export const ADD_SCHEMA: EventSchema = {
  event: 'pl_add',
  probe: 'pl_add',
  kind: 'entry',
  args: [
    { name: 'a', type: 's32' },
    { name: 'b', type: 'u64' },
    { name: 's', type: 'string' },
  ],
};
export const LEAF_SCHEMA: EventSchema = {
  event: 'pl_leaf_ret',
  probe: 'pl_leaf%return',
  kind: 'return',
  args: [{ name: 'retval', type: 's64' }],
};

export async function defineWorkloadProbes(agent: TracefsAgent, w: Workload): Promise<void> {
  await agent.define(`p:${agent.group}/pl_add ${w.path}:${w.addOffset} a=%di:s32 b=%si:u64 s=+0(%dx):string`);
  await agent.define(`r:${agent.group}/pl_leaf_ret ${w.path}:${w.leafOffset} retval=$retval:s64`);
}

export function collectHits(agent: TracefsAgent, events: EventSchema[] = [ADD_SCHEMA, LEAF_SCHEMA]) {
  const hits: Hit[] = [];
  // As sessions do: each thread's process id from the agent (the printed one can be an earlier thread's).
  const parser = new HitParser({
    host: 'local',
    events,
    sentinel: agent.sentinel,
    onHit: (h) => hits.push(h),
    lookupTgids: (tids) => agent.tgids(tids),
  });
  agent.onTraceLine((l) => parser.push(l));
  const ended = new Promise<void>((res) =>
    agent.onTraceEnd(() => {
      parser.end();
      res();
    }),
  );
  return { hits, parser, ended };
}

const T = '/sys/kernel/tracing';

/** What of `group` is still on the machine: definitions, the instance, reader processes. */
export function leftovers(group: string): string[] {
  const out: string[] = [];
  for (const l of readFileSync(join(T, 'uprobe_events'), 'utf8').split('\n')) if (l.includes(`:${group}/`)) out.push(l);
  if (existsSync(join(T, 'instances', group))) out.push(`instance ${group}`);
  for (const pid of readdirSync('/proc').filter((p) => /^\d+$/.test(p))) {
    try {
      // A reader has the pipe's absolute path as an argument; the agent's own search for readers (grep -lF
      // instances/G/trace_pipe /proc/*/cmdline) names it relative, and is not one.
      const cmd = readFileSync(`/proc/${pid}/cmdline`, 'utf8');
      if (cmd.split('\0').some((a) => a.startsWith('/') && a.endsWith(`/instances/${group}/trace_pipe`)))
        out.push(`reader pid ${pid}: ${cmd.replace(/\0/g, ' ')}`);
      // The binary stream's reader (dd < per_cpu/cpuN/trace_pipe_raw) names no file: it holds one open.
      else if (holdsRaw(pid, group)) out.push(`reader pid ${pid}: ${cmd.replace(/\0/g, ' ')} (trace_pipe_raw)`);
    } catch {
      // the process ended while we looked
    }
  }
  return out;
}

function holdsRaw(pid: string, group: string): boolean {
  for (const fd of readdirSync(`/proc/${pid}/fd`)) {
    try {
      if (
        /\/instances\/[^/]+\/per_cpu\/cpu\d+\/trace_pipe_raw$/.test(readlinkSync(`/proc/${pid}/fd/${fd}`)) &&
        readlinkSync(`/proc/${pid}/fd/${fd}`).includes(`/instances/${group}/`)
      )
        return true;
    } catch {
      // closed meanwhile
    }
  }
  return false;
}

/** Records read out of `group`'s instance so far, by the kernel's count (`read events` of each CPU's stats). */
function readEvents(group: string): number {
  const dir = join(T, 'instances', group, 'per_cpu');
  let n = 0;
  try {
    for (const cpu of readdirSync(dir)) {
      const m = /^read events: (\d+)$/m.exec(readFileSync(join(dir, cpu, 'stats'), 'utf8'));
      n += m ? Number(m[1]) : 0;
    }
  } catch {
    // the instance is gone
  }
  return n;
}

/**
 * Whether `group`'s stream is read within `ms`: a reader is seen (`cat trace_pipe` runs all along), or the kernel
 * counts records read out of its buffers. The binary stream's `dd` of a CPU's trace_pipe_raw lives only while that
 * buffer holds entries (the file watcher's markers put some there every few tens of ms), a few milliseconds a round:
 * on a loaded machine a scan of /proc can miss it every time, while the kernel's count of what it read cannot.
 */
export async function waitReader(group: string, ms = 10_000): Promise<boolean> {
  const until = Date.now() + ms;
  const before = readEvents(group);
  for (;;) {
    if (readEvents(group) > before || leftovers(group).some((l) => l.startsWith('reader pid'))) return true;
    if (Date.now() > until) return false;
    await new Promise((r) => setTimeout(r, 5));
  }
}

/**
 * Polls until `pid` no longer runs as an agent (gone, or a zombie: its cmdline is empty), up to `ms`. A signal is
 * delivered when the process is next scheduled; on a busy machine a session started right after `kill -9` can
 * still see its victim running and rightly leave its groups alone. Returns whether it ended.
 */
export async function waitAgentGone(pid: number, ms = 20_000): Promise<boolean> {
  const until = Date.now() + ms;
  for (;;) {
    let cmd = '';
    try {
      cmd = readFileSync(`/proc/${pid}/cmdline`, 'utf8');
    } catch {
      return true;
    }
    if (!cmd.includes('probelens-agent')) return true;
    if (Date.now() > until) return false;
    await new Promise((r) => setTimeout(r, 50));
  }
}

/** Polls until `group` has no leftovers, up to `ms`; returns what remains. */
export async function waitClean(group: string, ms = 10_000): Promise<string[]> {
  const until = Date.now() + ms;
  for (;;) {
    const left = leftovers(group);
    if (left.length === 0 || Date.now() > until) return left;
    await new Promise((r) => setTimeout(r, 100));
  }
}

export function runWorkload(w: Workload, n: number, s = 'hi'): string {
  return runWorkloadPid(w, n, s).out;
}

/** Runs the workload and also says which pid it ran as (the oracle for the pid a hit reports). */
export function runWorkloadPid(w: Workload, n: number, s = 'hi'): { out: string; pid: number } {
  const r = spawnSync(w.path, [String(n), s], { encoding: 'utf8' });
  if (r.error) throw r.error;
  if (r.status !== 0) throw new Error(`workload exited ${r.status ?? r.signal}: ${r.stderr}`);
  return { out: r.stdout.trim(), pid: r.pid };
}

/**
 * Runs the workload without blocking this process: a session's client must keep answering its agent (heartbeats,
 * reads) while a long workload runs, which spawnSync would stop for as long as the workload takes — on a loaded
 * machine longer than the agent's heartbeat allowance, and the agent would end the session (exit 142).
 */
export function runWorkloadAsync(w: Workload, n: number, s = 'hi'): Promise<{ out: string; pid: number }> {
  return new Promise((resolve, reject) => {
    const child = spawn(w.path, [String(n), s], { stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    let err = '';
    child.stdout.setEncoding('utf8').on('data', (d: string) => (out += d));
    child.stderr.setEncoding('utf8').on('data', (d: string) => (err += d));
    child.once('error', reject);
    child.once('close', (code, signal) =>
      code === 0 ? resolve({ out: out.trim(), pid: child.pid! }) : reject(new Error(`workload exited ${code ?? signal}: ${err}`)),
    );
  });
}

/**
 * A FAKE target: runs the real agent with its script edited so the capability check meets what an older or
 * different kernel gives. `noRawFile`: per_cpu/cpuN/trace_pipe_raw is looked for under another name (a kernel
 * without it); `blockingRead`: the check's reads block on an empty buffer as they do before a reader's close ends
 * them (the check must end them itself, within its 3 s bound, and refuse).
 */
export class FakeRawlessTarget implements Target {
  readonly host = 'local';
  private readonly inner = new ShellTarget(['dash']);
  constructor(private readonly how: 'noRawFile' | 'blockingRead') {}
  describe(): string {
    return `local (fake: ${this.how})`;
  }
  exec(argv: readonly string[], opts?: ExecOptions): Promise<ExecChannel> {
    if (argv[2] !== AGENT_SCRIPT) throw new Error('not the agent');
    const script =
      this.how === 'noRawFile'
        ? AGENT_SCRIPT.replaceAll('/per_cpu/cpu0/trace_pipe_raw" ]', '/per_cpu/cpu0/trace_pipe_raw_absent" ]')
        : AGENT_SCRIPT.replace('dd bs=65536 < "$I/per_cpu/cpu$c/trace_pipe_raw" 2>/dev/null &', 'cat "$I/trace_pipe" > /dev/null 2>&1 &');
    if (script === AGENT_SCRIPT) throw new Error('the fake edit no longer applies to the agent script');
    return this.inner.exec([argv[0], '-c', script, ...argv.slice(3)], opts);
  }
  close(): Promise<void> {
    return this.inner.close();
  }
}

/** Builds tidreuse.c (a thread with a chosen thread id, by ns_last_pid) into this process's own folder. */
export function buildTidReuse(): string {
  const path = join(workloadDir(), 'tidreuse');
  execFileSync('gcc', ['-O2', '-pthread', '-o', path, join(__dirname, '../fixtures/trace-samples/tidreuse.c')]);
  return path;
}

/** The kernel's saved_tgids entry for `tid` (the process it last saved for that thread id), if any. */
export function savedTgid(tid: number): number | undefined {
  const m = new RegExp(`^${tid} (\\d+)$`, 'm').exec(readFileSync(join(T, 'saved_tgids'), 'utf8'));
  return m ? Number(m[1]) : undefined;
}

// probelens define | trace | cleanup — compile specs, trace local or SSH targets, sweep leftovers. BIN `kernel` is
// each target's running kernel, probed by its own BTF and kallsyms with no vmlinux (core/probes/kernelBtf.ts).
// Tests: test/unit/cli/sites.test.ts, test/unit/cli/lowerBound.test.ts, test/unit/core/session/fanout.test.ts,
//   test/integration/engine-fanout.test.ts, test/integration/engine-cleanup.test.ts, test/unit/cli/kernelBtf.test.ts,
//   test/vm/kernelBtf.test.ts
import { loadIndex } from '../../core/index/load';
import { compileProbes, type CompiledProbe } from '../../core/probes/compiler';
import { mergeSummaries, startAll, type HostOutcome } from '../../core/session/fanout';
import type { SessionSummary } from '../../core/session/traceSession';
import { describeDisabled, describeFileChange, describeGuard } from '../../core/session/fileWatch';
import { parseKey, type KeySpec } from '../../core/session/keys';
import { sshOptionsFromCli } from '../../core/ssh/cliOptions';
import { LocalTarget } from '../../core/target/local';
import { SshTarget } from '../../core/target/ssh';
import type { Target } from '../../core/target/target';
import { TracefsAgent } from '../../core/tracefs/agentClient';
import { formatDefinition, GROUP_PATTERN, KRETPROBE_MAXACTIVE_MAX } from '../../core/probes/definition';
import type { Hit } from '../../shared/hit';
import { hitToJsonLine, toJson } from '../../shared/hitJson';
import { formatHitLine } from '../../shared/hitText';
import { oneValue, parseArgs, positiveNumber, UsageError, type ParsedArgs } from '../args';
import { streamChoiceFrom, type StreamChoice } from '../../core/session/streamChoice';
import { indexOptions } from '../limits';
import { lostLine, missedLines, probeSummaryLines } from '../summaryText';
import type { Io } from './inspect';
import { compileKernelBtf, kernelSourceLines, parseKallsyms, type RunningKernel } from '../../core/probes/kernelBtf';
import { parseBtf } from '../../core/binary/btf';
import { fetchRunningKernel } from '../../core/session/runningKernel';
import { readFileSync } from 'node:fs';
import { nameRecord } from '../../shared/names';

/**
 * The BIN that names the running kernel of the target, probed by its own BTF and kallsyms with no vmlinux (a file
 * named `kernel` is given as `./kernel`).
 */
export const RUNNING_KERNEL = 'kernel';

export const SSH_OPTS = {
  host: { kind: 'value', repeat: true },
  identity: { kind: 'value', repeat: true },
  'known-hosts': { kind: 'value' },
  'accept-new': { kind: 'flag' },
  sudo: { kind: 'flag' },
} as const;

export function connector(args: ParsedArgs, log: (m: string) => void): (host: string) => Promise<Target> {
  const sudo = args.flags.has('sudo') || (typeof process.getuid === 'function' && process.getuid() !== 0);
  return async (host) => {
    if (host === 'local') return new LocalTarget({ sudo });
    return SshTarget.connect(
      sshOptionsFromCli({
        host,
        identity: args.values.get('identity'),
        knownHosts: oneValue(args, 'known-hosts'),
        acceptNew: args.flags.has('accept-new'),
        log,
      }),
    );
  };
}

export const useSudo = (args: ParsedArgs, host: string): boolean =>
  args.flags.has('sudo') || (host === 'local' && typeof process.getuid === 'function' && process.getuid() !== 0);

export async function defineCommand(argv: string[], io: Io): Promise<void> {
  const args = parseArgs(
    argv,
    nameRecord({
      json: { kind: 'flag' },
      'remote-path': { kind: 'value' },
      'debug-dir': { kind: 'value', repeat: true },
      group: { kind: 'value' },
      btf: { kind: 'value' },
      kallsyms: { kind: 'value' },
      ...SSH_OPTS,
      ...SITE_OPTS,
    }),
  );
  const [bin, ...specs] = args.positionals;
  if (!bin || specs.length === 0) throw new UsageError('usage: probelens define BIN SPEC…');
  const group = oneValue(args, 'group') ?? `probelens_${process.pid}_define`;
  if (bin !== RUNNING_KERNEL) {
    for (const o of ['btf', 'kallsyms', 'host', 'identity', 'known-hosts'] as const)
      if (args.values.has(o)) throw new UsageError(`--${o} is for 'define ${RUNNING_KERNEL}' (the running kernel without a vmlinux)`);
    for (const f of ['accept-new', 'sudo'] as const)
      if (args.flags.has(f))
        throw new UsageError(`--${f} is for 'define ${RUNNING_KERNEL} --host …' (the running kernel without a vmlinux)`);
  } else
    for (const o of ['remote-path', 'debug-dir', 'max-sites', 'disable-site'] as const)
      if (args.values.has(o)) throw new UsageError(`--${o} needs a binary or vmlinux: 'define ${RUNNING_KERNEL}' takes no ${o}`);
  const probes =
    bin === RUNNING_KERNEL
      ? compileKernelBtf(specs, await kernelForDefine(args, specs), { group })
      : await compileProbes(specs, (await loadIndex(bin, { debugDirs: args.values.get('debug-dir'), ...indexOptions() })).index, {
          group,
          targetPath: oneValue(args, 'remote-path'),
          debugDirs: args.values.get('debug-dir'),
          ...siteOptions(args),
        });
  if (args.flags.has('json'))
    io.out(
      `${toJson(
        probes.map((p) => {
          const inferred = p.args.filter((a) => a.inferred && !a.hidden).map((a) => a.name);
          return {
            event: p.event,
            definition: formatDefinition(p.definition),
            ...(inferred.length ? { inferred } : {}),
            ...(p.unavailable?.length ? { unavailable: nameRecord(p.unavailable.map((u) => [u.name, u.reason] as const)) } : {}),
            ...(p.lowerBound ? { lowerBound: true } : {}),
            ...(p.kernelSource ? { source: p.kernelSource } : {}),
          };
        }),
        2,
      )}\n`,
    );
  else for (const p of probes) io.out(`${formatDefinition(p.definition)}\n`);
  for (const line of [...kernelSourceLines(probes), ...warningLines(probes)]) process.stderr.write(`probelens: ${line}\n`);
}

/**
 * The kernel `define kernel` compiles for: a saved BTF blob (`--btf FILE`, with `--kallsyms FILE` to check names
 * as the target would), else the running kernel of `--host` (or this machine), read as `trace kernel` reads it.
 */
async function kernelForDefine(args: ParsedArgs, specs: string[]): Promise<RunningKernel> {
  const btfFile = oneValue(args, 'btf');
  if (btfFile !== undefined) {
    if (args.values.has('host')) throw new UsageError('--btf and --host are two sources of the kernel: give one');
    const kallsyms = oneValue(args, 'kallsyms');
    return {
      btf: parseBtf(new Uint8Array(readFileSync(btfFile))),
      kallsyms: kallsyms !== undefined ? parseKallsyms(readFileSync(kallsyms, 'latin1')) : undefined,
      blacklist: { unreadable: `compiled offline from ${btfFile}` },
    };
  }
  if (args.values.has('kallsyms')) throw new UsageError('--kallsyms goes with --btf FILE');
  const hosts = args.values.get('host') ?? ['local'];
  if (hosts.length > 1) throw new UsageError(`define ${RUNNING_KERNEL} reads one kernel: give one --host`);
  const target = await connector(args, (m) => process.stderr.write(`probelens: ${m}\n`))(hosts[0]);
  try {
    return await fetchRunningKernel(target, useSudo(args, hosts[0]), specs);
  } finally {
    await target.close().catch(() => undefined);
  }
}

/**
 * Each probe's warnings once, named by the first point that carries them: a function's notes (unproved entries, a
 * lower bound) are carried by every site it arms, and would otherwise be said once per site.
 */
export function warningLines(probes: ReadonlyArray<Pick<CompiledProbe, 'event' | 'spec' | 'warnings'>>): string[] {
  const seen = new Set<string>();
  const out: string[] = [];
  for (const p of probes)
    for (const w of p.warnings) {
      const key = `${p.spec}\0${w}`;
      if (seen.has(key)) continue;
      seen.add(key);
      out.push(`${p.event}: ${w}`);
    }
  return out;
}

const SITE_OPTS = {
  'max-sites': { kind: 'value' },
  'disable-site': { kind: 'value', repeat: true },
} as const;

/** --max-sites N (a spec arming more sites is refused) and --disable-site 0xADDR (repeatable). */
function siteOptions(args: ParsedArgs): { maxSites?: number; disabledSites?: ReadonlySet<string> } {
  const maxSites = positiveNumber(args, 'max-sites', true);
  const disabled = args.values.get('disable-site') ?? [];
  for (const a of disabled)
    if (!/^0x[0-9a-f]+$/i.test(a))
      throw new UsageError(`--disable-site takes a site address as 'functions --json' lists it (0x…), not '${a}'`);
  return {
    maxSites,
    disabledSites: disabled.length ? new Set(disabled.map((a) => `0x${BigInt(a).toString(16)}`)) : undefined,
  };
}

export async function traceCommand(argv: string[], io: Io): Promise<number> {
  const args = parseArgs(
    argv,
    nameRecord({
      ...SSH_OPTS,
      json: { kind: 'flag' },
      'remote-path': { kind: 'value' },
      pid: { kind: 'value' },
      filter: { kind: 'value' },
      duration: { kind: 'value' },
      count: { kind: 'value' },
      'no-build-id-check': { kind: 'flag' },
      'buffer-kb': { kind: 'value' },
      maxactive: { kind: 'value' },
      'debug-dir': { kind: 'value', repeat: true },
      heartbeat: { kind: 'value' },
      aggregate: { kind: 'flag' },
      by: { kind: 'value', repeat: true },
      ...SITE_OPTS,
    }),
  );
  const [bin, ...specs] = args.positionals;
  if (!bin || specs.length === 0) throw new UsageError('usage: probelens trace BIN SPEC… [--host [USER@]HOST[:PORT]]…');
  const aggregate = args.flags.has('aggregate');
  let keys: KeySpec[];
  try {
    keys = (args.values.get('by') ?? []).map(parseKey);
  } catch (e) {
    throw new UsageError((e as Error).message);
  }
  // The kernel counts every call its trigger sees: a pid or an event filter would not narrow its figures (yet), and
  // no hit is printed to count.
  for (const o of ['count', 'pid', 'filter'] as const)
    if (aggregate && args.values.has(o)) throw new UsageError(`--${o} cannot be combined with --aggregate (yet)`);
  let stream: StreamChoice;
  try {
    stream = streamChoiceFrom();
  } catch (e) {
    throw new UsageError((e as Error).message);
  }
  const sites = siteOptions(args);
  const duration = positiveNumber(args, 'duration', false);
  const count = positiveNumber(args, 'count', true);
  const pid = positiveNumber(args, 'pid', true);
  const bufferKb = positiveNumber(args, 'buffer-kb', true);
  const maxactive = positiveNumber(args, 'maxactive', true);
  if (maxactive !== undefined && maxactive > KRETPROBE_MAXACTIVE_MAX)
    throw new UsageError(`--maxactive is at most ${KRETPROBE_MAXACTIVE_MAX} (the kernel's limit), got ${maxactive}`);
  const heartbeat = positiveNumber(args, 'heartbeat', true);
  const json = args.flags.has('json');
  const hosts = args.values.get('host') ?? ['local'];
  // `kernel`: each target's running kernel, by its own BTF and kallsyms (no vmlinux, no index).
  const running = bin === RUNNING_KERNEL;
  if (running)
    for (const o of ['remote-path', 'debug-dir'] as const)
      if (args.values.has(o)) throw new UsageError(`--${o} needs a binary or vmlinux: 'trace ${RUNNING_KERNEL}' takes no ${o}`);
  const index = running ? undefined : (await loadIndex(bin, { debugDirs: args.values.get('debug-dir'), ...indexOptions() })).index;

  let total = 0;
  let stopRequested: () => void = () => undefined;
  const stopSignal = new Promise<void>((res) => (stopRequested = res));
  const onHit = (h: Hit) => {
    if (count !== undefined && total >= count) return;
    total++;
    io.out(json ? hitToJsonLine(h) : formatHitLine(h));
    if (count !== undefined && total >= count) stopRequested();
  };
  const log = (m: string) => process.stderr.write(`probelens: ${m}\n`);
  const told = new Set<string>();
  const connect = connector(args, log);
  // The first Ctrl-C (or TERM) stops: every host disarms and reports its kernel counts. HUP (the terminal closed)
  // stops the same way and says so. A signal while stopping (a second Ctrl-C during a long disarm) stops waiting:
  // what arrived is summarised and each agent is left to finish cleaning up by itself.
  let signalCause: string | undefined;
  let interruptCause: string | undefined;
  let interruptNow: () => void = () => undefined;
  const interrupted = new Promise<void>((res) => (interruptNow = res));
  let stopping = false;
  const onSignal = (sig: NodeJS.Signals) => {
    if (!stopping) {
      if (sig === 'SIGHUP') signalCause = 'the terminal closed (SIGHUP): the session was stopped';
      stopRequested();
      return;
    }
    interruptCause ??=
      sig === 'SIGINT'
        ? 'a second Ctrl-C stopped the session without waiting for the target to finish disarming (its agent removes the probes by itself)'
        : `${sig} stopped the session without waiting for the target to finish disarming (its agent removes the probes by itself)`;
    interruptNow();
  };
  const signals: NodeJS.Signals[] = ['SIGINT', 'SIGTERM', 'SIGHUP'];
  // Listening from before arming: hits can be printed before the last arming reply is read, and a script (or a
  // user) that signals as soon as it sees one, or reads "Ctrl-C to stop", must not meet the default action
  // (death without a summary). A signal during arming stops once arming is done.
  for (const sig of signals) process.on(sig, onSignal);
  const outcomes: HostOutcome[] = await startAll(hosts, async (host) => connect(host), {
    index,
    runningKernel: running,
    specs,
    remotePath: oneValue(args, 'remote-path'),
    pid,
    filter: oneValue(args, 'filter'),
    bufferKb,
    maxactive,
    noBuildIdCheck: args.flags.has('no-build-id-check'),
    debugDirs: args.values.get('debug-dir'),
    heartbeatSeconds: heartbeat,
    stream,
    // The CLI never edits a running trace: all its specs' points share events, so Ctrl-C costs the kernel the
    // same for one function or thousands.
    // Aggregating, each spec keeps its events: the kernel times a call from the last entry of its entry event.
    shareAcrossSpecs: !aggregate,
    aggregate,
    keys,
    ...sites,
    onHit,
    onLost: (n) => {
      if (!json) log(`${n} events lost (the trace buffer overflowed)`);
    },
    onFileChange: (c) => {
      // Said once per file when first heard of (tracing the new build is this command again), and for a file written
      // over, once more when its probes are disabled.
      const key = `${c.host}\0${c.path}`;
      if (!told.has(key)) log(describeFileChange(c, `run probelens ${['trace', ...argv].map(shellWord).join(' ')}`));
      told.add(key);
      if (c.kind === 'changed' && c.disabled !== undefined && !told.has(`${key}\0disabled`)) {
        told.add(`${key}\0disabled`);
        log(describeDisabled(c));
      }
    },
    onFileGuard: (g) => log(describeGuard(g)),
    get sudo() {
      return useSudo(args, hosts[0]);
    },
  });
  for (const o of outcomes) if (o.error) log(`${o.host}: ${o.error.message}`);
  const live = outcomes.filter((o) => o.session);
  // Which stream each target ships (see src/core/session/streamChoice.ts), and why it is text where it is.
  for (const o of live) {
    const s = o.session!;
    // A --pid in a container: which process that is on the target, and the copy of the build its probes sit on.
    const p = s.process;
    if (p && (p.nsPid !== p.pid || p.pid !== pid || p.path !== (oneValue(args, 'remote-path') ?? bin)))
      log(`${o.host}: pid ${pid} is process ${p.pid} there (PID ${p.nsPid} in its own namespace); its build is armed at ${p.path}`);
    log(
      s.stream === 'raw'
        ? `${o.host}: streaming ring-buffer pages (trace_pipe_raw)`
        : `${o.host}: streaming trace_pipe text${s.streamNote ? `: ${s.streamNote}` : ''}`,
    );
  }
  // Ctrl-Z: each target is told first that this client will be silent (an agent over SSH cannot see that its
  // client is stopped, and would end the session at its heartbeat timeout), then the process stops as usual.
  const onTstp = () => {
    if (!stopping) log(`paused: the targets keep tracing for up to ${PAUSE_LIMIT_S / 60} min while stopped; fg to resume`);
    const announced = Promise.all(live.map((o) => o.session!.pause(PAUSE_LIMIT_S).catch(() => undefined)));
    const bound = new Promise((r) => setTimeout(r, 1000).unref());
    void Promise.race([announced, bound]).then(() => process.kill(process.pid, 'SIGSTOP'));
  };
  process.on('SIGTSTP', onTstp);
  // Where each kernel function's probes came from (vmlinux DWARF, or the target's BTF and kallsyms).
  if (live.length > 0) for (const line of kernelSourceLines(live[0].session!.probes)) log(line);
  if (live.length > 0) {
    // A closed stdout (`| head`) stops the trace as Ctrl-C does.
    void io.closed?.then(() => stopRequested());
    if (!json) {
      const points = live[0].session!.probes;
      const n = new Set(points.map((p) => p.spec)).size;
      const at = `${points.length} site${points.length === 1 ? '' : 's'}`;
      const how = aggregate ? 'aggregating in the kernel; ' : '';
      log(`tracing ${n} probe${n === 1 ? '' : 's'} at ${at} on ${live.map((o) => o.host).join(', ')}; ${how}Ctrl-C to stop`);
      for (const line of warningLines(live[0].session!.probes)) log(line);
    }
    const timer = duration !== undefined ? setTimeout(stopRequested, duration * 1000) : undefined;
    // A host whose agent dies mid-session ends only its own part; when all are gone there is nothing to wait for.
    void Promise.all(live.map((o) => o.session!.exited)).then(() => stopRequested());
    await stopSignal;
    if (timer) clearTimeout(timer);
  }
  stopping = true;
  const results: Array<{ host: string; summary?: SessionSummary; error?: Error }> = await Promise.all(
    outcomes.map(async (o) => {
      if (!o.session) return { host: o.host, error: o.error };
      const session = o.session;
      try {
        const summary = await Promise.race([session.stop(), interrupted.then(() => session.interrupt(interruptCause!))]);
        // The agent disarms by itself from here on: the user does not wait for the kernel.
        session.release();
        const error = summary.error ?? signalCause;
        return { host: o.host, summary, error: error ? new Error(error) : undefined };
      } catch (e) {
        return { host: o.host, error: e instanceof Error ? e : new Error(String(e)) };
      } finally {
        // A target whose agent was left to clean up by itself is not waited for either.
        if (interruptCause) session.opts.target.close().catch(() => undefined);
        else await Promise.race([session.opts.target.close().catch(() => undefined), interrupted]);
      }
    }),
  );
  for (const sig of signals) process.off(sig, onSignal);
  process.off('SIGTSTP', onTstp);
  // One sentence per host whose session ended early, naming why, and what arrived until then.
  for (const r of results) {
    if (!r.summary || !r.error) continue;
    const n = Object.values(r.summary.hits).reduce((a, b) => a + b, 0);
    log(`${r.host}: ${r.error.message}; ${n} hit${n === 1 ? '' : 's'} received until then${json ? '' : ', summarised below'}`);
  }
  const summary = mergeSummaries(results);
  if (json) io.out(`${toJson({ summary })}\n`);
  else {
    // Every probe the kernel counted for, so one that was never hit says `0 hits`.
    const probes = new Set([...Object.keys(summary.hits), ...Object.keys(summary.kernelHits)]);
    if (summary.aggregated)
      io.out('aggregated in the kernel (hist triggers): hits per probe, site and thread id; latency in log2 buckets\n');
    for (const probe of probes) for (const line of probeSummaryLines(summary, probe)) io.out(line);
    const bounded = new Set(live.flatMap((o) => o.session!.probes.filter((p) => p.lowerBound).map((p) => p.function!)));
    for (const fn of bounded) io.out(`${fn}: a lower bound (calls at inlined copies whose entries or exits are not proved go uncounted)\n`);
    const missed = Object.values(summary.missed ?? nameRecord<number>()).reduce((a, b) => a + b, 0);
    if (summary.lost > missed)
      io.out(
        lostLine(
          summary.lost - missed,
          !!summary.aggregated,
          live.every((o) => o.session!.canAggregate),
        ),
      );
    for (const line of missedLines(summary.missed ?? nameRecord<number>())) io.out(line);
    if (summary.discarded)
      io.out(`discarded: ${summary.discarded} records taken after their binary was written over (they may come from other code)\n`);
    // A string of nearly 4 KiB makes a record the kernel cannot store: the hit is counted but never recorded.
    const strings = live.some((o) => o.session!.probes.some((p) => p.args.some((a) => a.headArg)));
    for (const [host, h] of Object.entries(summary.hosts))
      if (h.mismatch) io.out(`${host}: ${describeMismatch(h.mismatch)}${h.mismatch > 0 && strings ? STRING_RECORD_HINT : ''}\n`);
  }
  return results.some((r) => r.error) ? 1 : 0;
}

/** `word` as one POSIX shell word (quoted when it holds anything but plain characters). */
export function shellWord(word: string): string {
  return /^[A-Za-z0-9_@%+=:,./-]+$/.test(word) ? word : `'${word.replaceAll("'", "'\\''")}'`;
}

/**
 * How long a target keeps tracing for a client stopped by Ctrl-Z before its agent ends the session: a pause the
 * user asked for is not a client gone, but probes must not stay armed forever behind a forgotten job.
 */
export const PAUSE_LIMIT_S = 600;

const STRING_RECORD_HINT =
  ' (a string argument of about 3,900 to 4,095 bytes makes a record larger than the kernel can store: such a call is counted but not recorded)';

/** One sentence for a host whose received + lost differs from the kernel's count (see LossReport.mismatch). */
export function describeMismatch(n: number): string {
  return n > 0
    ? `mismatch: ${n} event${n === 1 ? '' : 's'} the kernel counted ${n === 1 ? 'was' : 'were'} neither received nor reported lost`
    : `mismatch: ${-n} more record${n === -1 ? '' : 's'} received than the kernel counted`;
}

export async function cleanupCommand(argv: string[], io: Io): Promise<number> {
  const args = parseArgs(argv, nameRecord({ ...SSH_OPTS, force: { kind: 'value', repeat: true } }));
  if (args.positionals.length) throw new UsageError(`unexpected argument '${args.positionals[0]}'`);
  const force = args.values.get('force') ?? [];
  for (const g of force) if (!GROUP_PATTERN.test(g)) throw new UsageError(`--force takes a ProbeLens group name (probelens_…), not '${g}'`);
  const hosts = args.values.get('host') ?? ['local'];
  // The agent's HELLO sweeps every probelens_* group and instance whose owner it can prove dead and names the ones
  // it cannot judge; STOP removes its own.
  const failed = await withEachAgent(args, hosts, async (agent, host) => {
    const { swept, undecided } = agent.hello;
    const forced: string[] = [];
    let refused = 0;
    for (const g of force) {
      try {
        await agent.forceRemove(g);
        forced.push(g);
      } catch (e) {
        refused++;
        process.stderr.write(`probelens: ${host}: not removing ${g}: ${e instanceof Error ? e.message : String(e)}\n`);
      }
    }
    const removed = [...swept, ...forced];
    io.out(`${host}: ${removed.length ? `removed ${removed.join(', ')}` : 'nothing to clean up'}\n`);
    for (const u of undecided.filter((x) => !forced.includes(x.group))) {
      io.out(
        `${host}: kept ${u.group}: cannot tell whether its owner is alive (${u.why}); run probelens cleanup where its ` +
          `namespace is visible (the host), or, if you know that session is gone: probelens cleanup --force ${u.group}` +
          `${host === 'local' ? '' : ` --host ${host}`}\n`,
      );
    }
    return refused;
  });
  return failed ? 1 : 0;
}

/**
 * Runs `fn` with an agent on each of `hosts` in turn (stopped and waited for afterwards: STOP replies before the
 * agent has removed its own instance); a host that fails is said on stderr. Returns how many failed, plus what `fn`
 * counted as failed.
 */
export async function withEachAgent(
  args: ParsedArgs,
  hosts: readonly string[],
  fn: (agent: TracefsAgent, host: string) => Promise<number | void>,
): Promise<number> {
  const connect = connector(args, (m) => process.stderr.write(`probelens: ${m}\n`));
  let failed = 0;
  for (const host of hosts) {
    let target: Target | undefined;
    try {
      target = await connect(host);
      const agent = await TracefsAgent.start(target, { sudo: useSudo(args, host) });
      try {
        failed += (await fn(agent, host)) ?? 0;
      } finally {
        await agent.stop();
        await agent.exit;
      }
    } catch (e) {
      failed++;
      process.stderr.write(`probelens: ${host}: ${e instanceof Error ? e.message : String(e)}\n`);
    } finally {
      await target?.close().catch(() => undefined);
    }
  }
  return failed;
}

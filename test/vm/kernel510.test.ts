// Debian 11's 5.10 cloud kernel as a second VM test host (test/helpers/vm.ts, kernel line debian11), booted once in
// this file's process and shared by its tests: the subset a user of an older kernel relies on — uprobes and their
// returns with the values the program printed, strings, a glob over 100 functions, kernel probes compiled from the
// kernel's own dbg vmlinux, refusals before anything is written, and nothing left on the VM after a stop or a kill -9
// of the client. 5.10 has immediate fetch arguments (`\imm`, Linux 5.4+), so the path for a 4.x kernel (no
// immediates: records are not framed by a secret, and every probe point is an event of its own) is tested here as a
// simulation: the harness bind-mounts over tracefs's README a copy without `\imm-value`, which is all the agent looks
// for, since no pre-5.4 kernel can be downloaded here.
import { test, type TestContext } from 'node:test';
import assert from 'node:assert/strict';
import { loadIndex, type LoadedIndex } from '../../src/core/index/load';
import { TraceSession } from '../../src/core/session/traceSession';
import type { SessionSummary } from '../../src/core/session/sessionApi';
import { TracefsAgent } from '../../src/core/tracefs/agentClient';
import type { Hit } from '../../src/shared/hit';
import { parseFixtureOutput, type FixtureOutput } from '../fixtures/output';
import { isolatedEnv, startCli, sleep } from '../integration/engine-harness';
import {
  requireVm,
  requireVmlinux,
  vmCliFlags,
  vmKernelBuildId,
  vmLeftovers,
  vmShell,
  waitVmClean,
  type VmConnection,
} from '../helpers/vm';
import { armOnVm as armKernelCli, installOpener, KNOWN, OPENS, startOpener, warmIndex } from './kernelCli';
import { connectVm } from './kprobeHarness';

const TIMEOUT = { timeout: 900_000 };
const KERNEL = { kernel: 'debian11' } as const;
const TRACEFS = '/sys/kernel/tracing';

let told = false;

/** The 5.10 VM, checked to run 5.10 and to be clean before the test. */
async function vm510(t: TestContext): Promise<VmConnection | undefined> {
  const vm = await requireVm(t, KERNEL);
  if (!vm) return undefined;
  assert.match(vm.kernelRelease, /^5\.10\.0-\d+-cloud-amd64$/, vm.kernelPackage);
  if (!told)
    t.diagnostic(`${vm.kernelPackage}: image ${vm.timings.imageMs} ms (cached: ${vm.timings.imageCached}), boot ${vm.timings.bootMs} ms`);
  told = true;
  assert.deepEqual((await waitVmClean(vm, 60_000)).left, [], 'the VM is clean before the test');
  return vm;
}

const indexes = new Map<string, Promise<LoadedIndex['index']>>();
const indexOf = (path: string): Promise<LoadedIndex['index']> => {
  let got = indexes.get(path);
  if (!got) indexes.set(path, (got = loadIndex(path, { noCache: true }).then((l) => l.index)));
  return got;
};

interface Traced {
  hits: Hit[];
  out: FixtureOutput;
  summary: SessionSummary;
  session: TraceSession;
  /** The session's definitions as the VM's uprobe_events listed them while armed. */
  defined: string[];
}

/**
 * Arms `specs` on `bin` in the VM (a session in this process over SSH), runs the fixture there with `iterations`,
 * waits (bounded) until hits stop arriving, stops, and checks that nothing of the session is left on the VM.
 */
async function traceInVm(t: TestContext, vm: VmConnection, bin: string, specs: string[], iterations: number): Promise<Traced> {
  const target = await connectVm(vm);
  t.after(() => target.close());
  const hits: Hit[] = [];
  const session = await TraceSession.start({ target, index: await indexOf(bin), specs, onHit: (h) => hits.push(h) });
  let out: FixtureOutput;
  let defined: string[];
  let summary: SessionSummary;
  try {
    defined = (await vmShell(vm, `cat ${TRACEFS}/uprobe_events`)).out.split('\n').filter((l) => l.includes(`:${session.probes[0].group}/`));
    const r = await vmShell(vm, `${bin} ${iterations}`);
    assert.equal(r.code, 0, r.err);
    out = parseFixtureOutput(r.out);
    let last = -1;
    for (let i = 0; i < 120 && hits.length !== last; i++) {
      last = hits.length;
      await sleep(500);
    }
  } finally {
    summary = await session.stop();
  }
  const { left, ms } = await waitVmClean(vm, 60_000);
  assert.deepEqual(left, [], `left on the VM ${ms} ms after the stop`);
  return { hits, out: out!, summary, session, defined: defined! };
}

/** The events (GROUP/EVENT) of uprobe_events lines, one per line: an event with several points is listed once each. */
const eventsOf = (defined: string[]): string[] => defined.map((d) => /^[pr]\d*:(\S+)/.exec(d)![1]);

/** Each function's hits equal the program's own count of its calls, and carry the values it printed, in order. */
function assertCallsSeen(run: Traced, fn: string, args: string[], probe = fn): void {
  const calls = run.out.calls.filter((c) => c.func === fn);
  const hits = run.hits.filter((h) => h.probe === probe);
  assert.equal(calls.length, run.out.counts.get(fn), `${fn}: the program printed each of its calls`);
  assert.equal(hits.length, run.out.counts.get(fn), `${probe}: as many hits as the program counted calls of ${fn}`);
  hits.forEach((h, i) => {
    for (const a of args) assert.equal(String(h.args[a]), calls[i].args[a], `${fn} call ${i}: ${a}`);
    if (probe.endsWith('_return')) assert.equal(String(h.retval), calls[i].ret, `${fn} call ${i}: its return value`);
  });
}

/** `many_* x` traced over two runs of the fixture: each of its 100 functions' calls seen with their values, none lost. */
async function traceMany(t: TestContext, vm: VmConnection): Promise<Traced> {
  const run = await traceInVm(t, vm, vm.fixtures['many-O2'], ['many_* x'], 2);
  assert.equal(run.out.counts.size, 100);
  for (const fn of run.out.counts.keys()) assertCallsSeen(run, fn, ['x']);
  assert.equal(run.hits.length, run.out.total, `${run.out.total} calls, as many hits`);
  assert.equal(run.summary.lost, 0);
  return run;
}

test(
  "Debian 11's 5.10 VM: the agent finds uprobes, kprobes, %return, ustring and \\imm in its README, no hist triggers, and the kernel's refusal reaches the caller",
  TIMEOUT,
  async (t) => {
    const vm = await vm510(t);
    if (!vm) return;
    const target = await connectVm(vm);
    t.after(() => target.close());
    const agent = await TracefsAgent.start(target);
    const caps = [...agent.hello.caps].join(',');
    for (const cap of ['uprobe_events', 'kprobe_events', 'dynamic_events', 'ustring', 'return_suffix', 'imm', 'instances', 'error_log'])
      assert.ok(agent.hello.caps.has(cap), `5.10 offers ${cap}: ${caps}`);
    assert.ok(!agent.hello.caps.has('hist'), `Debian 11's cloud kernel has no hist triggers: ${caps}`);
    await assert.rejects(agent.define(`p:${agent.group}/nope no_such_kernel_function_pl+0`), /rejected/);
    await agent.stop();
    assert.deepEqual(await vmLeftovers(vm), [], 'the agent removed its instance at stop');
  },
);

test(
  'uprobes on 5.10: add_ints a b, greet name greeting (strings) and the returns of add_ints, greet and classify (4 RETs): hits equal the program’s counts, with its values',
  TIMEOUT,
  async (t) => {
    const vm = await vm510(t);
    if (!vm) return;
    const run = await traceInVm(
      t,
      vm,
      vm.fixtures['calls-O2'],
      ['add_ints a b', 'greet name greeting', 'add_ints%return $retval', 'greet%return $retval', 'classify%return $retval'],
      3,
    );
    assertCallsSeen(run, 'add_ints', ['a', 'b']);
    assertCallsSeen(run, 'greet', ['name', 'greeting']);
    for (const fn of ['add_ints', 'greet', 'classify']) assertCallsSeen(run, fn, [], `${fn}_return`);
    assert.equal(run.out.counts.get('classify'), 12, 'classify runs 4 times an iteration');
    assert.ok(
      run.defined.every((d) => /=\\\d+:x64\b/.test(d)),
      `5.10 has immediates: every record is framed by the session's secret:\n${run.defined.join('\n')}`,
    );
    assert.equal(run.summary.lost, 0);
    assert.equal(run.summary.mismatch, 0, 'every hit the kernel counted arrived');
  },
);

test(
  'a glob on 5.10: many_* x arms 100 functions, each hit as often as the program counts it, with x its iteration',
  TIMEOUT,
  async (t) => {
    const vm = await vm510(t);
    if (!vm) return;
    const run = await traceMany(t, vm);
    assert.equal(run.session.probes.length, 100);
    // 5.10 has multi-point events: the 100 points share a few events (by argument names and types).
    const events = new Set(eventsOf(run.defined)).size;
    t.diagnostic(`100 probe points in ${events} tracefs event(s)`);
    assert.ok(events < 100, `the points share events: ${events}`);
  },
);

test(
  'the 4.x path on 5.10 (a simulation: the harness hides \\imm-value from the README the agent reads): no framing, one event per probe point, exact counts and values',
  TIMEOUT,
  async (t) => {
    const vm = await vm510(t);
    if (!vm) return;
    // A copy of README without the line documenting immediates, bind-mounted over it for this test alone.
    const hide = await vmShell(
      vm,
      `grep -vF '\\imm-value' ${TRACEFS}/README > /tmp/README-4x && mount -o bind /tmp/README-4x ${TRACEFS}/README && ! grep -qF '\\imm-value' ${TRACEFS}/README`,
    );
    assert.equal(hide.code, 0, `hiding \\imm-value: ${hide.err}`);
    t.after(async () => {
      const r = await vmShell(vm, `umount ${TRACEFS}/README && grep -qF '\\imm-value' ${TRACEFS}/README`);
      assert.equal(r.code, 0, `the README is whole again: ${r.err}`);
    });
    t.diagnostic('simulated 4.x kernel: 5.10 with \\imm-value hidden from its tracefs README');
    const calls = await traceInVm(t, vm, vm.fixtures['calls-O2'], ['add_ints a b', 'classify%return $retval'], 3);
    assert.ok(
      calls.defined.every((d) => !/=\\/.test(d)),
      `no immediate fetch arguments (no secret framing the records):\n${calls.defined.join('\n')}`,
    );
    const events = eventsOf(calls.defined);
    assert.equal(new Set(events).size, events.length, `every probe point is an event of its own:\n${calls.defined.join('\n')}`);
    assertCallsSeen(calls, 'add_ints', ['a', 'b']);
    assertCallsSeen(calls, 'classify', [], 'classify_return');
    assert.equal(calls.summary.lost, 0);

    const many = await traceMany(t, vm);
    assert.equal(many.defined.length, 100, 'one definition per function');
    assert.equal(new Set(eventsOf(many.defined)).size, 100, 'and an event each (with immediates they share one)');
  },
);

test(
  "kprobes on 5.10 from its dbg vmlinux (same build-id as the booted kernel): do_sys_openat2 dfd filename:ustring how->flags and its %return $retval see the program's 3 opens with their fds",
  TIMEOUT,
  async (t) => {
    const vm = await vm510(t);
    if (!vm) return;
    const k = await requireVmlinux(t, vm);
    if (!k || !(await installOpener(t, vm))) return;
    assert.equal(k.buildId, await vmKernelBuildId(vm), 'the vmlinux is the booted kernel’s build');
    const t0 = Date.now();
    const { index } = await warmIndex(k.path);
    t.diagnostic(`indexed ${k.path} in ${Date.now() - t0} ms`);
    const opener = startOpener(vm);
    t.after(() => opener.kill());
    const pid = await opener.pid;
    const target = await connectVm(vm);
    t.after(() => target.close());
    const hits: Hit[] = [];
    const session = await TraceSession.start({
      target,
      index,
      pid,
      specs: ['do_sys_openat2 dfd filename:ustring how->flags', 'do_sys_openat2%return $retval'],
      onHit: (h) => hits.push(h),
    });
    let summary: SessionSummary;
    try {
      const defined = (await vmShell(vm, `cat ${TRACEFS}/kprobe_events`)).out;
      assert.match(defined, /^p:\S+ do_sys_openat2(\+0)? .*dfd=%di:s32 filename=\+u0\(%si\):ustring .*how_flags=\+0\(%dx\):u64/m, defined);
      assert.match(defined, /^r\d*:\S+ do_sys_openat2 .*retval=\$retval:s64/m, defined);
      opener.go();
      const fds = await opener.done;
      assert.equal(fds.length, OPENS);
      const mine = (): Hit[] => hits.filter((h) => h.pid === pid);
      const until = Date.now() + 120_000;
      while (mine().filter((h) => h.kind === 'return').length < OPENS && Date.now() < until) await sleep(250);
      const entries = mine().filter((h) => h.kind === 'entry');
      assert.equal(entries.length, OPENS, JSON.stringify(mine()));
      for (const e of entries) {
        assert.equal(e.args.filename, KNOWN);
        assert.equal(e.args.dfd, -100, 'AT_FDCWD');
        assert.equal(Number(e.args.how_flags) & 0o3, 0, 'O_RDONLY');
      }
      assert.deepEqual(
        mine()
          .filter((h) => h.kind === 'return')
          .map((h) => h.retval),
        fds,
        'each return value is the fd the program got',
      );
    } finally {
      summary = await session.stop();
    }
    assert.equal(summary.lost, 0, JSON.stringify(summary.missed));
    const { left, ms } = await waitVmClean(vm, 60_000);
    assert.deepEqual(left, [], `left on the VM ${ms} ms after the stop`);
  },
);

test(
  'refusals on 5.10: a blacklisted, a notrace and a noinstr kernel function are refused with the reason before anything is written',
  TIMEOUT,
  async (t) => {
    const vm = await vm510(t);
    if (!vm) return;
    const k = await requireVmlinux(t, vm);
    if (!k) return;
    const { index } = await warmIndex(k.path);
    const target = await connectVm(vm);
    t.after(() => target.close());
    for (const [spec, why] of [
      ['do_int3', /do_int3 is on the kernel's kprobe blacklist/],
      ['trace_clock_local', /trace_clock_local does not call __fentry__ at its start: it is notrace/],
      ['exc_int3', /exc_int3\+0 is in \.noinstr\.text/],
    ] as const) {
      await assert.rejects(TraceSession.start({ target, index, specs: [spec] }), why);
      assert.equal((await vmShell(vm, `cat ${TRACEFS}/kprobe_events`)).out, '', `${spec}: nothing was written`);
      assert.deepEqual((await waitVmClean(vm, 60_000)).left, [], `${spec}: nothing is left`);
    }
  },
);

test(
  'kill -9 of a CLI tracing many_* x (100 uprobes) on 5.10: the VM holds no probe, instance or reader afterwards',
  TIMEOUT,
  async (t) => {
    const vm = await vm510(t);
    if (!vm) return;
    const bin = vm.fixtures['many-O2'];
    const cli = startCli(t, ['trace', bin, 'many_* x', ...vmCliFlags(vm)], isolatedEnv(t));
    await cli.waitFor(/tracing \d+ probes? at \d+ sites? on /, 300_000);
    const armed = await vmLeftovers(vm);
    assert.equal(armed.filter((l) => /^p:/.test(l)).length, 100, 'all 100 definitions are in uprobe_events');
    assert.ok(
      armed.some((l) => l.startsWith('reader ')),
      `the text stream's reader runs: ${armed.filter((l) => !l.startsWith('p:')).join('\n')}`,
    );
    assert.equal((await vmShell(vm, `${bin} 1 >/dev/null`)).code, 0);
    await cli.waitFor(/ many_042 x=0$/m, 60_000, 'stdout');
    cli.child.kill('SIGKILL');
    await cli.exit;
    const { left, ms } = await waitVmClean(vm, 60_000);
    assert.deepEqual(left, [], `left on the VM after ${ms} ms`);
    t.diagnostic(`5.10 VM clean ${ms} ms after kill -9 of the client`);
  },
);

test(
  'kill -9 of a CLI tracing do_sys_openat2 and its return on 5.10: the VM holds no kprobe, instance or reader afterwards',
  TIMEOUT,
  async (t) => {
    const vm = await vm510(t);
    if (!vm) return;
    const k = await requireVmlinux(t, vm);
    if (!k) return;
    const cli = await armKernelCli(t, vm, k.path, ['do_sys_openat2 dfd', 'do_sys_openat2%return $retval'], ['--pid', '1']);
    assert.match((await vmShell(vm, `cat ${TRACEFS}/kprobe_events`)).out, /do_sys_openat2/);
    cli.child.kill('SIGKILL');
    await cli.exit;
    const { left, ms } = await waitVmClean(vm, 60_000);
    assert.deepEqual(left, [], `left on the VM after ${ms} ms`);
    t.diagnostic(`5.10 VM clean of kprobes ${ms} ms after kill -9 of the client`);
  },
);

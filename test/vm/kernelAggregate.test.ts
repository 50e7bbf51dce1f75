// In-kernel aggregation of kernel functions (`trace VMLINUX … --aggregate`) on the VM: kprobes placed from the dbg
// vmlinux's DWARF get the same hist triggers and synthetic latency event as uprobes. One workload is traced by two
// sessions at once, one streaming and one counting in the kernel: a static program in the VM calls uname(2)
// CALLS times, and `__x64_sys_newuname` (entry and return) is traced. For the program's thread the kernel's count
// equals the streamed one and the program's own, and so do the counts by task name; each session's hits equal
// kprobe_profile's count; both name the same caller for every call (`--by caller`: the stream from the return
// address and the VM's KASLR offset, the kernel with `.sym`); and the VM holds nothing afterwards. Latency is checked
// with each session alone on the workload (two sessions on one function time each other's handlers) against the
// program's own clock around each call: every call the probes time lies within the program's timing of it. A
// threaded twin of the program is counted per process and per thread.
import { test, type TestContext } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { parseJsonOutput, sleep, startCli } from '../integration/engine-harness';
import { log2Bucket } from '../../src/shared/hit';
import { HIDDEN_CALLER } from '../../src/core/session/keys';
import { installStatic, kernelEnv, waitAggregating, waitStreaming, warmIndex } from './kernelCli';
import { requireVm, requireVmlinux, vmCliFlags, vmShell, vmSshArgs, waitVmClean, type VmConnection } from '../helpers/vm';
import { plainData } from '../helpers/plain';

const TIMEOUT = { timeout: 900_000 };
const T = '/sys/kernel/tracing';
const PROGRAM = '/tmp/probelens-unamer';
const CALLS = 60;
const SPECS = ['__x64_sys_newuname', '__x64_sys_newuname%return'];
/** Where every system call's function is called from on the VM's kernel (6.1, x86-64). */
const SYSCALL_CALLER = 'do_syscall_64';

/** The program: prints its pid, waits for a byte on stdin, calls uname(2) CALLS times, prints how many worked. */
const UNAMER = `#include <stdio.h>
#include <sys/utsname.h>
#include <unistd.h>
int main(void) {
  char go;
  struct utsname u;
  int n = 0;
  printf("pid %d\\n", getpid());
  fflush(stdout);
  if (read(0, &go, 1) != 1) return 2;
  for (int i = 0; i < ${CALLS}; i++) n += uname(&u) == 0;
  printf("calls %d\\n", n);
  return 0;
}
`;
/** Runs the program in the VM: it prints its pid, waits for a byte on stdin, then calls uname(2) CALLS times. */
function runUnamer(
  vm: VmConnection,
  program = PROGRAM,
): { pid: Promise<number>; go(): void; done: Promise<number>; output: Promise<string> } {
  const child = spawn('ssh', [...vmSshArgs(vm), '--', program], { stdio: ['pipe', 'pipe', 'pipe'] });
  let out = '';
  child.stdout.setEncoding('utf8').on('data', (d: string) => (out += d));
  const pid = new Promise<number>((resolve, reject) => {
    child.stdout.on('data', () => {
      const m = /^pid (\d+)$/m.exec(out);
      if (m) resolve(Number(m[1]));
    });
    child.once('close', () => reject(new Error(`the program ended before printing its pid: ${out}`)));
  });
  const output = new Promise<string>((resolve) => child.once('close', () => resolve(out)));
  const done = output.then((o) => Number(/^calls (\d+)$/m.exec(o)?.[1] ?? -1));
  return { pid, go: () => child.stdin.end('g'), done, output };
}

/** The VM, its vmlinux (indexed) and the program installed, the VM clean; undefined when skipped (CI: failed). */
async function prepare(t: TestContext): Promise<{ vm: VmConnection; k: { path: string } } | undefined> {
  const vm = await requireVm(t);
  if (!vm) return undefined;
  const k = await requireVmlinux(t, vm);
  if (!k || !(await installStatic(t, vm, PROGRAM, UNAMER))) return undefined;
  await warmIndex(k.path);
  assert.deepEqual((await waitVmClean(vm, 60_000)).left, [], 'the VM is clean before the test');
  return { vm, k };
}

type Summary = {
  hits: Record<string, number>;
  kernelHits?: Record<string, number>;
  latency: Record<string, { count: number; log2: number[] }>;
  aggregated?: string;
  pids?: Record<string, Array<{ host: string; pid: number; hits: number }>>;
  keys: Record<string, Record<string, Array<{ value: number | string; hits: number }>>>;
};

test(
  'a kernel function traced streamed and aggregated in the kernel at once: equal counts per thread and per name, the program’s own count; nothing left',
  TIMEOUT,
  async (t) => {
    const ready = await prepare(t);
    if (!ready) return;
    const { vm, k } = ready;
    const flags = ['--json', '--by', 'comm', '--by', 'caller', ...vmCliFlags(vm)];
    const agg = startCli(t, ['trace', k.path, ...SPECS, '--aggregate', ...flags], kernelEnv(t));
    await waitAggregating(vm, agg);
    const defined = (await vmShell(vm, `cat ${T}/kprobe_events`)).out;
    assert.match(defined, /^p:\S+ __x64_sys_newuname\b/m, `the entry is a kprobe: ${defined}`);
    assert.match(defined, /^r\d*:\S+ __x64_sys_newuname\b/m, `the return is a kretprobe: ${defined}`);
    const streamed = startCli(t, ['trace', k.path, ...SPECS, ...flags], kernelEnv(t));
    await waitStreaming(vm, streamed);

    const program = runUnamer(vm);
    const pid = await program.pid;
    program.go();
    assert.equal(await program.done, CALLS, 'the program made every call');
    const returns = () => parseJsonOutput(streamed.stdout()).hits.filter((h) => h.kind === 'return' && h.tid === pid);
    const until = Date.now() + 120_000;
    while (returns().length < CALLS && Date.now() < until) await sleep(250);
    agg.child.kill('SIGINT');
    streamed.child.kill('SIGINT');
    const [a, s] = await Promise.all([agg.exit, streamed.exit]);
    assert.equal(a.code, 0, agg.stderr());
    assert.equal(s.code, 0, streamed.stderr());

    const sOut = parseJsonOutput(streamed.stdout());
    const aOut = parseJsonOutput(agg.stdout());
    assert.deepEqual(plainData(aOut.hits), [], 'an aggregating session prints no hits');
    const sSum = sOut.summary as unknown as Summary;
    const aSum = aOut.summary as unknown as Summary;
    assert.equal(aSum.aggregated, 'kernel', 'the aggregated figures say they come from the kernel');
    assert.equal(sSum.aggregated, undefined);

    const P = '__x64_sys_newuname';
    const R = `${P}_return`;
    assert.ok(aSum.pids?.[P] && aSum.pids[R], `the kernel's tables per thread: ${agg.stdout()}`);
    // The program's thread: the kernel's count, the streamed entries, and its own calls. Each shell the test's SSH
    // commands start calls uname once, and the one that runs the program does so before it execs it as the same
    // pid (so the pid counts CALLS + 1, its name CALLS); other shells' calls come while only one session was armed,
    // so they are compared as counts only.
    const mine = (kind: string) => sOut.hits.filter((h) => h.kind === kind && h.tid === pid);
    const kernelMine = aSum.pids![P].find((p) => p.pid === pid)?.hits;
    assert.equal(kernelMine, mine('entry').length, 'the kernel counts the program’s calls as the stream does, exactly');
    assert.ok(kernelMine! >= CALLS && kernelMine! <= CALLS + 1, `the program made ${CALLS} calls (+1 by its shell): ${kernelMine}`);
    assert.equal(aSum.pids![R].find((p) => p.pid === pid)?.hits, kernelMine, 'every call returned, in the kernel’s count');
    assert.equal(mine('return').length, kernelMine);
    // Each session's own figures agree with the kernel's profile (kprobe_profile): nothing unaccounted.
    for (const [who, sum] of [
      ['streamed', sSum],
      ['kernel', aSum],
    ] as const) {
      assert.equal(sum.kernelHits?.[P], sum.hits[P], `${who}: the hits equal kprobe_profile's count (${JSON.stringify(sum.kernelHits)})`);
      assert.equal((sum as { mismatch?: number }).mismatch, 0, `${who}: no mismatch`);
    }
    const name = PROGRAM.split('/').pop()!.slice(0, 15);
    const rowOf = (sum: Summary) => sum.keys[P].comm.find((r) => r.value === name)?.hits;
    assert.equal(rowOf(aSum), CALLS, 'the kernel’s count by task name: the program’s own calls');
    assert.equal(rowOf(sSum), CALLS, 'the stream’s count by task name');

    // By caller: every uname(2) enters through the system call table, from do_syscall_64 (6.1, x86-64). The stream
    // names it from the return address less the VM's KASLR offset; its own return probe, defined before its entry,
    // leaves the address in place. The aggregating session's entry is older than the streaming session's return
    // probe, whose trampoline then stands in the return address at its entry: the kernel's rows say so.
    type Rows = Array<{ value: number | string; hits: number }>;
    const callers = (sum: Summary) => sum.keys[P].caller as Rows;
    assert.deepEqual(callers(sSum), [{ value: SYSCALL_CALLER, hits: sSum.hits[P] }], 'streamed: the caller by name');
    assert.ok(
      mine('entry').every((h) => (h as { caller?: string }).caller === SYSCALL_CALLER),
      'each of the program’s hits says its caller',
    );
    assert.ok(
      callers(aSum).every((r) => r.value === SYSCALL_CALLER || r.value === HIDDEN_CALLER),
      `the kernel's rows: the caller, or hidden by the other session's return probe: ${JSON.stringify(callers(aSum))}`,
    );
    // The count trigger goes in before the key's: a shell's call between the two is a hit no row shows.
    const rowHits = callers(aSum).reduce((n, r) => n + r.hits, 0);
    assert.ok(rowHits >= kernelMine! && rowHits <= aSum.hits[P], `the program's calls have rows: ${rowHits} of ${aSum.hits[P]}`);

    const { left, ms } = await waitVmClean(vm, 60_000);
    assert.deepEqual(left, [], `left on the VM ${ms} ms after both CLIs exited`);
  },
);

test(
  'by caller in the kernel alone: the kernel names the system call table’s caller of every uname(2), as the stream does',
  TIMEOUT,
  async (t) => {
    const ready = await prepare(t);
    if (!ready) return;
    const { vm, k } = ready;
    const agg = startCli(t, ['trace', k.path, ...SPECS, '--aggregate', '--json', '--by', 'caller', ...vmCliFlags(vm)], kernelEnv(t));
    await waitAggregating(vm, agg);
    const program = runUnamer(vm);
    await program.pid;
    program.go();
    assert.equal(await program.done, CALLS);
    agg.child.kill('SIGINT');
    assert.equal((await agg.exit).code, 0, agg.stderr());
    const sum = parseJsonOutput(agg.stdout()).summary as unknown as Summary;
    const P = '__x64_sys_newuname';
    assert.ok(sum.hits[P] >= CALLS, `the program's calls counted: ${JSON.stringify(sum.hits)}`);
    // The count trigger goes in before the key's: a shell's call between the two is a hit no row shows.
    const rows = sum.keys[P].caller;
    assert.deepEqual(
      rows.map((r) => r.value),
      [SYSCALL_CALLER],
      `its own return probe hides no caller: ${JSON.stringify(rows)}`,
    );
    assert.ok(rows[0].hits >= CALLS && rows[0].hits <= sum.hits[P], `the program's calls are in it: ${rows[0].hits} of ${sum.hits[P]}`);
    const { left, ms } = await waitVmClean(vm, 60_000);
    assert.deepEqual(left, [], `left on the VM ${ms} ms after the CLI exited`);
  },
);

const THREADED = '/tmp/probelens-unamer-threads';
const THREADS = 3;
const PER_THREAD = 20;
/**
 * The program's threaded twin: prints its pid, waits for a byte on stdin, starts THREADS threads that each call
 * uname(2) PER_THREAD times and print their thread id, joins them, and prints how many calls worked.
 */
const THREADED_SOURCE = `#define _GNU_SOURCE
#include <pthread.h>
#include <stdio.h>
#include <sys/syscall.h>
#include <sys/utsname.h>
#include <unistd.h>
static int ok[${THREADS}];
static void *work(void *arg) {
  int *n = arg;
  struct utsname u;
  for (int i = 0; i < ${PER_THREAD}; i++) *n += uname(&u) == 0;
  flockfile(stdout);
  printf("tid %ld\\n", (long)syscall(SYS_gettid));
  funlockfile(stdout);
  return 0;
}
int main(void) {
  char go;
  pthread_t t[${THREADS}];
  int n = 0;
  printf("pid %d\\n", getpid());
  fflush(stdout);
  if (read(0, &go, 1) != 1) return 2;
  for (int i = 0; i < ${THREADS}; i++) pthread_create(&t[i], 0, work, &ok[i]);
  for (int i = 0; i < ${THREADS}; i++) pthread_join(t[i], 0), n += ok[i];
  printf("calls %d\\n", n);
  return 0;
}
`;

test(
  'by process and by thread: a threaded program’s calls counted per pid and per tid, the kernel’s rows equal to the stream’s (its exited threads’ process from saved_tgids)',
  TIMEOUT,
  async (t) => {
    const ready = await prepare(t);
    if (!ready) return;
    const { vm, k } = ready;
    assert.ok(await installStatic(t, vm, THREADED, THREADED_SOURCE), 'the threaded program is installed');
    const flags = ['--json', '--by', 'pid', '--by', 'tid', ...vmCliFlags(vm)];
    const agg = startCli(t, ['trace', k.path, ...SPECS, '--aggregate', ...flags], kernelEnv(t));
    await waitAggregating(vm, agg);
    const streamed = startCli(t, ['trace', k.path, ...SPECS, ...flags], kernelEnv(t));
    await waitStreaming(vm, streamed);
    const child = spawn('ssh', [...vmSshArgs(vm), '--', THREADED], { stdio: ['pipe', 'pipe', 'pipe'] });
    let out = '';
    child.stdout.setEncoding('utf8').on('data', (d: string) => (out += d));
    const closed = new Promise<void>((resolve) => child.once('close', () => resolve()));
    const until = Date.now() + 60_000;
    while (!/^pid \d+$/m.test(out) && Date.now() < until) await sleep(50);
    const pid = Number(/^pid (\d+)$/m.exec(out)?.[1]);
    assert.ok(pid > 0, `the program printed its pid: ${out}`);
    child.stdin.end('g');
    await closed;
    assert.match(out, new RegExp(`^calls ${THREADS * PER_THREAD}$`, 'm'), 'the program made every call');
    const tids = [...out.matchAll(/^tid (\d+)$/gm)].map((m) => Number(m[1]));
    assert.equal(tids.length, THREADS);
    const P = '__x64_sys_newuname';
    const mine = () => parseJsonOutput(streamed.stdout()).hits.filter((h) => h.kind === 'entry' && h.pid === pid).length;
    const deadline = Date.now() + 120_000;
    while (mine() < THREADS * PER_THREAD && Date.now() < deadline) await sleep(250);
    // Let the aggregating session's periodic reading see the threads after they exited: their process then comes
    // from the kernel's saved_tgids alone (/proc no longer has them).
    await sleep(2_500);
    agg.child.kill('SIGINT');
    streamed.child.kill('SIGINT');
    const [a, s] = await Promise.all([agg.exit, streamed.exit]);
    assert.equal(a.code, 0, agg.stderr());
    assert.equal(s.code, 0, streamed.stderr());
    const aSum = parseJsonOutput(agg.stdout()).summary as unknown as Summary;
    const sSum = parseJsonOutput(streamed.stdout()).summary as unknown as Summary;
    assert.equal(aSum.aggregated, 'kernel');
    const row = (sum: Summary, key: string, id: number) => sum.keys[P][key].find((r) => r.value === id)?.hits;
    for (const tid of tids) {
      assert.equal(row(sSum, 'tid', tid), PER_THREAD, `streamed: thread ${tid}'s calls`);
      assert.equal(row(aSum, 'tid', tid), PER_THREAD, `kernel: thread ${tid}'s calls`);
    }
    // The process: its threads' calls, and the shell's one call before it exec'd the program as the same pid.
    const sPid = row(sSum, 'pid', pid)!;
    assert.ok(sPid >= THREADS * PER_THREAD && sPid <= THREADS * PER_THREAD + 1, `streamed: the process's calls: ${sPid}`);
    assert.equal(
      row(aSum, 'pid', pid),
      sPid,
      `the kernel counts the process's calls as the stream does: ${JSON.stringify(aSum.keys[P].pid)}`,
    );
    assert.ok(
      tids.every((tid) => row(aSum, 'pid', tid) === undefined),
      'no thread of the program is counted as a process of its own',
    );
    const { left, ms } = await waitVmClean(vm, 60_000);
    assert.deepEqual(left, [], `left on the VM ${ms} ms after both CLIs exited`);
  },
);

const NAPPER = '/tmp/probelens-napper';
const NAPS = 20;
/** The sleep asked for: between 2^20 and 2^21 ns. */
const NAP_NS = 1_400_000;
const NAP_SPECS = ['__x64_sys_nanosleep', '__x64_sys_nanosleep%return'];
/**
 * Sleeps NAPS times for 1.4 ms by nanosleep(2) itself and prints how long each call took by its own clock
 * (CLOCK_MONOTONIC read just before and just after the system call), the oracle for the probes' latency: the session's
 * instance times with the same clock (`trace_clock` mono), so each call the probes time lies within the program's
 * timing of it and is at least the 1.4 ms asked for. How late the VM's emulated timer wakes a call varies from run to
 * run (milliseconds, on a loaded host), so each session is checked against its own run, never against the other's.
 */
const NAPPER_SOURCE = `#include <stdio.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>
static long long now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec * 1000000000LL + t.tv_nsec;
}
int main(void) {
  char go;
  int n = 0;
  long long took[${NAPS}];
  struct timespec ts = { 0, ${NAP_NS} };
  printf("pid %d\\n", getpid());
  fflush(stdout);
  if (read(0, &go, 1) != 1) return 2;
  for (int i = 0; i < ${NAPS}; i++) {
    long long t0 = now();
    n += syscall(SYS_nanosleep, &ts, 0) == 0;
    took[i] = now() - t0;
  }
  printf("took");
  for (int i = 0; i < ${NAPS}; i++) printf(" %lld", took[i]);
  printf("\\ncalls %d\\n", n);
  return 0;
}
`;

/** One session alone around one run of the napper: its summary, hits, the program's pid and its own timings. */
async function aloneAround(t: TestContext, vm: VmConnection, vmlinux: string, aggregate: boolean) {
  const cli = startCli(
    t,
    ['trace', vmlinux, ...NAP_SPECS, ...(aggregate ? ['--aggregate'] : []), '--json', ...vmCliFlags(vm)],
    kernelEnv(t),
  );
  if (aggregate) await waitAggregating(vm, cli);
  else await waitStreaming(vm, cli);
  const program = runUnamer(vm, NAPPER);
  const pid = await program.pid;
  program.go();
  assert.equal(await program.done, NAPS, 'the program made every call');
  const printed = await program.output;
  const took = (/^took((?: \d+)+)$/m.exec(printed)?.[1] ?? '').trim().split(' ').map(Number);
  assert.equal(took.length, NAPS, `the program timed every call: ${printed}`);
  if (aggregate) await sleep(2_500);
  else {
    const until = Date.now() + 120_000;
    const returns = () => parseJsonOutput(cli.stdout()).hits.filter((h) => h.kind === 'return' && h.tid === pid).length;
    while (returns() < NAPS && Date.now() < until) await sleep(250);
  }
  cli.child.kill('SIGINT');
  assert.equal((await cli.exit).code, 0, cli.stderr());
  const out = parseJsonOutput(cli.stdout());
  return { pid, took, hits: out.hits, summary: out.summary as unknown as Summary };
}

/** Calls per log2 bucket of latencies in ns. */
function buckets(ns: number[]): number[] {
  const b = new Array<number>(64).fill(0);
  for (const x of ns) b[log2Bucket(x)]++;
  return b;
}

test(
  'latency of a kernel function in the kernel and streamed, each session alone on a workload that times itself (nanosleep(2) of 1.4 ms): every call within the program’s own timing of it',
  TIMEOUT,
  async (t) => {
    const ready = await prepare(t);
    if (!ready) return;
    const { vm, k } = ready;
    assert.ok(await installStatic(t, vm, NAPPER, NAPPER_SOURCE), 'the napper is installed');
    // Each alone: two sessions on one function would each time the other's handlers too (their probes share the
    // entry and the return).
    const agg = await aloneAround(t, vm, k.path, true);
    const streamed = await aloneAround(t, vm, k.path, false);
    const P = '__x64_sys_nanosleep';

    // Streamed: the program's calls in order, each timed by the probes within the program's own timing of it and no
    // shorter than the sleep asked for (the clocks are one; 2 µs for reading it twice, and for the text stream's
    // timestamps, which are whole microseconds).
    const mine = streamed.hits
      .filter((h) => h.kind === 'return' && h.tid === streamed.pid)
      .map((h) => Number((h as { latencyNs?: number }).latencyNs));
    assert.equal(mine.length, NAPS, 'every call timed in the stream');
    mine.forEach((ns, i) =>
      assert.ok(
        ns >= NAP_NS - 2_000 && ns <= streamed.took[i] + 2_000,
        `call ${i}: the probes timed ${ns} ns, the program ${streamed.took[i]} ns (asked ${NAP_NS}): ${JSON.stringify(mine)} vs ${JSON.stringify(streamed.took)}`,
      ),
    );

    // In the kernel: only buckets. Every call of the program is in them (its count per pid), each no longer than the
    // program timed it, so at or below every bound at least as many calls as the program's own; and none shorter
    // than the sleep, so below 2^20 ns only other threads' calls. The kernel's calls are the program's but for the
    // calls of other threads it also timed (which may fall anywhere); a call is shorter to the probes than to the
    // program by the system call's entry and exit only, so it lies at most one bucket below the program's timing:
    // 2 calls of 20 may be more, were the VM's CPU taken away between the probe and the program's clock.
    const kernelMine = agg.summary.pids?.[P]?.find((p) => p.pid === agg.pid)?.hits ?? 0;
    assert.equal(kernelMine, NAPS, `the kernel counted the program's calls: ${JSON.stringify(agg.summary.pids)}`);
    const al = agg.summary.latency[P];
    const others = al.count - kernelMine;
    assert.ok(others >= 0, `the kernel timed the program's calls: ${al.count}`);
    const own = buckets(agg.took);
    const cum = (b: number[]) => (i: number) => b.slice(0, Math.max(0, i + 1)).reduce((x, y) => x + y, 0);
    const [co, ck] = [cum(own), cum(al.log2)];
    const seen = `program's own log2 ${JSON.stringify(own)} vs kernel log2 ${JSON.stringify(al.log2)} (${others} calls of other threads)`;
    assert.ok(ck(log2Bucket(NAP_NS) - 1) <= others, `no call of the program shorter than its sleep: ${seen}`);
    for (let i = 0; i < 64; i++) {
      assert.ok(co(i) <= ck(i), `bucket ${i}: no call longer to the probes than to the program: ${seen}`);
      assert.ok(ck(i) <= co(i + 1) + others + 2, `bucket ${i}: no call more than one bucket shorter: ${seen}`);
    }
    t.diagnostic(`streamed ${JSON.stringify(buckets(mine))}; program ${JSON.stringify(buckets(streamed.took))}`);
    t.diagnostic(seen);
    const { left, ms } = await waitVmClean(vm, 60_000);
    assert.deepEqual(left, [], `left on the VM ${ms} ms after both CLIs exited`);
  },
);

// Calls a kernel return probe misses are lost calls, said so: on the VM's one CPU, 24 processes sleep at once in
// hrtimer_nanosleep. With --maxactive 4 the kernel has 4 instances for 24 open calls and misses the rest
// (kprobe_profile's second column): the summary counts them as lost. With the default, each return probe has the
// kernel's most (4,096) and none is missed — the kernel's own default (one or ten on one CPU) would miss 14 or more.
import { test, type TestContext } from 'node:test';
import assert from 'node:assert/strict';
import { armOnVm, hits } from './kernelCli';
import { requireVm, vmShell, waitVmClean, type VmConnection } from '../helpers/vm';

const TIMEOUT = { timeout: 900_000 };
const SLEEPERS = 24;

interface Summary {
  hits: Record<string, number>;
  lost: number;
  missed?: Record<string, number>;
  mismatch: number;
}

/** Arms the two probes, runs the sleepers, stops: the CLI's JSON summary, its return hits and the definition line. */
async function sleepersTraced(
  t: TestContext,
  vm: VmConnection,
  extra: string[],
): Promise<{ summary: Summary; returns: number; def: string }> {
  const cli = await armOnVm(t, vm, 'kernel', ['hrtimer_nanosleep', 'hrtimer_nanosleep%return $retval'], extra);
  const def = (await vmShell(vm, 'cat /sys/kernel/tracing/kprobe_events')).out.split('\n').find((l) => /^r\d*:/.test(l)) ?? '';
  const run = await vmShell(vm, `i=0; while [ $i -lt ${SLEEPERS} ]; do sleep 2 & i=$((i + 1)); done; wait; echo done`);
  assert.equal(run.out.trim(), 'done', run.err);
  cli.child.kill('SIGINT');
  const { code } = await cli.exit;
  assert.equal(code, 0, cli.stderr());
  const line = cli
    .stdout()
    .split('\n')
    .find((l) => l.startsWith('{"summary"'));
  assert.ok(line, cli.stdout());
  const summary = (JSON.parse(line) as { summary: Summary }).summary;
  const returns = hits(cli).filter((h) => h.kind === 'return').length;
  const { left } = await waitVmClean(vm, 60_000);
  assert.deepEqual(left, [], 'nothing left on the VM');
  return { summary, returns, def };
}

test(
  `${SLEEPERS} calls open at once in a kernel function: misses beyond --maxactive are lost and said; the default misses none`,
  TIMEOUT,
  async (t) => {
    const vm = await requireVm(t);
    if (!vm) return;
    const few = await sleepersTraced(t, vm, ['--maxactive', '4']);
    assert.match(few.def, /^r4:\S+ hrtimer_nanosleep /, 'the return probe has the 4 instances asked for');
    const missed = Object.entries(few.summary.missed ?? {});
    assert.equal(missed.length, 1, `one probe missed calls: ${JSON.stringify(few.summary)}`);
    const [probe, n] = missed[0];
    assert.match(probe, /return/, 'the return probe is the one that missed');
    assert.ok(n >= SLEEPERS - 4, `at least ${SLEEPERS - 4} calls missed, got ${n}`);
    assert.ok(few.summary.lost >= n, `the misses are part of lost (${few.summary.lost})`);
    assert.equal(few.summary.mismatch, 0, 'and not a mismatch: they were never hits');
    t.diagnostic(`--maxactive 4: ${few.returns} returns received, ${n} missed, lost ${few.summary.lost}`);

    const all = await sleepersTraced(t, vm, []);
    assert.match(all.def, /^r4096:\S+ hrtimer_nanosleep /, "the kernel's most instances by default");
    assert.equal(all.summary.missed, undefined, `none missed: ${JSON.stringify(all.summary)}`);
    assert.equal(all.summary.lost, 0);
    assert.ok(all.returns >= SLEEPERS, `every sleeper's return received (${all.returns})`);
    t.diagnostic(`default: ${all.returns} returns received, none missed`);
  },
);

// Uprobes on a second real kernel: the VM test host (test/helpers/vm.ts, Debian 12's cloud kernel under TCG) reached
// over SSH exactly as a user's test machine is. Its tracefs README and event formats are another kernel version's,
// so the agent's feature detection, the definitions and the hit parser meet a kernel they were not written on. The VM
// is the tier's alone (tests run one at a time), so "nothing left" means nothing at all on its tracefs.
import { test, type TestContext } from 'node:test';
import assert from 'node:assert/strict';
import { release } from 'node:os';
import { SshTarget } from '../../src/core/target/ssh';
import { TracefsAgent } from '../../src/core/tracefs/agentClient';
import { isolatedEnv, scratch, startCli, sleep, type CliRun } from '../integration/engine-harness';
import { requireVm, vmCliFlags, vmLeftovers, vmShell, waitVmClean, type VmConnection } from '../helpers/vm';

const TIMEOUT = { timeout: 600_000 };
// The CLI starts from source and talks to an emulated machine on a loaded two-core host: generous, bounded.
const ARM_MS = 240_000;
/** Starts `probelens trace` against the VM and waits until its probes are armed. */
async function armOnVm(t: TestContext, vm: VmConnection, bin: string, spec: string, extra: string[] = []): Promise<CliRun> {
  // A test before this one that failed may have left its session cleaning up: wait for that, bounded.
  assert.deepEqual((await waitVmClean(vm, 60_000)).left, [], 'the VM is clean before the test');
  const cli = startCli(t, ['trace', bin, spec, ...extra, ...vmCliFlags(vm)], isolatedEnv(t));
  await cli.waitFor(/tracing \d+ probes? at \d+ sites? on /, ARM_MS);
  return cli;
}

/** Runs the fixture in the VM; returns the pid it ran as. */
async function runInVm(vm: VmConnection, bin: string): Promise<number> {
  const r = await vmShell(vm, `sh -c 'echo $$; exec "$0" 1 >/dev/null' ${bin}`);
  assert.equal(r.code, 0, r.err);
  return Number(r.out.split('\n')[0]);
}

test(
  'the VM is a second kernel: tracefs and debugfs mounted, and the agent reads its README (kprobes, hist, ustring)',
  TIMEOUT,
  async (t) => {
    const vm = await requireVm(t);
    if (!vm) return;
    assert.notEqual(vm.kernelRelease, release(), 'the VM runs another kernel than this machine');
    const r = await vmShell(vm, 'uname -r; cat /proc/mounts; wc -l < /sys/kernel/debug/kprobes/blacklist');
    const [uname, ...rest] = r.out.trim().split('\n');
    assert.equal(uname, vm.kernelRelease);
    assert.match(rest.join('\n'), /^tracefs \/sys\/kernel\/tracing tracefs /m);
    assert.match(rest.join('\n'), /^debugfs \/sys\/kernel\/debug debugfs /m);
    assert.ok(Number(rest[rest.length - 1]) > 100, `the kprobe blacklist is readable: ${rest[rest.length - 1]}`);

    const target = await SshTarget.connect({
      destination: `root@${vm.host}:${vm.port}`,
      identityFiles: [vm.identityFile],
      knownHostsFile: vm.knownHostsFile,
      configFile: null,
      agentSocket: null,
      home: scratch(t),
      connectTimeoutMs: 60_000,
    });
    t.after(() => target.close());
    const agent = await TracefsAgent.start(target);
    for (const cap of ['uprobe_events', 'kprobe_events', 'dynamic_events', 'ustring', 'return_suffix', 'hist', 'instances', 'error_log']) {
      assert.ok(agent.hello.caps.has(cap), `the VM kernel's README/tracefs offers ${cap}: ${[...agent.hello.caps].join(',')}`);
    }
    await agent.stop();
    assert.deepEqual(await vmLeftovers(vm), [], 'the agent removed its instance at stop');
  },
);

test(
  'trace over SSH to the VM: add_ints a b captures 3 and -7 with the pid the program ran as; after Ctrl-C nothing is left',
  TIMEOUT,
  async (t) => {
    const vm = await requireVm(t);
    if (!vm) return;
    const bin = vm.fixtures['calls-O2'];
    const cli = await armOnVm(t, vm, bin, 'add_ints a b');
    const pids = [await runInVm(vm, bin), await runInVm(vm, bin)];
    // Two runs, one hit each (`TS HOST COMM-PID/TID add_ints a=3 b=-7`); wait (bounded) for both to arrive.
    const hitLines = () =>
      cli
        .stdout()
        .split('\n')
        .filter((l) => / add_ints /.test(l));
    const until = Date.now() + 60_000;
    while (hitLines().length < 2 && Date.now() < until) await sleep(250);
    cli.child.kill('SIGINT');
    await cli.exit;
    assert.deepEqual(
      hitLines().map((l) => / \S+-(\d+)\/\d+ (add_ints a=\S+ b=\S+)$/.exec(l)?.slice(1)),
      pids.map((pid) => [String(pid), 'add_ints a=3 b=-7']),
      cli.stdout(),
    );
    // Whatever the stop reported, the agent's cleanup ran: nothing of the session is left on the VM.
    const { left, ms } = await waitVmClean(vm, 60_000);
    assert.deepEqual(left, [], `left on the VM ${ms} ms after the CLI exited`);
  },
);

test('kill -9 of the client with 100 probes armed on the VM: the VM holds no probe, instance or reader afterwards', TIMEOUT, async (t) => {
  const vm = await requireVm(t);
  if (!vm) return;
  const bin = vm.fixtures['many-O2'];
  const cli = await armOnVm(t, vm, bin, 'many_* x');
  const armed = await vmLeftovers(vm);
  assert.equal(armed.filter((l) => /^p:/.test(l)).length, 100, 'all 100 definitions are in the VM uprobe_events');
  assert.ok(
    armed.some((l) => l.startsWith('instance ')),
    'a private instance exists',
  );
  await runInVm(vm, bin);
  await cli.waitFor(/ many_042 x=0$/m, 60_000, 'stdout');
  cli.child.kill('SIGKILL');
  await cli.exit;
  // The agent notices its channel closing and cleans up; on an emulated CPU that takes longer than locally.
  const { left, ms } = await waitVmClean(vm, 60_000);
  assert.deepEqual(left, [], `left on the VM after ${ms} ms`);
  t.diagnostic(`VM clean ${ms} ms after kill -9 of the client`);
});

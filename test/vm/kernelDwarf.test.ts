// The VM kernel read from its own DWARF: the `-dbg` package's vmlinux (test/helpers/vmImage.ts vmDebugKernel) is the
// booted kernel's build (same GNU build-id as its /sys/kernel/notes), and `probelens trace VMLINUX SPEC…` over SSH
// compiles kprobes from it (SYMBOL+OFFSET, arguments typed by DWARF, a user string read from user memory) that
// capture a program's own open() calls in the VM; what the kernel must not probe, and a vmlinux of another build, are
// refused before anything is written.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { closeSync, copyFileSync, openSync, readSync, statSync, writeSync } from 'node:fs';
import { join } from 'node:path';
import { readBinaryIdentity } from '../../src/core/index/identity';
import { parseJsonOutput, scratch, sleep, startCli } from '../integration/engine-harness';
import { armOnVm, expectOpensCaptured, installOpener, kernelEnv, OPENS, startOpener, warmIndex } from './kernelCli';
import { requireVm, requireVmlinux, vmCliFlags, vmKernelBuildId, vmLeftovers, vmShell, waitVmClean } from '../helpers/vm';
import { plainData } from '../helpers/plain';

const TIMEOUT = { timeout: 900_000 };

test("the dbg package's vmlinux is the VM kernel's build: same GNU build-id as its /sys/kernel/notes", TIMEOUT, async (t) => {
  const vm = await requireVm(t);
  if (!vm) return;
  const k = await requireVmlinux(t, vm);
  if (!k) return;
  assert.match(k.buildId, /^[0-9a-f]{40}$/);
  assert.equal(k.buildId, await vmKernelBuildId(vm));
  assert.ok(statSync(k.path).size > 300 << 20, `${k.path} is the full image with DWARF`);
});

test(
  'trace VMLINUX do_sys_openat2 dfd filename:ustring how->flags and its %return $retval: the program opens a known path 3 times and each open is seen with its pid, values and fd',
  TIMEOUT,
  async (t) => {
    const vm = await requireVm(t);
    if (!vm) return;
    const k = await requireVmlinux(t, vm);
    if (!k || !(await installOpener(t, vm))) return;
    const opener = startOpener(vm);
    t.after(() => opener.kill());
    const pid = await opener.pid;
    t.diagnostic(`the opener runs as pid ${pid} in the VM`);
    const cli = await armOnVm(
      t,
      vm,
      k.path,
      ['do_sys_openat2 dfd filename:ustring how->flags', 'do_sys_openat2%return $retval'],
      ['--pid', String(pid)],
    );
    const defined = (await vmShell(vm, 'cat /sys/kernel/tracing/kprobe_events')).out;
    assert.match(defined, /^p:\S+ do_sys_openat2 .*dfd=%di:s32 filename=\+u0\(%si\):ustring .*how_flags=\+0\(%dx\):u64/m, defined);
    assert.match(defined, /^r\d*:\S+ do_sys_openat2 .*retval=\$retval:s64/m, defined);
    await expectOpensCaptured(cli, opener, pid);
    assert.match(cli.stderr(), /^probelens: do_sys_openat2: from vmlinux DWARF$/m, cli.stderr());
    const { left, ms } = await waitVmClean(vm, 60_000);
    assert.deepEqual(left, [], `left on the VM ${ms} ms after the CLI exited`);
  },
);

test(
  'a kernel source line (fs/open.c:1326, fd_install in do_sys_openat2) with its variables: each of the program’s opens is seen once there, with the fd it got',
  TIMEOUT,
  async (t) => {
    const vm = await requireVm(t);
    if (!vm) return;
    const k = await requireVmlinux(t, vm);
    if (!k || !(await installOpener(t, vm))) return;
    const opener = startOpener(vm);
    t.after(() => opener.kill());
    const pid = await opener.pid;
    // The VM kernel's 6.1 fs/open.c: line 1326 is `fd_install(fd, f);`, reached once per open that succeeded.
    const cli = await armOnVm(t, vm, k.path, ['fs/open.c:1326 fd f'], ['--pid', String(pid)]);
    const defined = (await vmShell(vm, 'cat /sys/kernel/tracing/kprobe_events')).out;
    // perf probe -k VMLINUX -D 'fs/open.c:1326 fd f' on this vmlinux: do_sys_openat2+290 fd=%bx:s32 f=%bp:x64.
    assert.match(defined, /^p:\S+ do_sys_openat2\+290 .*\bfd=%bx:s32 f=%bp:x64\b/m, defined);
    opener.go();
    const fds = await opener.done;
    assert.equal(fds.length, OPENS);
    const mine = () => parseJsonOutput(cli.stdout()).hits.filter((h) => h.pid === pid) as Array<{ args: Record<string, unknown> }>;
    const until = Date.now() + 120_000;
    while (mine().length < OPENS && Date.now() < until) await sleep(250);
    cli.child.kill('SIGINT');
    assert.equal((await cli.exit).code, 0, cli.stderr());
    const hits = mine();
    assert.deepEqual(
      plainData(hits.map((h) => h.args.fd)),
      fds,
      `the line ran once per open, with the fd each open returned: ${JSON.stringify(hits.map((h) => h.args))}`,
    );
    assert.ok(
      hits.every((h) => /^0xffff[0-9a-f]{12}$/.test(String(h.args.f))),
      'f is a kernel pointer to the open file',
    );
    const { left, ms } = await waitVmClean(vm, 60_000);
    assert.deepEqual(left, [], `left on the VM ${ms} ms after the CLI exited`);
  },
);

test('a blacklisted and a notrace kernel function are refused with the reason before anything is written to the VM', TIMEOUT, async (t) => {
  const vm = await requireVm(t);
  if (!vm) return;
  const k = await requireVmlinux(t, vm);
  if (!k) return;
  for (const [spec, why] of [
    ['do_int3', /do_int3 is on the kernel's kprobe blacklist/],
    ['trace_clock_local', /trace_clock_local does not call __fentry__ at its start: it is notrace/],
    ['exc_int3', /exc_int3\+0 is in \.noinstr\.text/],
  ] as const) {
    await warmIndex(k.path);
    assert.deepEqual((await waitVmClean(vm, 60_000)).left, [], 'the VM is clean before the test');
    const cli = startCli(t, ['trace', k.path, spec, ...vmCliFlags(vm)], kernelEnv(t));
    const { code } = await cli.exit;
    assert.notEqual(code, 0);
    assert.match(cli.stderr(), why);
    assert.equal((await vmShell(vm, 'cat /sys/kernel/tracing/kprobe_events')).out, '', `${spec}: nothing was written`);
    assert.deepEqual(await vmLeftovers(vm), []);
  }
  // The VM's own blacklist agrees.
  const listed = (await vmShell(vm, 'cat /sys/kernel/debug/kprobes/blacklist')).out;
  assert.match(listed, /\tdo_int3$/m);
});

test('kill -9 of a client tracing kernel functions: the VM holds no kprobe, uprobe, instance or reader afterwards', TIMEOUT, async (t) => {
  const vm = await requireVm(t);
  if (!vm) return;
  const k = await requireVmlinux(t, vm);
  if (!k) return;
  const cli = await armOnVm(t, vm, k.path, ['do_sys_openat2 dfd', 'do_sys_openat2%return $retval'], ['--pid', '1']);
  assert.match((await vmShell(vm, 'cat /sys/kernel/tracing/kprobe_events')).out, /do_sys_openat2/);
  cli.child.kill('SIGKILL');
  await cli.exit;
  const { left, ms } = await waitVmClean(vm, 60_000);
  assert.deepEqual(left, [], `left on the VM after ${ms} ms`);
  t.diagnostic(`VM clean ${ms} ms after kill -9 of the client`);
});

test(
  'a vmlinux of another build than the running kernel is refused naming both build-ids, before any probe is written',
  TIMEOUT,
  async (t) => {
    const vm = await requireVm(t);
    if (!vm) return;
    const k = await requireVmlinux(t, vm);
    if (!k) return;
    // The same kernel with another build-id: a copy with one byte of its GNU build-id changed.
    const id = readBinaryIdentity(k.path);
    const other = join(scratch(t, 'pl-other-vmlinux-'), 'vmlinux-other');
    copyFileSync(k.path, other);
    const fd = openSync(other, 'r+');
    const b = Buffer.alloc(1);
    readSync(fd, b, 0, 1, id.buildIdOffset!);
    b[0] ^= 0xff;
    writeSync(fd, b, 0, 1, id.buildIdOffset!);
    closeSync(fd);
    const otherId = readBinaryIdentity(other).buildId!;
    assert.notEqual(otherId, k.buildId);
    assert.deepEqual((await waitVmClean(vm, 60_000)).left, [], 'the VM is clean before the test');
    const cli = startCli(t, ['trace', other, 'do_sys_openat2 dfd', ...vmCliFlags(vm)], kernelEnv(t));
    const { code } = await cli.exit;
    assert.notEqual(code, 0);
    // One sentence naming both builds, nothing nested in it.
    const sentence =
      `differs from the local vmlinux (/sys/kernel/notes: the running kernel's build-id is ${k.buildId}, ${other} is build ${otherId}): ` +
      'use the vmlinux of the kernel it runs, or pass --no-build-id-check';
    assert.match(cli.stderr(), new RegExp(`(^|\\s)kernel on \\S+ ${escapeRegExp(sentence)}$`, 'm'), cli.stderr());
    assert.equal((await vmShell(vm, 'cat /sys/kernel/tracing/kprobe_events')).out, '', 'nothing was written');
    const { left } = await waitVmClean(vm, 60_000);
    assert.deepEqual(left, []);
  },
);

const escapeRegExp = (text: string): string => text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');

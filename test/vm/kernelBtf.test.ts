// The VM kernel with no vmlinux at all: `probelens trace kernel SPEC…` over SSH reads the VM's own BTF
// (/sys/kernel/btf/vmlinux), /proc/kallsyms and kprobe blacklist, and compiles kprobes by name with arguments by
// `$argN` typed by the BTF; they capture a program's own open() calls in the VM with its pid, the path it opened and
// each fd it got, and the CLI says the BTF was the source. A blacklisted function and a name kallsyms does not list
// are refused before anything is written.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { startCli } from '../integration/engine-harness';
import { armOnVm, expectOpensCaptured, installOpener, kernelEnv, startOpener } from './kernelCli';
import { requireVm, vmCliFlags, vmLeftovers, vmShell, waitVmClean } from '../helpers/vm';

const TIMEOUT = { timeout: 900_000 };

test(
  'trace kernel do_sys_openat2 dfd filename:ustring how->flags and its %return $retval, from the BTF: each open of a known path is seen with its pid, values and fd',
  TIMEOUT,
  async (t) => {
    const vm = await requireVm(t);
    if (!vm) return;
    assert.equal((await vmShell(vm, 'test -r /sys/kernel/btf/vmlinux && echo yes')).out.trim(), 'yes', 'the VM kernel exports its BTF');
    if (!(await installOpener(t, vm))) return;
    const opener = startOpener(vm);
    // A failed assertion must not leave the opener (and so this process) waiting.
    t.after(() => opener.kill());
    const pid = await opener.pid;
    t.diagnostic(`the opener runs as pid ${pid} in the VM`);
    const cli = await armOnVm(
      t,
      vm,
      'kernel',
      ['do_sys_openat2 dfd filename:ustring how->flags', 'do_sys_openat2%return $retval'],
      ['--pid', String(pid)],
    );
    const defined = (await vmShell(vm, 'cat /sys/kernel/tracing/kprobe_events')).out;
    // By name, arguments by the kernel's calling-convention accessors (no register names, no offsets: no DWARF).
    const entryLine = defined.split('\n').find((l) => /^p:\S+ do_sys_openat2 /.test(l)) ?? '';
    for (const arg of [' dfd=$arg1:s32 ', ' filename=+0($arg2):ustring ', ' how_flags=+0($arg3):u64 '])
      assert.ok(entryLine.includes(arg), `${arg} in ${defined}`);
    assert.match(defined, /^r\d*:\S+ do_sys_openat2 .*retval=\$retval:s64/m, defined);
    await expectOpensCaptured(cli, opener, pid);
    assert.match(
      cli.stderr(),
      /^probelens: do_sys_openat2: from the target's BTF and kallsyms \(no vmlinux\); one entry site/m,
      cli.stderr(),
    );
    const { left, ms } = await waitVmClean(vm, 60_000);
    assert.deepEqual(left, [], `left on the VM ${ms} ms after the CLI exited`);
  },
);

test(
  'trace kernel: a blacklisted function, a notrace one and a name not in kallsyms are refused with the reason before anything is written',
  TIMEOUT,
  async (t) => {
    const vm = await requireVm(t);
    if (!vm) return;
    // The VM's own blacklist lists do_int3 (NOKPROBE_SYMBOL): the refusal comes from reading it, not from the kernel.
    assert.match((await vmShell(vm, 'cat /sys/kernel/debug/kprobes/blacklist')).out, /\tdo_int3$/m);
    for (const [spec, why] of [
      ['do_int3', /do_int3 is on the kernel's kprobe blacklist/],
      ['trace_clock_local', /trace_clock_local is not in the kernel's available_filter_functions: it is notrace/],
      ['no_such_function_pl dfd', /no_such_function_pl is not in the target's \/proc\/kallsyms/],
      ['do_sys_openat2 nope', /no parameter nope \(the function has dfd, filename, how\)/],
    ] as const) {
      assert.deepEqual((await waitVmClean(vm, 60_000)).left, [], 'the VM is clean before the test');
      const cli = startCli(t, ['trace', 'kernel', spec, ...vmCliFlags(vm)], kernelEnv(t));
      const { code } = await cli.exit;
      assert.notEqual(code, 0);
      assert.match(cli.stderr(), why);
      assert.equal((await vmShell(vm, 'cat /sys/kernel/tracing/kprobe_events')).out, '', `${spec}: nothing was written`);
      assert.deepEqual(await vmLeftovers(vm), []);
    }
  },
);

test(
  'define kernel --host: the definitions compiled from the VM kernel BTF and kallsyms, with nothing written there',
  TIMEOUT,
  async (t) => {
    const vm = await requireVm(t);
    if (!vm) return;
    const cli = startCli(t, ['define', 'kernel', 'do_sys_openat2 dfd how->flags', '--json', ...vmCliFlags(vm)], kernelEnv(t));
    const { code } = await cli.exit;
    assert.equal(code, 0, cli.stderr());
    const [p] = JSON.parse(cli.stdout()) as Array<{ definition: string; source: string }>;
    assert.equal(p.source, 'btf');
    assert.match(p.definition, /^p:\S+\/do_sys_openat2 do_sys_openat2 dfd=\$arg1:s32 how_flags=\+0\(\$arg3\):u64 /);
    assert.match(cli.stderr(), /do_sys_openat2: from the target's BTF and kallsyms \(no vmlinux\)/);
    assert.equal((await vmShell(vm, 'cat /sys/kernel/tracing/kprobe_events')).out, '', 'define writes nothing');
  },
);

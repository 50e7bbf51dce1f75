// Reading a running kernel's BTF, kallsyms and kprobe blacklist from a target by fixed `cat FILE` execs
// (src/core/session/runningKernel.ts): this machine's own, and a target where they cannot be read.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { PassThrough } from 'node:stream';
import { once } from 'node:events';
import { LocalTarget } from '../../../../src/core/target/local';
import type { ExecChannel, Target } from '../../../../src/core/target/target';
import { fetchRunningKernel, KERNEL_BTF, readTargetFile, RunningKernelError } from '../../../../src/core/session/runningKernel';
import { missing } from '../../../helpers/require';

test("this machine's running kernel: its BTF types do_sys_openat2 and kallsyms lists it once as a function", async (t) => {
  if (!existsSync(KERNEL_BTF)) return missing(t, `${KERNEL_BTF} (a kernel with CONFIG_DEBUG_INFO_BTF)`);
  const k = await fetchRunningKernel(new LocalTarget());
  assert.equal(k.btf.funcs('do_sys_openat2').length, 1);
  const syms = k.kallsyms?.get('do_sys_openat2') ?? [];
  assert.equal(syms.filter((s) => s.type === 't' || s.type === 'T').length, 1);
  // The blacklist is read where debugfs is mounted and readable; elsewhere why not is kept.
  assert.ok(k.blacklist instanceof Set || /blacklist/.test(k.blacklist.unreadable));
  // So are the functions ftrace can trace, where tracefs is mounted.
  if (k.traceable) assert.ok(k.traceable.has('do_sys_openat2'));
});

/** A target whose every exec prints `stderr` and exits 1 (the argv is recorded). */
function failingTarget(stderr: string, seen: string[][]): Target {
  return {
    host: 'fake',
    describe: () => 'fake',
    close: async () => undefined,
    exec: async (argv) => {
      seen.push([...argv]);
      const stdout = new PassThrough();
      const err = new PassThrough();
      const ch: ExecChannel = {
        stdin: new PassThrough(),
        stdout,
        stderr: err,
        exit: Promise.all([once(stdout, 'end'), once(err, 'end')]).then(() => ({ code: 1, signal: null })),
        kill: () => undefined,
      };
      err.end(stderr);
      stdout.end();
      return ch;
    },
  };
}

test('a kernel without BTF is refused naming the file and what to do; only fixed argv is run', async () => {
  const seen: string[][] = [];
  await assert.rejects(
    fetchRunningKernel(failingTarget('cat: /sys/kernel/btf/vmlinux: No such file or directory\n', seen)),
    (e: Error) =>
      e instanceof RunningKernelError &&
      /cannot read the kernel's BTF on fake \(\/sys\/kernel\/btf\/vmlinux: cat: .*No such file or directory\).*CONFIG_DEBUG_INFO_BTF.*instead of 'kernel'/.test(
        e.message,
      ),
  );
  assert.deepEqual(seen.sort(), [
    ['cat', '/proc/kallsyms'],
    ['cat', '/sys/kernel/btf/vmlinux'],
    ['cat', '/sys/kernel/debug/kprobes/blacklist'],
    ['cat', '/sys/kernel/debug/tracing/available_filter_functions'],
    ['cat', '/sys/kernel/tracing/available_filter_functions'],
  ]);
  assert.deepEqual(await readTargetFile(failingTarget('', []), '/x'), { error: 'cat /x exited with 1' });
});

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
import { BtfBuilder } from '../../../helpers/btfBuilder';

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

/** A target serving `files` to `cat FILE` (exit 1 for any other), recording each argv. */
function filesTarget(files: Map<string, Buffer>, seen: string[][]): Target {
  return {
    host: 'fake',
    describe: () => 'fake',
    close: async () => undefined,
    exec: async (argv) => {
      seen.push([...argv]);
      const stdout = new PassThrough();
      const err = new PassThrough();
      const body = argv[0] === 'cat' ? files.get(argv[1]) : undefined;
      const ch: ExecChannel = {
        stdin: new PassThrough(),
        stdout,
        stderr: err,
        exit: Promise.all([once(stdout, 'end'), once(err, 'end')]).then(() => ({ code: body ? 0 : 1, signal: null })),
        kill: () => undefined,
      };
      err.end(body ? '' : `cat: ${argv[1]}: No such file or directory\n`);
      stdout.end(body ?? '');
      return ch;
    },
  };
}

test("a module's split BTF is read only for the modules the specs need (MODULE:FUNC, or a name kallsyms has only in a module), against the kernel's", async () => {
  const base = new BtfBuilder();
  const int = base.int('int', 4, true);
  base.func('sock_create', base.proto(int, [['family', int]]));
  const mod = new BtfBuilder(base);
  mod.func('pfkey_create', mod.proto(int, [['protocol', int]]));
  mod.func('pfkey_release', mod.proto(int, [['how', int]]));
  const files = new Map<string, Buffer>([
    ['/sys/kernel/btf/vmlinux', Buffer.from(base.bytes())],
    ['/sys/kernel/btf/af_key', Buffer.from(mod.bytes())],
    [
      '/proc/kallsyms',
      Buffer.from(
        [
          'ffffffff81000000 T sock_create',
          'ffffffffc0001000 t pfkey_create\t[af_key]',
          'ffffffffc0002000 t pfkey_release\t[af_key]',
          'ffffffffc0100000 t vsock_create\t[vsock]',
        ].join('\n'),
      ),
    ],
  ]);
  const seen: string[][] = [];
  const k = await fetchRunningKernel(filesTarget(files, seen), false, [
    'af_key:pfkey_create protocol',
    'pfkey_release',
    'sock_create',
    'nope:x',
  ]);
  const btfReads = seen.filter((a) => a[1].startsWith('/sys/kernel/btf/')).map((a) => a[1]);
  assert.deepEqual(btfReads.sort(), ['/sys/kernel/btf/af_key', '/sys/kernel/btf/vmlinux'], 'af_key once, vsock and nope not at all');
  const afKey = k.modules?.get('af_key');
  assert.ok(afKey && !('unreadable' in afKey));
  assert.equal(afKey.funcs('pfkey_create').length, 1);
  assert.equal(afKey.typeName(int), 'int', "the kernel's types through the module's BTF");
  // A loaded module whose BTF cannot be read is kept with the reason (compiling refuses its functions with it).
  const seen2: string[][] = [];
  files.delete('/sys/kernel/btf/af_key');
  const k2 = await fetchRunningKernel(filesTarget(files, seen2), false, ['af_key:pfkey_create']);
  assert.match((k2.modules?.get('af_key') as { unreadable: string }).unreadable, /\/sys\/kernel\/btf\/af_key: cat: .*No such file/);
});

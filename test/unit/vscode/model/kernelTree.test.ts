import assert from 'node:assert/strict';
import { test } from 'node:test';
import { Btf } from '../../../../src/core/binary/btf';
import { parseFilterFunctions, parseKallsyms, parseKprobeBlacklist, type RunningKernel } from '../../../../src/core/probes/kernelBtf';
import { cDefinitions } from '../../../../src/vscode/model/cDefinitions';
import { btfLenses, kernelFunctionStatus, kernelRow } from '../../../../src/vscode/model/kernelTree';
import { BtfBuilder } from '../../../helpers/btfBuilder';

function kernel(): RunningKernel {
  const b = new BtfBuilder();
  const int = b.int('int', 4, true);
  const long = b.int('long', 8, true);
  const charp = b.ptr(b.int('char', 1, true, { char: true }));
  for (const name of ['do_sys_openat2', 'dup_static', 'do_int3', 'not_traced', '__x64_sys_openat', 'bpf_only'])
    b.func(
      name,
      b.proto(long, [
        ['dfd', int],
        ['filename', charp],
      ]),
    );
  return {
    btf: Btf.parse(b.bytes()),
    kallsyms: parseKallsyms(
      [
        'ffffffff81234560 T do_sys_openat2',
        'ffffffff81200000 t dup_static',
        'ffffffff81300000 t dup_static',
        'ffffffff81100000 t do_int3',
        'ffffffff81100100 t not_traced',
        'ffffffff81100200 T __x64_sys_openat',
        'ffffffff81100300 t only_in_kallsyms',
      ].join('\n'),
    ),
    blacklist: parseKprobeBlacklist('0xffffffff81100000-0xffffffff81100080\tdo_int3'),
    traceable: parseFilterFunctions(['do_sys_openat2', 'dup_static', 'do_int3', '__x64_sys_openat'].join('\n')),
  };
}

const SRC = [
  'static long do_sys_openat2(int dfd, const char __user *filename,',
  '\t\t\t   struct open_how *how)',
  '{',
  '}',
  'static int dup_static(void)',
  '{',
  '}',
  'int do_int3(void)',
  '{',
  '}',
  'void not_traced(void)',
  '{',
  '}',
  'static inline int inlined_everywhere(void)',
  '{',
  '}',
  'int only_in_kallsyms(void)',
  '{',
  '}',
  'SYSCALL_DEFINE3(openat, int, dfd, const char __user *, filename, int, flags)',
  '{',
  '}',
].join('\n');

test("lenses above the functions the target's kernel has, saying BTF; the CLI's refusals as reasons; nothing for unknown names", () => {
  const k = kernel();
  const lenses = btfLenses(cDefinitions(SRC), (s) => kernelFunctionStatus(k, s), { trace: true, returns: true, latency: true });
  assert.deepEqual(
    lenses.map((l) => [l.line, l.kind, l.title, l.specs]),
    [
      [1, 'trace', 'Trace · BTF + kallsyms, no vmlinux', ['do_sys_openat2 $params']],
      [1, 'returns', 'Trace returns', ['do_sys_openat2%return $retval']],
      [1, 'latency', 'Latency', ['do_sys_openat2', 'do_sys_openat2%return']],
      [5, 'unprobeable', '$(circle-slash) dup_static: not probe-able without a vmlinux', []],
      [8, 'unprobeable', '$(circle-slash) do_int3: not probe-able without a vmlinux', []],
      [11, 'unprobeable', '$(circle-slash) not_traced: not probe-able without a vmlinux', []],
      [20, 'trace', 'Trace · BTF + kallsyms, no vmlinux', ['__x64_sys_openat $params']],
      [20, 'returns', 'Trace returns', ['__x64_sys_openat%return $retval']],
      [20, 'latency', 'Latency', ['__x64_sys_openat', '__x64_sys_openat%return']],
    ],
  );
  const reasons = lenses.filter((l) => l.reason).map((l) => l.reason ?? '');
  assert.match(reasons[0], /^dup_static names 2 functions in the target's \/proc\/kallsyms \(0xffffffff81200000, 0xffffffff81300000\)/);
  assert.match(reasons[1], /^do_int3 is on the kernel's kprobe blacklist/);
  assert.match(reasons[2], /^not_traced is not in the kernel's available_filter_functions: it is notrace/);
});

test('a traced lens says its count, state and BTF', () => {
  const k = kernel();
  const lenses = btfLenses(
    cDefinitions(SRC),
    (s) => kernelFunctionStatus(k, s),
    { trace: true, returns: false, latency: false },
    (specs) => (specs[0] === 'do_sys_openat2 $params' ? { state: 'armed', hits: 1234, kernelSource: 'btf' } : undefined),
  );
  assert.equal(lenses[0].title, '$(pulse) Trace: 1,234 hits · armed · BTF + kallsyms, no vmlinux');
});

test("the Probes view's kernel row: matching, differing, BTF, unreadable", () => {
  const read = { state: 'read', release: '6.1.0-56-cloud-amd64', buildId: 'ab12' } as const;
  assert.deepEqual(kernelRow(read, { vmlinux: { name: 'vmlinux', buildId: 'ab12' } }), {
    label: 'kernel 6.1.0-56-cloud-amd64',
    description: 'build-id matches vmlinux',
    ok: true,
  });
  assert.equal(
    kernelRow(read, { vmlinux: { name: 'vmlinux', buildId: 'cd34' } }).description,
    'build-id differs: running ab12, vmlinux cd34',
  );
  assert.equal(kernelRow(read, { btf: true }).description, 'no vmlinux: BTF and kallsyms');
  assert.equal(kernelRow({ ...read, btfError: 'its BTF cannot be read' }, { btf: true }).description, 'no vmlinux: its BTF cannot be read');
  assert.deepEqual(kernelRow({ state: 'failed', error: 'ssh: connection refused' }, { btf: true }), {
    label: 'kernel',
    description: 'cannot be read: ssh: connection refused',
    ok: false,
  });
});

// Shared by the kprobe tests on the VM: the definitions for do_sys_openat2 built by src/core/probes/kprobe.ts from
// the function's parameters, and an SSH connection to the tier's VM.
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { kprobeArgs, kprobeDefinition, type KernelParam } from '../../src/core/probes/kprobe';
import { SshTarget } from '../../src/core/target/ssh';
import type { VmConnection } from '../helpers/vm';

/**
 * `long do_sys_openat2(int dfd, const char __user *filename, struct open_how *how)` (fs/open.c) with
 * `struct open_how { __u64 flags; __u64 mode; __u64 resolve; }` (include/uapi/linux/openat2.h), written out by
 * hand: reading them from the dbg vmlinux's DWARF is the next step.
 */
export const DO_SYS_OPENAT2: KernelParam[] = [
  { name: 'dfd', index: 0, type: { kind: 'int', size: 4, signed: true } },
  { name: 'filename', index: 1, type: { kind: 'pointer', size: 8, user: true, to: { kind: 'int', size: 1, signed: true } } },
  {
    name: 'how',
    index: 2,
    type: {
      kind: 'pointer',
      size: 8,
      user: false,
      to: {
        kind: 'struct',
        name: 'open_how',
        members: [
          { name: 'flags', offset: 0, type: { kind: 'int', size: 8, signed: false } },
          { name: 'mode', offset: 8, type: { kind: 'int', size: 8, signed: false } },
          { name: 'resolve', offset: 16, type: { kind: 'int', size: 8, signed: false } },
        ],
      },
    },
  },
];

/** `do_sys_openat2 dfd filename:ustring how->flags` and `do_sys_openat2%return $retval` for `group`. */
export function openat2Definitions(group: string): { entry: string; ret: string; entryFields: string[]; retFields: string[] } {
  const entryArgs = kprobeArgs(DO_SYS_OPENAT2, ['dfd', 'filename:ustring', 'how->flags:x64'], 'entry');
  const retArgs = kprobeArgs(DO_SYS_OPENAT2, ['$retval'], 'return');
  return {
    entry: kprobeDefinition({ group, event: 'openat2', symbol: 'do_sys_openat2', offset: 0n, kind: 'entry', args: entryArgs }),
    ret: kprobeDefinition({ group, event: 'openat2_ret', symbol: 'do_sys_openat2', offset: 0n, kind: 'return', args: retArgs }),
    entryFields: entryArgs.map((a) => a.name),
    retFields: retArgs.map((a) => a.name),
  };
}

export function connectVm(vm: VmConnection): Promise<SshTarget> {
  return SshTarget.connect({
    destination: `root@${vm.host}:${vm.port}`,
    identityFiles: [vm.identityFile],
    knownHostsFile: vm.knownHostsFile,
    configFile: null,
    agentSocket: null,
    home: mkdtempSync(join(tmpdir(), 'pl-vm-home-')),
    connectTimeoutMs: 60_000,
  });
}

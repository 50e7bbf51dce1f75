// What a target's running kernel says of itself when no vmlinux is given (`probelens trace kernel …`): its BTF
// (/sys/kernel/btf/vmlinux), its symbols (/proc/kallsyms), its kprobe blacklist
// (/sys/kernel/debug/kprobes/blacklist) and the functions ftrace can trace (tracefs available_filter_functions),
// each read by a fixed `cat FILE` on the target (Target.exec: no command is
// ever built from user text), through `sudo -n` when the session's agent is. A loadable module's function
// (`MODULE:FUNC`, or a name kallsyms lists only in a module) is typed by that module's split BTF,
// /sys/kernel/btf/MODULE, read the same way once kallsyms has said which modules the specs need.
// Tests: test/unit/core/session/runningKernel.test.ts, test/vm/kernelBtf.test.ts, test/vm/kernelModule.test.ts
import { BtfError, parseBtf } from '../binary/btf';
import { kallsymsSymbol, parseFilterFunctions, parseKallsyms, parseKprobeBlacklist, type RunningKernel } from '../probes/kernelBtf';
import { MODULE_NAME } from '../probes/definition';
import { parseSpec, type ProbeSpec } from '../probes/spec';
import type { Target } from '../target/target';
import { runFixedProgram } from '../target/fixedProgram';

export const KERNEL_BTF = '/sys/kernel/btf/vmlinux';
/** A loadable module's split BTF. */
export const moduleBtfPath = (module: string): string => `/sys/kernel/btf/${module}`;
export const KALLSYMS = '/proc/kallsyms';
export const KPROBE_BLACKLIST = '/sys/kernel/debug/kprobes/blacklist';
/** Where tracefs lists the functions ftrace can trace, at either of its mount points. */
export const FILTER_FUNCTIONS = ['/sys/kernel/tracing/available_filter_functions', '/sys/kernel/debug/tracing/available_filter_functions'];

/** A file on the target is larger than this: not what the kernel exports (BTF is ~5 MB, kallsyms ~15 MB). */
const MAX_BYTES = 256 << 20;

export class RunningKernelError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'RunningKernelError';
  }
}

/** The bytes of `path` on the target (`cat PATH`), or why it could not be read. */
export async function readTargetFile(target: Target, path: string, sudo = false): Promise<{ bytes: Buffer } | { error: string }> {
  let r;
  try {
    r = await runFixedProgram(target, ['cat', path], { sudo, maxBytes: MAX_BYTES, timeoutMs: 60_000, what: `cat ${path}` });
  } catch (e) {
    return { error: (e as Error).message };
  }
  if (r.tooBig) return { error: `${path} is larger than ${MAX_BYTES >> 20} MiB` };
  if (r.exit.code !== 0)
    return { error: r.err.trim().split('\n').slice(-1)[0] || `cat ${path} exited with ${r.exit.code ?? `SIG${r.exit.signal}`}` };
  return { bytes: r.out };
}

/**
 * The running kernel of `target`: its BTF (required: without it parameters have no names), kallsyms (required) and
 * kprobe blacklist (when unreadable, e.g. without debugfs, the kernel's own refusal at writing is the check).
 */
export async function fetchRunningKernel(target: Target, sudo = false, specs: Array<string | ProbeSpec> = []): Promise<RunningKernel> {
  const [btf, syms, black, ...filters] = await Promise.all([
    readTargetFile(target, KERNEL_BTF, sudo),
    readTargetFile(target, KALLSYMS, sudo),
    readTargetFile(target, KPROBE_BLACKLIST, sudo),
    ...FILTER_FUNCTIONS.map((f) => readTargetFile(target, f, sudo)),
  ]);
  const filter = filters.find((f) => 'bytes' in f && f.bytes.length > 0);
  const host = target.describe();
  if ('error' in btf)
    throw new RunningKernelError(
      `cannot read the kernel's BTF on ${host} (${KERNEL_BTF}: ${btf.error}): its kernel may lack CONFIG_DEBUG_INFO_BTF; give the vmlinux of the kernel it runs instead of 'kernel'`,
    );
  if ('error' in syms) throw new RunningKernelError(`cannot read ${KALLSYMS} on ${host}: ${syms.error}`);
  let parsed;
  try {
    parsed = parseBtf(new Uint8Array(btf.bytes.buffer, btf.bytes.byteOffset, btf.bytes.byteLength));
  } catch (e) {
    if (e instanceof BtfError) throw new RunningKernelError(`the kernel's BTF on ${host} (${KERNEL_BTF}) cannot be read: ${e.message}`);
    throw e;
  }
  const kallsyms = parseKallsyms(syms.bytes.toString('latin1'));
  // The modules the specs name, or whose function a plain name is (listed once, in a module).
  const wanted = new Set<string>();
  for (const s of specs) {
    let point;
    try {
      point = (typeof s === 'string' ? parseSpec(s) : s).point;
    } catch {
      continue; // compiling says what is wrong with it
    }
    if (point.kind !== 'function' || point.glob) continue;
    const m = point.module ?? kallsymsSymbol(kallsyms, point.func).module;
    if (m && MODULE_NAME.test(m) && kallsymsSymbol(kallsyms, point.func, m).refused === undefined) wanted.add(m);
  }
  const modules: NonNullable<RunningKernel['modules']> = new Map();
  await Promise.all(
    [...wanted].map(async (m) => {
      const r = await readTargetFile(target, moduleBtfPath(m), sudo);
      if ('error' in r) {
        modules.set(m, { unreadable: `${moduleBtfPath(m)}: ${r.error}` });
        return;
      }
      try {
        modules.set(m, parseBtf(new Uint8Array(r.bytes.buffer, r.bytes.byteOffset, r.bytes.byteLength), parsed));
      } catch (e) {
        if (!(e instanceof BtfError)) throw e;
        modules.set(m, { unreadable: `${moduleBtfPath(m)} cannot be read: ${e.message}` });
      }
    }),
  );
  return {
    btf: parsed,
    kallsyms,
    ...(modules.size ? { modules } : {}),
    blacklist:
      'error' in black ? { unreadable: `${KPROBE_BLACKLIST}: ${black.error}` } : parseKprobeBlacklist(black.bytes.toString('latin1')),
    ...(filter && 'bytes' in filter ? { traceable: parseFilterFunctions(filter.bytes.toString('latin1')) } : {}),
  };
}

// Which kernel a target runs: its release (`uname -r`) and GNU build-id (the kernel's own copy of its image's note
// segment, /sys/kernel/notes, readable by everyone), so the editor can show it beside a vmlinux and say whether they
// are one build. One fixed program (no text of ours in it), run through the target like the agent; the comparison
// is the same one a session makes before it arms kprobes (traceSession.ts), which stays the authority.
// Also the running kernel's `_stext` address, for naming kernel return addresses (counts by caller).
// Tests: test/unit/core/target/kernelInfo.test.ts, test/e2e/kernelLens.test.ts, test/vm/kernelAggregate.test.ts
import { NT_GNU_BUILD_ID, parseNotes } from '../binary/notes';
import { runFixedProgram } from './fixedProgram';
import type { ExecOptions, Target } from './target';

/** The program: the release on the first line, then the notes as hex bytes (od exits 1 without the file). */
export const KERNEL_INFO_ARGV: readonly string[] = ['sh', '-c', 'uname -r; od -An -v -tx1 /sys/kernel/notes', 'probelens-kernel-info'];

export interface KernelInfo {
  /** `uname -r`, e.g. `6.1.0-56-cloud-amd64`. */
  release: string;
  /** Lowercase hex; undefined when the kernel exports no notes or no GNU build-id among them. */
  buildId?: string;
}

/** What KERNEL_INFO_ARGV printed. Throws when it names no release. */
export function parseKernelInfo(out: string): KernelInfo {
  const [first = '', ...rest] = out.split('\n');
  const release = first.trim();
  if (!/^[\w.+~-]+$/.test(release)) throw new Error(`the target named no kernel release (it printed ${JSON.stringify(out.slice(0, 80))})`);
  const hex = rest.join('').replace(/\s+/g, '');
  if (!hex || !/^([0-9a-f]{2})+$/i.test(hex)) return { release };
  let buildId: string | undefined;
  try {
    // The kernel's notes are in its own (x86-64, little-endian) byte order, 4-aligned.
    const note = parseNotes(Buffer.from(hex, 'hex'), true, 4, '/sys/kernel/notes', 0).find(
      (n) => n.owner === 'GNU' && n.type === NT_GNU_BUILD_ID,
    );
    if (note && note.desc.length > 0) buildId = Buffer.from(note.desc).toString('hex');
  } catch {
    // damaged notes: no build-id to compare
  }
  return buildId ? { release, buildId } : { release };
}

/** Runs KERNEL_INFO_ARGV on `target` (bounded by `ms`). */
export async function readKernelInfo(target: Target, opts: ExecOptions = {}, ms = 30_000): Promise<KernelInfo> {
  const r = await runFixedProgram(target, KERNEL_INFO_ARGV, { ...opts, timeoutMs: ms, what: 'reading the kernel release' });
  try {
    return parseKernelInfo(r.out.toString('utf8'));
  } catch (e) {
    throw new Error(`${(e as Error).message}${r.err.trim() ? `: ${r.err.trim()}` : ''}`);
  }
}

/** The program that prints the running kernel's `_stext` line of /proc/kallsyms (its address, or zeros when hidden). */
export const KERNEL_TEXT_ARGV: readonly string[] = ['sh', '-c', 'grep -m1 " _stext$" /proc/kallsyms', 'probelens-kallsyms'];

/**
 * The running kernel's `_stext` address (the vmlinux's less it is the KASLR offset), from KERNEL_TEXT_ARGV's output.
 * Throws, saying why, when the kernel hides its addresses (kptr_restrict) or printed no such line.
 */
export function parseKernelTextStart(out: string, host: string): bigint {
  const m = /^([0-9a-f]{8,16}) [tT] _stext$/m.exec(out);
  if (!m) throw new Error(`${host}: /proc/kallsyms names no _stext: the kernel's code addresses cannot be named there`);
  const a = BigInt(`0x${m[1]}`);
  if (a === 0n)
    throw new Error(
      `${host}: /proc/kallsyms hides the kernel's addresses from this user (kernel.kptr_restrict): callers cannot be named; run as root or with sudo`,
    );
  return a;
}

/** Runs KERNEL_TEXT_ARGV on `target` (bounded by `ms`). */
export async function readKernelTextStart(target: Target, opts: ExecOptions = {}, ms = 30_000): Promise<bigint> {
  const r = await runFixedProgram(target, KERNEL_TEXT_ARGV, { ...opts, timeoutMs: ms, what: 'reading /proc/kallsyms' });
  return parseKernelTextStart(r.out.toString('utf8'), target.host);
}

/** How a target's kernel relates to the vmlinux in use, in words: `matches`, or both ids. */
export function describeBuildIdMatch(running: string | undefined, vmlinux: string | undefined): { matches: boolean; text: string } {
  if (!running) return { matches: false, text: 'the running kernel exports no build-id (/sys/kernel/notes): cannot compare' };
  if (!vmlinux) return { matches: false, text: `running build-id ${running}; the vmlinux has none: cannot compare` };
  if (running === vmlinux) return { matches: true, text: `build-id ${running} matches the vmlinux` };
  return { matches: false, text: `build-id differs: running ${running}, vmlinux ${vmlinux}` };
}

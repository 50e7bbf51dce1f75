// Runs one fixed program on a target (no text of ours in its argv: see target.ts) and collects what it prints,
// bounded in time and size: a target that hangs or floods ends the program and says so, never a wait forever.
// Used for the small reads a session makes beside its agent (the kernel's release and build-id, its `_stext`, its
// BTF, kallsyms and kprobe blacklist).
// Tests: test/unit/core/target/kernelInfo.test.ts, test/unit/core/session/runningKernel.test.ts
import type { ExecExit, ExecOptions, Target } from './target';

export interface FixedRun {
  out: Buffer;
  /** The end of stderr (at most 4 KiB). */
  err: string;
  exit: ExecExit;
  /** More than `maxBytes` came: the program was ended and `out` holds the first `maxBytes`. */
  tooBig: boolean;
}

/** Runs `argv` on `target` with stdin closed; throws when it outlasts `timeoutMs` (the program is killed). */
export async function runFixedProgram(
  target: Target,
  argv: readonly string[],
  opts: ExecOptions & { timeoutMs?: number; maxBytes?: number; what?: string } = {},
): Promise<FixedRun> {
  const { timeoutMs = 30_000, maxBytes = 1 << 16, what = argv.join(' ') } = opts;
  const ch = await target.exec(argv, { sudo: opts.sudo });
  ch.stdin.end();
  const out: Buffer[] = [];
  let size = 0;
  let err = '';
  let tooBig = false;
  ch.stdout.on('data', (d: Buffer) => {
    if (tooBig) return;
    if (size + d.length > maxBytes) {
      out.push(d.subarray(0, maxBytes - size));
      size = maxBytes;
      tooBig = true;
      ch.kill('TERM');
      return;
    }
    out.push(d);
    size += d.length;
  });
  ch.stderr.on('data', (d: Buffer) => (err = (err + d.toString('utf8')).slice(-4096)));
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<'late'>((r) => (timer = setTimeout(() => r('late'), timeoutMs)));
  const exit = await Promise.race([ch.exit, late]);
  clearTimeout(timer);
  if (exit === 'late') {
    ch.kill('KILL');
    throw new Error(`${what} on ${target.host} took over ${timeoutMs} ms`);
  }
  return { out: Buffer.concat(out), err, exit, tooBig };
}

// A kernel tree without a vmlinux: its C files' lenses come from their definitions (cDefinitions.ts) and the
// target's running kernel (its BTF and kallsyms, core/probes/kernelBtf.ts), which says which of them it has and
// whether a kprobe by name can be written there, with the CLI's own reasons when not. And what the Probes view says
// of a target's kernel before anything is traced: its release and how its build-id compares with the workspace's
// vmlinux, or that there is none and BTF is used.
// Tests: test/unit/vscode/model/kernelTree.test.ts
import { BTF_SOURCE, compileKernelBtf, type RunningKernel } from '../../core/probes/kernelBtf';
import { describeBuildIdMatch } from '../../core/target/kernelInfo';
import type { CDefinition } from './cDefinitions';
import { IDLE_TITLE, liveTitle, specsFor, SOURCE_WORDS, type LensModel, type LiveSpec } from './lenses';

/** The probe set's key (and the CLI's BIN) for the target's running kernel without a vmlinux. */
export const BTF_KEY = 'kernel';

/** Said where a probe of the running kernel comes from (lens tooltip, Probes view). */
export const BTF_WORDS = `from ${BTF_SOURCE}`;

export type KernelFunctionStatus = { ok: true } | { refused: string };

/**
 * Whether the running kernel has `symbol` as a function (a BTF FUNC and a text symbol in kallsyms): undefined when
 * not (no lens), else whether `trace kernel` would arm it, or the reason it refuses it (a name kallsyms lists
 * several times, the kprobe blacklist, notrace, a module's).
 */
export function kernelFunctionStatus(k: RunningKernel, symbol: string): KernelFunctionStatus | undefined {
  if (k.btf.funcs(symbol).length === 0) return undefined;
  if (k.kallsyms && !k.kallsyms.get(symbol)?.some((e) => e.type === 't' || e.type === 'T')) return undefined;
  try {
    compileKernelBtf([`${symbol} $params`], k);
    return { ok: true };
  } catch (e) {
    const msg = (e as Error).message;
    const prefix = `${symbol} $params: `;
    return { refused: msg.startsWith(prefix) ? msg.slice(prefix.length) : msg };
  }
}

/** The symbol a definition is probed at: the first of its candidates the kernel has. */
export function kernelSymbolOf(
  def: CDefinition,
  status: (symbol: string) => KernelFunctionStatus | undefined,
): { symbol: string; status: KernelFunctionStatus } | undefined {
  for (const symbol of def.symbols) {
    const s = status(symbol);
    if (s) return { symbol, status: s };
  }
  return undefined;
}

/**
 * Lenses above the definitions the running kernel has: Trace (saying BTF), Trace returns and Latency, as
 * model/lenses.ts makes them for an indexed function; a refused one gets its reason instead.
 */
export function btfLenses(
  defs: readonly CDefinition[],
  status: (symbol: string) => KernelFunctionStatus | undefined,
  opts: { trace: boolean; returns: boolean; latency: boolean },
  live: (specs: string[]) => LiveSpec | undefined = () => undefined,
): LensModel[] {
  const out: LensModel[] = [];
  const seen = new Set<string>();
  for (const def of defs) {
    const got = kernelSymbolOf(def, status);
    if (!got || seen.has(got.symbol)) continue;
    seen.add(got.symbol);
    if ('refused' in got.status) {
      out.push({
        line: def.line,
        kind: 'unprobeable',
        title: `$(circle-slash) ${got.symbol}: not probe-able without a vmlinux`,
        function: got.symbol,
        specs: [],
        reason: got.status.refused,
      });
      continue;
    }
    for (const kind of ['trace', 'returns', 'latency'] as const) {
      if (!opts[kind]) continue;
      const specs = specsFor(kind, got.symbol);
      const l = live(specs);
      const idle = kind === 'trace' ? `${IDLE_TITLE.trace} · ${SOURCE_WORDS.btf}` : IDLE_TITLE[kind];
      out.push({ line: def.line, kind, title: l ? liveTitle(kind, l) : idle, function: got.symbol, specs });
    }
  }
  return out;
}

/** A target's kernel as the Probes view shows it before (and while) tracing. */
export type KernelRowState =
  { state: 'reading' } | { state: 'failed'; error: string } | { state: 'read'; release: string; buildId?: string; btfError?: string };

/** What the workspace traces the kernel with: its vmlinux (basename and build-id), or the target's BTF. */
export type KernelSourceChoice = { vmlinux: { name: string; buildId?: string } } | { btf: true };

/** The row's label and description: `kernel 6.1.0-56-cloud-amd64` · `build-id matches vmlinux` (or why not). */
export function kernelRow(k: KernelRowState, choice: KernelSourceChoice): { label: string; description: string; ok: boolean } {
  if (k.state === 'reading') return { label: 'kernel', description: 'reading…', ok: true };
  if (k.state === 'failed') return { label: 'kernel', description: `cannot be read: ${k.error}`, ok: false };
  const label = `kernel ${k.release}`;
  if ('btf' in choice) {
    if (k.btfError) return { label, description: `no vmlinux: ${k.btfError}`, ok: false };
    return { label, description: `no vmlinux: BTF and kallsyms`, ok: true };
  }
  const m = describeBuildIdMatch(k.buildId, choice.vmlinux.buildId);
  return { label, description: m.matches ? `build-id matches ${choice.vmlinux.name}` : m.text, ok: m.matches };
}

// Counts by caller (`--by caller`), streamed: a kernel entry's return address (the compiler's CALLER_ARG, `$stack0`)
// named as the kernel's `.sym` names it, from the vmlinux's symbols less the running kernel's KASLR offset (its
// `_stext` in /proc/kallsyms); at an inlined copy, the function the copy is in. The aggregated path's names are the
// kernel's own (kernelAggregation.ts); both pass through keys.ts's callerLabel.
// Tests: test/vm/kernelAggregate.test.ts, test/unit/core/session/keys.test.ts
import type { BinaryIndex } from '../index/binaryIndex';
import { CALLER_ARG, kernelOf, type CompiledProbe } from '../probes/compiler';
import { functionNameAt } from '../probes/kernel';
import { readKernelTextStart } from '../target/kernelInfo';
import type { Target } from '../target/target';
import type { Hit } from '../tracefs/hitParser';
import { callerLabel } from './keys';

/** The namer of a session's hits' callers: reads the target's `_stext` once. */
export async function callerNamer(
  index: BinaryIndex | undefined,
  target: Target,
  sudo?: boolean,
): Promise<(raw: Hit, point: CompiledProbe) => string | undefined> {
  // Without a vmlinux (BTF and kallsyms) there are no symbols here to name a return address with.
  if (!index) throw new Error("--by caller needs the kernel's vmlinux: its symbols name the callers");
  const k = kernelOf(index);
  if (k?.module)
    throw new Error(
      `--by caller needs the kernel's vmlinux: ${index.path} is the module ${k.module}, whose symbols do not name its callers`,
    );
  if (!k?.textStart) throw new Error(`${index.path} has no _stext symbol: callers cannot be named`);
  const slide = (await readKernelTextStart(target, { sudo })) - k.textStart;
  return (raw, point) => {
    const s = point.site;
    if (s && s.kind !== 'entry' && s.kind !== 'clone') return s.caller;
    const v = raw.args[CALLER_ARG.name];
    const at =
      typeof v === 'bigint'
        ? v
        : typeof v === 'number'
          ? BigInt(v)
          : typeof v === 'string' && /^(0x)?[0-9a-f]+$/i.test(v)
            ? BigInt(v.startsWith('0x') ? v : `0x${v}`)
            : undefined;
    if (at === undefined) return undefined;
    return callerLabel(functionNameAt(k, (at - slide) & 0xffffffffffffffffn) ?? `0x${at.toString(16)}`);
  };
}

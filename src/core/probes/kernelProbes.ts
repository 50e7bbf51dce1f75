// The compiler's kernel half: which index is a kernel (its image read once per index), a kernel site as a kprobe
// (`SYMBOL+OFFSET`, refused before anything is written where the kernel must not be probed, kernel.ts), and the
// return address an entry fetches for counts by caller.
// Tests: test/unit/core/probes/kernel.test.ts, test/vm/kernelDwarf.test.ts, test/vm/kernelAggregate.test.ts
import type { BinaryIndex } from '../index/binaryIndex';
import type { ProbeTarget } from './definition';
import type { CompiledArg } from './args';
import type { ProbeKind } from '../../shared/hit';
import type { Site } from '../../shared/site';
import { ResolveError } from './resolve';
import { siteContext } from './variables';
import { kernelImage, kernelPoint, kernelRefusal, type KernelImage } from './kernel';

/**
 * At a kernel function's entry the top of the stack is its return address, in the calling function (at an inlined
 * copy it is not: there the caller is the function the copy is in, which the site says).
 */
export const CALLER_ARG: CompiledArg = { name: 'probelens_caller', fetch: '$stack0', type: 'x64', display: 'hex', hidden: true };

const kernels = new WeakMap<BinaryIndex, KernelImage | undefined>();

/** The kernel image behind `index`'s kernel probes, once a compile has read it (undefined: not a kernel). */
export const kernelOf = (index: BinaryIndex): KernelImage | undefined => kernels.get(index);

/** Reads `index`'s image once, as a kernel or not (only an ET_EXEC, or an ET_REL module, can be one). */
export async function readKernelOf(index: BinaryIndex, debugDirs?: string[]): Promise<void> {
  if (!kernels.has(index)) kernels.set(index, kernelImage((await siteContext(index, debugDirs)).access.image));
}

/** A site the kernel must not be probed at (kernel.ts says why). */
export class KernelRefusal extends ResolveError {
  constructor(readonly why: string) {
    super(`cannot probe the kernel there: ${why}`);
  }
}

/**
 * A kernel site as a kprobe: `SYMBOL+OFFSET` (kernel.ts), refused before anything is written when the kernel must
 * not be probed there; memory a `ustring` argument's pointer points at is user memory (`+uN(…)`).
 */
export function kernelProbe(
  p: { kind: ProbeKind; address: bigint; site?: Site; args: CompiledArg[] },
  kind: 'p' | 'r',
  k: KernelImage,
): { target: ProbeTarget; args: CompiledArg[] } {
  const s = p.site;
  const entry = kind === 'r' || (s !== undefined && (s.kind === 'entry' || s.kind === 'clone') && p.kind === 'entry');
  const why = kernelRefusal(k, p.address, entry);
  if (why) throw new KernelRefusal(why);
  // A user string goes without its head companion: kprobes take `+u` only for strings (Linux 6.1 refuses
  // `+u0(%si):x64[8]` with "String accepts only memory argument").
  const heads = new Set(p.args.flatMap((a) => (a.type === 'ustring' && a.headArg ? [a.headArg] : [])));
  const args = p.args
    .filter((a) => !heads.has(a.name))
    .map((a) => (a.type === 'ustring' ? { ...a, headArg: undefined, fetch: a.fetch.replace(/^\+(\d)/, '+u$1') } : a));
  return { target: { type: 'kprobe', ...kernelPoint(k, p.address) }, args };
}

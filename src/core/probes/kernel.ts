// A Linux kernel image (vmlinux, with its DWARF) as a probe target: its sites become kprobe points written as
// `SYMBOL+OFFSET` (so KASLR, which moves the kernel at every boot, does not matter), and what the kernel would refuse
// or must never have probed is refused here, before anything is written to a target:
// - a function on the kernel's own kprobe blacklist: NOKPROBE_SYMBOL() leaves a `_kbl_addr_NAME` object in the
//   image (the list /sys/kernel/debug/kprobes/blacklist shows is built from it at boot), and `.kprobes.text`;
// - code in `.noinstr.text` or `.entry.text` (between the linker's `__noinstr_text_*` / `__entry_text_*` symbols);
// - a `notrace` function: in a kernel built with fentry every traceable function starts with `call __fentry__`
//   (after an `endbr64` with IBT); kprobe_events refuses any offset of one without it (its entry, a copy inlined
//   into it), unless it is a suffixed clone of a traceable function;
// - an offset that is not an instruction boundary of its function (decoded from the symbol's start).
// A loadable module's `.ko` (an ET_REL with `.modinfo`) is a kernel image of its own: read with its sections laid
// out and relocated (binary/relocatable.ts), its sites are written `MODULE:SYMBOL+OFFSET` (the kernel resolves the
// symbol inside that module), its `.kprobes.text`/`.noinstr.text` are refused as the kernel refuses them at load,
// and its `.init.text`/`.init.*` code is refused because the kernel frees it once the module has loaded.
// Tests: test/unit/core/probes/kernel.test.ts, test/vm/kernelDwarf.test.ts, test/vm/kernelModule.test.ts
import { basename } from 'node:path';
import type { BinaryImage } from '../binary/binaryImage';
import { decodeX86Flow } from './x86decoder';

interface KSym {
  name: string;
  address: bigint;
  size: bigint;
  global: boolean;
  func: boolean;
}

export interface KernelImage {
  /** Function symbols by address (ascending). */
  funcs: KSym[];
  /** How many symbols (of any type) carry each name: a kprobe names a symbol only when it is unique. */
  nameCount: Map<string, number>;
  /** Names on the kernel's kprobe blacklist (NOKPROBE_SYMBOL). */
  blacklist: Set<string>;
  /** Address ranges the kernel never lets kprobes into, with their section's name. */
  forbidden: Array<{ lo: bigint; hi: bigint; what: string }>;
  fentry?: bigint;
  /** `_stext`'s link-time address: the running kernel's, from /proc/kallsyms, less this is its KASLR offset. */
  textStart?: bigint;
  /** A loadable module's name (`.modinfo` name=): its kprobes are written `MODULE:SYMBOL+OFFSET`. */
  module?: string;
  image: BinaryImage;
}

const STT_FUNC = 2;
const cache = new WeakMap<BinaryImage, KernelImage | null>();

/**
 * Whether `image` is a Linux kernel: an ET_EXEC with the kernel's `Linux` note and `.init.text`, or named vmlinux;
 * or a loadable module (an ET_REL with `.modinfo` or `.gnu.linkonce.this_module`).
 */
export function isKernelImage(image: BinaryImage): boolean {
  if (image.type === 'REL') return isKernelModule(image);
  if (image.type !== 'EXEC') return false;
  if (/^vmlinux/.test(basename(image.path))) return true;
  return image.elf.section('.init.text') !== undefined && image.elf.notes().some((n) => n.owner === 'Linux');
}

/** The kernel's symbols and no-probe lists, or undefined when `image` is not a kernel. */
export function kernelImage(image: BinaryImage): KernelImage | undefined {
  const hit = cache.get(image);
  if (hit !== undefined) return hit ?? undefined;
  const k = isKernelImage(image) ? readKernel(image) : null;
  cache.set(image, k);
  return k ?? undefined;
}

/** Whether `image` is a loadable kernel module (a `.ko`). */
export function isKernelModule(image: BinaryImage): boolean {
  return (
    image.type === 'REL' && (image.elf.section('.modinfo') !== undefined || image.elf.section('.gnu.linkonce.this_module') !== undefined)
  );
}

/**
 * A module's name as the kernel knows it (/sys/module/NAME, `[NAME]` in kallsyms): `.modinfo`'s `name=`, else the
 * name in `.gnu.linkonce.this_module` (struct module's name field), else the file's name without `.ko`, `-` as `_`.
 */
export function moduleName(image: BinaryImage): string {
  const info = image.elf.section('.modinfo');
  const bytes = info && image.elf.rawSectionBytes(info);
  if (bytes) {
    for (const kv of Buffer.from(bytes).toString('latin1').split('\0')) if (kv.startsWith('name=') && kv.length > 5) return kv.slice(5);
  }
  const mod = image.elf.section('.gnu.linkonce.this_module');
  const m = mod && image.elf.rawSectionBytes(mod);
  if (m && m.length > 24 + 1) {
    const raw = Buffer.from(m.subarray(24, Math.min(m.length, 24 + 56)));
    const end = raw.indexOf(0);
    const name = raw.toString('latin1', 0, end < 0 ? raw.length : end);
    if (/^[A-Za-z0-9_]+$/.test(name)) return name;
  }
  return basename(image.path)
    .replace(/\.ko(\..*)?$/, '')
    .replace(/-/g, '_');
}

function readKernel(image: BinaryImage): KernelImage {
  const elf = image.elf;
  const symtab = elf.section('.symtab');
  const funcs: KSym[] = [];
  const nameCount = new Map<string, number>();
  const byName = new Map<string, bigint>();
  const blacklist = new Set<string>();
  if (symtab) {
    const bytes = elf.rawSectionBytes(symtab) ?? new Uint8Array(0);
    const strs = elf.rawSectionBytes(elf.sections[symtab.link]) ?? new Uint8Array(0);
    const dv = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
    const str = Buffer.from(strs.buffer, strs.byteOffset, strs.byteLength);
    for (let off = 24; off + 24 <= bytes.length; off += 24) {
      const nameOff = dv.getUint32(off, true);
      const info = dv.getUint8(off + 4);
      const shndx = dv.getUint16(off + 6, true);
      const end = str.indexOf(0, nameOff);
      const name = str.toString('latin1', nameOff, end < 0 ? str.length : end);
      if (!name) continue;
      // A module's symbols are section-relative (its undefined ones, `__fentry__`, get slots of their own).
      const address = elf.layout ? elf.layout.symbolValue(off / 24) : dv.getBigUint64(off + 8, true);
      const size = dv.getBigUint64(off + 16, true);
      nameCount.set(name, (nameCount.get(name) ?? 0) + 1);
      if (!byName.has(name)) byName.set(name, address);
      if (name.startsWith('_kbl_addr_')) blacklist.add(name.slice('_kbl_addr_'.length));
      if ((info & 0xf) === STT_FUNC && shndx !== 0) funcs.push({ name, address, size, global: info >> 4 !== 0, func: true });
    }
  }
  funcs.sort((a, b) => (a.address < b.address ? -1 : a.address > b.address ? 1 : Number(b.global) - Number(a.global)));
  const forbidden: KernelImage['forbidden'] = [];
  for (const [lo, hi, what] of [
    ['__noinstr_text_start', '__noinstr_text_end', '.noinstr.text'],
    ['__entry_text_start', '__entry_text_end', '.entry.text'],
    ['__kprobes_text_start', '__kprobes_text_end', '.kprobes.text'],
  ]) {
    const a = byName.get(lo);
    const b = byName.get(hi);
    if (a !== undefined && b !== undefined && b > a) forbidden.push({ lo: a, hi: b, what });
  }
  const module = isKernelModule(image) ? moduleName(image) : undefined;
  if (module && elf.layout) {
    // The module loader adds `.kprobes.text` and `.noinstr.text` to the blacklist, and frees `.init.*` code after init.
    for (const sec of elf.sections) {
      const base = elf.layout.base.get(sec.index);
      if (base === undefined || sec.size === 0) continue;
      const what =
        sec.name === '.kprobes.text' || sec.name === '.noinstr.text'
          ? sec.name
          : sec.name.startsWith('.init.')
            ? `${sec.name} (code the kernel frees once the module has loaded)`
            : undefined;
      if (what) forbidden.push({ lo: base, hi: base + BigInt(sec.size), what });
    }
  }
  return {
    funcs,
    nameCount,
    blacklist,
    forbidden,
    fentry: byName.get('__fentry__'),
    textStart: byName.get('_stext'),
    ...(module ? { module } : {}),
    image,
  };
}

/** The function symbol whose code holds `address` (the last one starting at or below it), or undefined. */
function symbolAt(k: KernelImage, address: bigint): KSym | undefined {
  let lo = 0,
    hi = k.funcs.length - 1,
    found = -1;
  while (lo <= hi) {
    const mid = (lo + hi) >> 1;
    if (k.funcs[mid].address <= address) {
      found = mid;
      lo = mid + 1;
    } else hi = mid - 1;
  }
  if (found < 0) return undefined;
  // Aliases share an address: prefer a unique name among them, a global one first.
  const at = k.funcs[found].address;
  let first = found;
  while (first > 0 && k.funcs[first - 1].address === at) first--;
  const group = k.funcs.slice(first, found + 1);
  return group.find((s) => s.global && k.nameCount.get(s.name) === 1) ?? group.find((s) => k.nameCount.get(s.name) === 1) ?? group[0];
}

/**
 * The function a link-time code address lies in, by name, as the kernel names a return address (`.sym`: the symbol
 * at or below it); undefined when no function holds it (the kernel then prints the address).
 */
export function functionNameAt(k: KernelImage, address: bigint): string | undefined {
  const s = symbolAt(k, address);
  return s && (s.size === 0n || address < s.address + s.size) ? s.name : undefined;
}

export class KernelProbeError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'KernelProbeError';
  }
}

/**
 * Where a kprobe at `address` is written: the function symbol holding it when its name is unique in the kernel
 * (its entry is `SYMBOL+0`, a clone `foo.isra.0+0`, an inlined copy `caller+OFF`), else the nearest global
 * function symbol below it.
 */
export function kernelPoint(k: KernelImage, address: bigint): { symbol: string; offset: bigint; module?: string } {
  const mod = k.module ? { module: k.module } : {};
  const own = symbolAt(k, address);
  if (own && k.nameCount.get(own.name) === 1) return { symbol: own.name, offset: address - own.address, ...mod };
  let i = own ? k.funcs.indexOf(own) : -1;
  for (; i >= 0; i--) {
    const s = k.funcs[i];
    // In a module a static symbol is found by name too (`MODULE:SYMBOL` looks in the module's own symbols).
    if ((s.global || k.module) && k.nameCount.get(s.name) === 1) return { symbol: s.name, offset: address - s.address, ...mod };
  }
  throw new KernelProbeError(`no kernel symbol names the code at 0x${address.toString(16)}`);
}

/**
 * Why the kernel must not (or will not) be probed at `address`, or undefined when it may. `entry`: the address
 * is where a call of the function begins at its own symbol (an out-of-line entry or a clone), which must call
 * `__fentry__` first when the kernel is built with fentry.
 */
export function kernelRefusal(k: KernelImage, address: bigint, entry: boolean): string | undefined {
  const hex = `0x${address.toString(16)}`;
  const sym = symbolAt(k, address);
  const where = sym ? `${sym.name}+${address - sym.address}` : hex;
  for (const r of k.forbidden) {
    if (address >= r.lo && address < r.hi) return `${where} is in ${r.what}, which the kernel does not let kprobes into`;
  }
  if (!sym || (sym.size > 0n && address >= sym.address + sym.size)) return `${hex} is in no function of the kernel's symbol table`;
  const bare = sym.name.replace(/\..*$/, '');
  if (k.blacklist.has(sym.name) || k.blacklist.has(bare))
    return `${sym.name} is on the kernel's kprobe blacklist (NOKPROBE_SYMBOL; /sys/kernel/debug/kprobes/blacklist)`;
  const size = Number(sym.size > 0n ? sym.size : address - sym.address + 16n);
  const code = k.image.elf.bytesAt(sym.address, size);
  const insns = decodeX86Flow(code, sym.address);
  const at = insns.find((i) => i.address === address);
  if (!at || 'invalid' in at) {
    const bad = insns.find((i) => 'invalid' in i && i.address <= address);
    return `${where} is not an instruction boundary of ${sym.name}${bad && 'reason' in bad ? ` (${bad.reason} at 0x${bad.address.toString(16)})` : ''}`;
  }
  // kprobe_events refuses any offset of a function ftrace does not know (within_notrace_func, unless the kernel
  // has CONFIG_KPROBE_EVENTS_ON_NOTRACE, which Debian's has not): one that does not call __fentry__. A suffixed
  // symbol (`foo.isra.0`) is let in when `foo` is traceable. So an inlined copy in a traceable holder is let in.
  if (k.fentry !== undefined && !callsFentry(k, code, insns) && !baseTraceable(k, sym.name)) {
    if (entry) return `${sym.name} does not call __fentry__ at its start: it is notrace, which the kernel keeps out of tracing`;
    return `${where} is inside ${sym.name}, which does not call __fentry__ at its start: the kernel refuses kprobe events anywhere in a notrace function`;
  }
  return undefined;
}

/** Whether `name` is a suffixed symbol (`foo.isra.0`) whose base function `foo` calls __fentry__. */
function baseTraceable(k: KernelImage, name: string): boolean {
  const dot = name.indexOf('.');
  if (dot <= 0) return false;
  const base = k.funcs.find((f) => f.name === name.slice(0, dot));
  if (!base) return false;
  const code = k.image.elf.bytesAt(base.address, 16);
  return callsFentry(k, code, decodeX86Flow(code, base.address));
}

/** Whether the function begins with `call __fentry__` (after an `endbr64`). */
function callsFentry(k: KernelImage, code: Uint8Array, insns: ReturnType<typeof decodeX86Flow>): boolean {
  const endbr64 = code[0] === 0xf3 && code[1] === 0x0f && code[2] === 0x1e && code[3] === 0xfa;
  const first = insns[endbr64 ? 1 : 0];
  return first !== undefined && !('invalid' in first) && first.kind === 'call' && first.target === k.fentry;
}

/** The warning for sites of a function left out because the kernel must not be probed there (the rest are armed). */
export function refusedSitesNote(fn: string, refused: ReadonlyArray<{ where: string; why: string }>): string {
  const shown = refused.slice(0, 3).map((r) => `${r.where} (${r.why})`);
  return `${fn}: not armed at ${refused.length} of its sites, where the kernel does not let kprobes in, so its count is a lower bound: ${shown.join('; ')}${refused.length > 3 ? '; …' : ''}`;
}

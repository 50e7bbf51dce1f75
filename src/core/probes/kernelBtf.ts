// The running kernel without a vmlinux, as bpftrace probes it: functions by name from the target's /proc/kallsyms,
// their parameters (names, types, struct members) from its BTF (/sys/kernel/btf/vmlinux), values by the kernel's
// own calling-convention accessors (`$argN`; x86-64 and arm64 both have them). A kprobe is written `SYMBOL+0` and
// the kernel resolves the name, so only a name kallsyms lists once as a text symbol is taken (a static name listed
// twice is refused with its candidates), and a function on the target's kprobe blacklist is refused before anything
// is written, as the DWARF path refuses one (kernel.ts).
//
// Without DWARF there are no inlined copies, lines or offsets: a function is probed at its one entry (and its
// return); its calls at copies the compiler inlined elsewhere are unknown and said to be.
// Tests: test/unit/core/probes/kernelBtf.test.ts, test/unit/cli/kernelBtf.test.ts, test/vm/kernelBtf.test.ts, test/vm/kernelModule.test.ts
import { BtfError, type Btf } from '../binary/btf';
import type { CompiledArg, CompiledProbe, CompileOptions } from './compiler';
import { UNBOUND_GROUP, uniqueEventName, type FetchArg, type ProbeDefinition } from './definition';
import { kprobeArgs, KprobeSpecError, type KernelMember, type KernelParam, type KernelType } from './kprobe';
import { parseSpec, type ProbeArg, type ProbeSpec } from './spec';
import { CompileError } from './sites';
import { pairKey } from '../../shared/site';

/** Where a kernel probe's function and parameters came from, as the CLI and the editor say it. */
export const BTF_SOURCE = "the target's BTF and kallsyms (no vmlinux)";
export const DWARF_SOURCE = 'vmlinux DWARF';

/** What is known of a running kernel without its vmlinux. */
export interface RunningKernel {
  btf: Btf;
  /**
   * The target's /proc/kallsyms by name; absent when compiling offline from a saved BTF (`define kernel --btf FILE`),
   * where the kernel checks the name when the definition is written.
   */
  kallsyms?: Kallsyms;
  /** The kprobe blacklist's names, or why it could not be read (then the kernel's own refusal is the check). */
  blacklist: Set<string> | { unreadable: string };
  /**
   * The functions ftrace can trace (tracefs `available_filter_functions`): kprobe_events refuses a function not
   * among them (notrace; unless the kernel has CONFIG_KPROBE_EVENTS_ON_NOTRACE). Absent when unreadable (no
   * function tracer): the kernel's refusal at writing is then the check.
   */
  traceable?: Set<string>;
  /**
   * The split BTF of each loadable module a spec names (/sys/kernel/btf/MODULE, read against `btf`), or why it
   * could not be read; a module not here was not read (compiling offline from a saved BTF).
   */
  modules?: Map<string, Btf | { unreadable: string }>;
}

export interface KallsymEntry {
  address: bigint;
  /** The kallsyms type letter: t/T text, d/D data… */
  type: string;
  module?: string;
}

export type Kallsyms = Map<string, KallsymEntry[]>;

/**
 * /proc/kallsyms (`ADDRESS TYPE NAME [MODULE]`, addresses zero when read without privilege). Lines that do not
 * have that shape are skipped.
 */
export function parseKallsyms(text: string): Kallsyms {
  const out: Kallsyms = new Map();
  for (const line of text.split('\n')) {
    const m = /^([0-9a-fA-F]{1,16}) ([A-Za-z]) (\S+)(?:\s+\[(\S+)\])?\s*$/.exec(line);
    if (!m) continue;
    const e: KallsymEntry = { address: BigInt(`0x${m[1]}`), type: m[2], ...(m[4] ? { module: m[4] } : {}) };
    const list = out.get(m[3]);
    if (list) list.push(e);
    else out.set(m[3], [e]);
  }
  return out;
}

/** /sys/kernel/debug/kprobes/blacklist: `0xSTART-0xEND\tNAME` lines (a module's with `[MODULE]`). */
export function parseKprobeBlacklist(text: string): Set<string> {
  const out = new Set<string>();
  for (const line of text.split('\n')) {
    const words = line.trim().split(/\s+/);
    if (words.length < 2 || !/^0x[0-9a-f]+(-0x[0-9a-f]+)?$/i.test(words[0])) continue;
    const name = words.slice(1).find((w) => /^[A-Za-z_][A-Za-z0-9_.]*$/.test(w));
    if (name) out.add(name);
  }
  return out;
}

/**
 * tracefs `available_filter_functions`: a name per line, a module's followed by `[MODULE]`. Each name is in the set,
 * a module's also as `MODULE:NAME`.
 */
export function parseFilterFunctions(text: string): Set<string> {
  const out = new Set<string>();
  for (const line of text.split('\n')) {
    const m = /^([A-Za-z_][A-Za-z0-9_.]*)(?:\s+\[([A-Za-z0-9_]+)\])?/.exec(line);
    if (!m) continue;
    out.add(m[1]);
    if (m[2]) out.add(`${m[2]}:${m[1]}`);
  }
  return out;
}

const loadedModules = new WeakMap<Kallsyms, Set<string>>();

/** The modules kallsyms lists symbols of: those loaded on the target. */
export function kallsymsModules(k: Kallsyms): Set<string> {
  let set = loadedModules.get(k);
  if (!set) {
    set = new Set();
    for (const list of k.values()) for (const e of list) if (e.module) set.add(e.module);
    loadedModules.set(k, set);
  }
  return set;
}

/** The kernel-side type of a BTF type, read lazily (a pointer's target and a struct's members on first use). */
export function kernelType(btf: Btf, id: number, cache = new Map<number, KernelType>()): KernelType {
  const hit = cache.get(id);
  if (hit) return hit;
  const { type: t, tags } = btf.resolve(id);
  let out: KernelType;
  switch (t.kind) {
    case 'int':
      out = [1, 2, 4, 8].includes(t.size)
        ? { kind: 'int', size: t.size as 1 | 2 | 4 | 8, signed: t.signed }
        : { kind: 'other', what: `a ${t.size * 8}-bit integer (${t.name})` };
      break;
    case 'enum':
      out = [1, 2, 4, 8].includes(t.size)
        ? { kind: 'int', size: t.size as 1 | 2 | 4 | 8, signed: t.signed || t.values.some((v) => v.value < 0n) }
        : { kind: 'other', what: `enum ${t.name}` };
      break;
    case 'ptr': {
      // `__user` is a type tag on the pointee (clang with btf_type_tag); gcc-built BTF carries none, so the spec's
      // `:ustring` (or `:str` on a tagged pointer) says which memory a string is in.
      const pointee = btf.resolve(t.type);
      const user = pointee.tags.includes('user') || tags.includes('user');
      const to = () => (pointee.type.kind === 'void' ? undefined : kernelType(btf, t.type, cache));
      out = lazyPointer(user, to);
      break;
    }
    case 'struct':
    case 'union': {
      const members = () => structMembers(btf, t.members, cache);
      out = lazyStruct(`${t.kind === 'union' ? 'union ' : ''}${t.name || '(anonymous)'}`, members);
      break;
    }
    case 'void':
      out = { kind: 'other', what: 'void' };
      break;
    case 'fwd':
      out = { kind: 'other', what: `${t.union ? 'union' : 'struct'} ${t.name} (declared, not defined, in the BTF)` };
      break;
    default:
      out = { kind: 'other', what: `a ${t.kind}${'name' in t && t.name ? ` (${t.name})` : ''}` };
  }
  cache.set(id, out);
  return out;
}

function lazyPointer(user: boolean, to: () => KernelType | undefined): KernelType {
  let memo: { v: KernelType | undefined } | undefined;
  return {
    kind: 'pointer',
    size: 8,
    user,
    get to() {
      return (memo ??= { v: to() }).v;
    },
  };
}

function lazyStruct(name: string, members: () => KernelMember[]): KernelType {
  let memo: KernelMember[] | undefined;
  return {
    kind: 'struct',
    name,
    get members() {
      return (memo ??= members());
    },
  };
}

/** A struct's members, an anonymous struct or union's members lifted into it (C's `p->a` through `struct { a; }`). */
function structMembers(
  btf: Btf,
  members: ReadonlyArray<{ name: string; type: number; bitOffset: number; bitSize: number }>,
  cache: Map<number, KernelType>,
  depth = 0,
): KernelMember[] {
  if (depth > 16) throw new BtfError('anonymous members nested more than 16 deep');
  const out: KernelMember[] = [];
  for (const m of members) {
    if (!m.name) {
      const inner = btf.resolve(m.type).type;
      if (inner.kind === 'struct' || inner.kind === 'union')
        for (const x of structMembers(btf, inner.members, cache, depth + 1)) out.push({ ...x, offset: x.offset + m.bitOffset / 8 });
      continue;
    }
    const type = kernelType(btf, m.type, cache);
    if (m.bitSize > 0 || m.bitOffset % 8 !== 0) {
      out.push(bitfieldMember(m.name, m.bitOffset, m.bitSize || btf.sizeOf(m.type) * 8, type));
      continue;
    }
    out.push({ name: m.name, offset: m.bitOffset / 8, type });
  }
  return out;
}

/**
 * A bitfield `bits` wide at bit `bitOffset` of its struct, read as the integer of its type's size that holds it
 * (`b3@5/32` at that integer's offset), or a wider one when it straddles that size's alignment.
 */
function bitfieldMember(name: string, bitOffset: number, bits: number, type: KernelType): KernelMember {
  if (type.kind !== 'int') return { name, offset: Math.floor(bitOffset / 8), type: { kind: 'other', what: `the bitfield ${name}` } };
  for (const size of [type.size, 8].filter((x) => x >= type.size)) {
    const offset = Math.floor(bitOffset / (size * 8)) * size;
    const within = bitOffset - offset * 8;
    if (within + bits <= size * 8 && bits <= 64)
      return {
        name,
        offset,
        type: { kind: 'int', size: size as 1 | 2 | 4 | 8, signed: type.signed },
        bitfield: { bits, bitOffset: within },
      };
  }
  return { name, offset: Math.floor(bitOffset / 8), type: { kind: 'other', what: `the bitfield ${name} (it straddles 8-byte words)` } };
}

/** A kernel function's parameters and return type from its BTF FUNC, or why they cannot be had. */
export function btfFunction(btf: Btf, name: string): { params: KernelParam[]; returns: KernelType } | { none: string } {
  const ids = btf.funcs(name);
  if (ids.length === 0) return { none: `the target's BTF has no function ${name}` };
  const protos = new Set(ids.map((id) => (btf.type(id) as { type: number }).type));
  if (protos.size > 1) return { none: `the target's BTF has ${ids.length} functions named ${name} with different prototypes` };
  const proto = btf.type([...protos][0]);
  if (proto.kind !== 'func_proto') throw new BtfError(`FUNC ${name} does not point at a FUNC_PROTO`);
  const cache = new Map<number, KernelType>();
  const params: KernelParam[] = [];
  // Each parameter up to 8 bytes takes one argument slot (a register); after a larger one (a struct passed by value)
  // where the next ones are depends on the ABI's rules for it, so they are not offered by name.
  let shifted: string | undefined;
  proto.params.forEach((p, index) => {
    if (!p.name) return;
    const size = btf.sizeOf(p.type);
    params.push({
      name: p.name,
      index,
      type: shifted
        ? { kind: 'other', what: `${p.name} (after ${shifted}, which is larger than a register, its slot is unknown)` }
        : kernelType(btf, p.type, cache),
    });
    if (size > 8) shifted ??= p.name;
  });
  return { params, returns: kernelType(btf, proto.returnType, cache) };
}

/**
 * The one text symbol `name` names in kallsyms (in `module` when given), or why a kprobe by name cannot be written
 * there. A name listed once, in a module, is that module's function (`module` says which: its BTF types it).
 */
export function kallsymsSymbol(k: Kallsyms, name: string, module?: string): { refused?: string; module?: string; address?: bigint } {
  const all = k.get(name) ?? [];
  const isText = (e: KallsymEntry) => e.type === 't' || e.type === 'T';
  const shown = (list: KallsymEntry[]) =>
    list
      .slice(0, 6)
      .map((e) => `${e.address ? `0x${e.address.toString(16)}` : '(address hidden)'}${e.module ? ` [${e.module}]` : ''}`)
      .join(', ') + (list.length > 6 ? ', …' : '');
  if (module !== undefined) {
    const mine = all.filter((e) => e.module === module);
    const text = mine.filter(isText);
    if (text.length === 1) return { module, address: text[0].address };
    if (!kallsymsModules(k).has(module))
      return {
        refused: `the module ${module} is not loaded on the target (/proc/kallsyms lists no symbol of [${module}]): load it (modprobe ${module}) and trace again`,
      };
    if (text.length > 1)
      return {
        refused: `${module}:${name} names ${text.length} functions of the module in the target's /proc/kallsyms (${shown(text)}): a kprobe by name would take one the kernel picks; with the module's .ko each can be told apart`,
      };
    if (mine.length)
      return { refused: `${module}:${name} is not a function in the target's /proc/kallsyms (its type there is '${mine[0].type}')` };
    const elsewhere = all.filter(isText);
    return {
      refused: `the module ${module} has no function ${name} in the target's /proc/kallsyms${elsewhere.length ? ` (${name} is at ${shown(elsewhere)}${elsewhere.every((e) => e.module) ? `: write ${elsewhere[0].module}:${name}` : ''})` : ''}`,
    };
  }
  const text = all.filter(isText);
  if (text.length === 0) {
    if (all.length) return { refused: `${name} is not a function in the target's /proc/kallsyms (its type there is '${all[0].type}')` };
    return { refused: `${name} is not in the target's /proc/kallsyms (no such kernel function, or it was inlined everywhere)` };
  }
  if (text.length > 1) {
    const inModules = [...new Set(text.flatMap((e) => (e.module ? [e.module] : [])))];
    return {
      refused: `${name} names ${text.length} functions in the target's /proc/kallsyms (${shown(text)}): a kprobe by name would take one the kernel picks; with a vmlinux of that kernel each can be told apart${inModules.length ? `; a module's is named MODULE:${name} (${inModules.map((m) => `${m}:${name}`).join(', ')})` : ''}`,
    };
  }
  return { ...(text[0].module ? { module: text[0].module } : {}), address: text[0].address };
}

/** The hidden task name every point fetches (as the DWARF path's). */
const COMM_ARG: CompiledArg = { name: 'probelens_comm', fetch: '$comm', type: 'string', display: 'string', hidden: true };

const displayOf = (type: string): CompiledArg['display'] =>
  type === 'string' || type === 'ustring' ? 'string' : type.startsWith('s') ? 'signed' : type.startsWith('x') ? 'hex' : 'unsigned';

/** What a function probed from BTF is armed at: its one entry, and inlined copies are unknown. */
export const NO_INLINED_NOTE = `one entry site (calls at copies inlined into other functions are unknown without the kernel's DWARF)`;

/**
 * One line per kernel function probed, saying where its probes came from (`do_sys_openat2: from the target's BTF
 * and kallsyms (no vmlinux); one entry site (…)` or `…: from vmlinux DWARF`), in the order first probed.
 */
export function kernelSourceLines(
  probes: ReadonlyArray<Pick<CompiledProbe, 'function' | 'kernelSource'> & { definition?: ProbeDefinition }>,
): string[] {
  const seen = new Map<string, string>();
  for (const p of probes) {
    if (!p.kernelSource || !p.function || seen.has(p.function)) continue;
    const module = p.definition?.target.type === 'kprobe' ? p.definition.target.module : undefined;
    const name = module ? `${module}:${p.function}` : p.function;
    seen.set(
      p.function,
      p.kernelSource === 'btf'
        ? `${name}: from ${module ? `the target's BTF (/sys/kernel/btf/${module} on /sys/kernel/btf/vmlinux) and kallsyms (no .ko)` : BTF_SOURCE}; ${NO_INLINED_NOTE}`
        : `${name}: from ${module ? `the module's DWARF (${module}.ko)` : DWARF_SOURCE}`,
    );
  }
  return [...seen.values()];
}

/**
 * Kernel probes for `specs` from the running kernel's BTF and kallsyms: `FUNC ARGS…` and `FUNC%return [$retval]`.
 * Refused (CompileError, before anything is written): lines, offsets, globs (they need the DWARF), a name
 * kallsyms does not list once as a function, one on the kprobe blacklist, arguments the BTF cannot type.
 */
export function compileKernelBtf(specs: Array<string | ProbeSpec>, k: RunningKernel, opts: CompileOptions = {}): CompiledProbe[] {
  const used = opts.usedEvents ?? new Set<string>();
  const out: CompiledProbe[] = [];
  for (const s of specs) {
    const spec = typeof s === 'string' ? parseSpec(s) : s;
    try {
      out.push(compileOne(spec, k, opts.group ?? UNBOUND_GROUP, used));
    } catch (e) {
      if (e instanceof KprobeSpecError || e instanceof BtfError) throw new CompileError(spec.text, e.message);
      throw e;
    }
  }
  return out;
}

function compileOne(spec: ProbeSpec, k: RunningKernel, group: string, used: Set<string>): CompiledProbe {
  const p = spec.point;
  if (p.kind !== 'function')
    throw new KprobeSpecError(
      `${p.kind === 'line' ? 'a line' : 'a USDT probe'} needs the kernel's DWARF: give the vmlinux instead of 'kernel'`,
    );
  if (p.glob) throw new KprobeSpecError(`a glob needs a vmlinux: name one function`);
  if (p.src !== undefined || p.relLine !== undefined || p.offset !== undefined)
    throw new KprobeSpecError(
      `${spec.text}: a source file, line or offset needs the kernel's DWARF (give the vmlinux); without it only the function's entry and %return`,
    );
  const fn = p.func;
  const found = k.kallsyms ? kallsymsSymbol(k.kallsyms, fn, p.module) : p.module ? { module: p.module } : {};
  if (found.refused) throw new KprobeSpecError(found.refused);
  const module = found.module;
  const qualified = module ? `${module}:${fn}` : fn;
  const btf = module ? moduleBtf(k, module) : k.btf;
  if (!k.kallsyms && btf.funcs(fn).length === 0)
    throw new KprobeSpecError(`the BTF has no function ${qualified} (and no kallsyms was read to find it by)`);
  if (k.blacklist instanceof Set && (k.blacklist.has(fn) || k.blacklist.has(fn.replace(/\..*$/, ''))))
    throw new KprobeSpecError(`${qualified} is on the kernel's kprobe blacklist (NOKPROBE_SYMBOL; /sys/kernel/debug/kprobes/blacklist)`);
  if (k.traceable && !k.traceable.has(qualified))
    throw new KprobeSpecError(
      `${qualified} is not in the kernel's available_filter_functions: it is notrace (it does not call __fentry__), and the kernel keeps kprobe events out of it`,
    );
  const proto = btfFunction(btf, fn);
  const kind = p.ret ? 'return' : 'entry';
  const args: CompiledArg[] = [];
  const warnings: string[] = [];
  if (!(k.blacklist instanceof Set))
    warnings.push(`the kprobe blacklist could not be read (${k.blacklist.unreadable}): the kernel's own refusal is the check`);
  for (const a of spec.args) args.push(...compileArg(a, proto, kind, fn));
  args.push(COMM_ARG);
  const event = uniqueEventName(`${fn}${p.ret ? '__return' : ''}`, used);
  const fetchArgs: FetchArg[] = args.map((a) => ({ name: a.name, fetch: a.fetch, type: a.type }));
  const definition: ProbeDefinition = {
    kind: p.ret ? 'r' : 'p',
    group,
    event,
    target: { type: 'kprobe', symbol: fn, offset: 0n, ...(module ? { module } : {}) },
    args: fetchArgs,
  };
  if (!k.kallsyms)
    warnings.push(`compiled without the target's kallsyms: the kernel checks that ${fn} names one function when the definition is written`);
  const address = found.address ?? 0n;
  return {
    event,
    group,
    definition,
    kind,
    spec: spec.text,
    function: fn,
    address,
    fileOffset: 0n,
    args,
    pairKey: pairKey(fn, address),
    pairBy: 'tid',
    warnings,
    kernelSource: 'btf',
  };
}

/** The split BTF of `module` (RunningKernel.modules), or why its functions cannot be typed. */
function moduleBtf(k: RunningKernel, module: string): Btf {
  const got = k.modules?.get(module);
  if (got === undefined)
    throw new KprobeSpecError(
      `the BTF of the module ${module} was not read (/sys/kernel/btf/${module}): a module's function is compiled from the target itself (--host, or this machine)`,
    );
  if ('unreadable' in got)
    throw new KprobeSpecError(
      `cannot read the module ${module}'s BTF on the target (${got.unreadable}): its kernel may lack CONFIG_DEBUG_INFO_BTF_MODULES`,
    );
  return got;
}

function compileArg(a: ProbeArg, proto: ReturnType<typeof btfFunction>, kind: 'entry' | 'return', fn: string): CompiledArg[] {
  const typed = (name: string, fetch: string, type: string): CompiledArg => ({ name, fetch, type, display: displayOf(type) });
  if (a.kind === 'raw') {
    const m = /^(.*?)(?::([a-z0-9]+(?:\[[0-9]+\])?|b[0-9]+@[0-9]+\/[0-9]+))?$/.exec(a.fetch)!;
    return [typed(a.name, m[1], m[2] ?? 'x64')];
  }
  if (a.kind === 'special') {
    if (a.which === 'comm') return [typed(a.name, '$comm', 'string')];
    if (a.which === 'retval') {
      if (kind !== 'return') throw new KprobeSpecError('$retval exists only at a return (`%return`)');
      const r = 'none' in proto ? undefined : proto.returns;
      const type = r?.kind === 'int' ? `${r.signed ? 's' : 'u'}${r.size * 8}` : r?.kind === 'pointer' ? 'x64' : 's64';
      return [typed(a.name, '$retval', type)];
    }
    if (a.which === 'params') {
      if (kind === 'return') throw new KprobeSpecError(`$params: arguments are read at the entry, not at a return`);
      if ('none' in proto) throw new KprobeSpecError(`${fn}: ${proto.none}, so its parameters are unknown`);
      return proto.params
        .filter((p) => p.type.kind === 'int' || p.type.kind === 'pointer')
        .map((p) => {
          const [x] = kprobeArgs(proto.params, [p.name], 'entry');
          return typed(x.name, x.fetch, x.type);
        });
    }
    throw new KprobeSpecError(`$vars needs the kernel's DWARF (BTF describes parameters only)`);
  }
  if ('none' in proto)
    throw new KprobeSpecError(`${a.text}: ${proto.none}, so its parameters are unknown (raw fetchargs such as %di still work)`);
  if (a.path.some((s) => s.op === '[]')) throw new KprobeSpecError(`${a.text}: array elements are not read through BTF yet`);
  // `:string` on a pointer the BTF tags `user` reads user memory (a kernel read there faults); `:ustring` always does.
  const type = a.type === 'string' ? 'str' : a.type;
  const word = `${a.base}${a.path.map((s) => ('field' in s ? `${s.op}${s.field}` : '')).join('')}${type ? `:${type}` : ''}`;
  const [x] = kprobeArgs(proto.params, [word], kind);
  return [{ ...typed(a.name, x.fetch, x.type), ...(x.type.startsWith('b') ? { display: x.signed ? 'signed' : 'unsigned' } : {}) }];
}

// Kernel probes: kprobe_events definitions for a kernel function, and the trace records they produce.
//
// A definition is symbol-relative (`p:GROUP/EVENT SYMBOL+OFFSET ARGS`, `r:GROUP/EVENT SYMBOL ARGS` for returns), so
// KASLR, which moves the kernel at every boot, does not matter. Offsets are BigInt end to end: kernel addresses
// exceed 2^53. Arguments are fetched at the function's entry by the kernel's own calling-convention accessors
// (`$argN`, 1-based), members through pointers as `+OFFSET($argN)`, and memory a `__user` pointer points at with
// `ustring` / `+uOFFSET(…)`: read as kernel memory it faults or reads garbage.
//
// This module takes the function, site and parameters in and gives definition text out; where the parameters come
// from (the kernel's DWARF, BTF) is the caller's business.

import { nameRecord } from '../../shared/names';

/** A parameter of a kernel function, as its debug information describes it. */
export interface KernelParam {
  name: string;
  /** 0-based position in the C prototype. */
  index: number;
  type: KernelType;
}

export type KernelType =
  | { kind: 'int'; size: 1 | 2 | 4 | 8; signed: boolean }
  | { kind: 'pointer'; size: 8; user: boolean; to?: KernelType }
  | { kind: 'struct'; name: string; members: KernelMember[] }
  /** A type no kprobe fetch reads as one value (a float, an array, a bitfield…): `what` says which, for messages. */
  | { kind: 'other'; what: string };

export interface KernelMember {
  name: string;
  /** Bytes from the struct's start (for a bitfield, of the integer that holds it). */
  offset: number;
  type: KernelType;
  /** A bitfield: its width, and its first bit within the integer at `offset` (of `type`'s size; little-endian). */
  bitfield?: { bits: number; bitOffset: number };
}

export interface KprobeArg {
  /** The field name in the event (a C identifier). */
  name: string;
  /** The fetcharg: `$arg2`, `+8($arg3)`, `+0($arg2)`… */
  fetch: string;
  /** The kernel type: s32, u64, x64, string, ustring, b3@5/32 (a bitfield)… */
  type: string;
  /** A signed bitfield (its `bN@…` type reads unsigned: shown sign-extended). */
  signed?: true;
}

export interface KprobePoint {
  group: string;
  event: string;
  /** The function's symbol (a clone's own, e.g. `foo.isra.0`). */
  symbol: string;
  /** A loadable module's name when the symbol is in one. */
  module?: string;
  /** Bytes from the symbol (0 for the entry). */
  offset: bigint;
  kind: 'entry' | 'return';
  args: KprobeArg[];
}

const IDENT = /^[A-Za-z_][A-Za-z0-9_]*$/;
const SYMBOL = /^[A-Za-z_][A-Za-z0-9_.]*$/;

export class KprobeSpecError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'KprobeSpecError';
  }
}

/** The kprobe_events line for one probe point. */
export function kprobeDefinition(p: KprobePoint): string {
  if (!IDENT.test(p.group) || !IDENT.test(p.event)) throw new KprobeSpecError(`not a group/event name: ${p.group}/${p.event}`);
  if (!SYMBOL.test(p.symbol)) throw new KprobeSpecError(`not a kernel symbol: ${JSON.stringify(p.symbol)}`);
  if (p.module !== undefined && !IDENT.test(p.module)) throw new KprobeSpecError(`not a module name: ${JSON.stringify(p.module)}`);
  if (p.offset < 0n) throw new KprobeSpecError(`negative offset ${p.offset} into ${p.symbol}`);
  // A return probe sits on the function's entry and fires at its return: the kernel takes no other offset.
  if (p.kind === 'return' && p.offset !== 0n) throw new KprobeSpecError(`a return probe on ${p.symbol} takes no offset (got +${p.offset})`);
  const where = `${p.module ? `${p.module}:` : ''}${p.symbol}${p.kind === 'entry' ? `+${p.offset.toString()}` : ''}`;
  const args = p.args.map((a) => {
    if (!IDENT.test(a.name)) throw new KprobeSpecError(`not a field name: ${JSON.stringify(a.name)}`);
    return `${a.name}=${a.fetch}:${a.type}`;
  });
  return [`${p.kind === 'entry' ? 'p' : 'r'}:${p.group}/${p.event}`, where, ...args].join(' ');
}

function scalarType(t: KernelType): string {
  if (t.kind === 'int') return `${t.signed ? 's' : 'u'}${t.size * 8}`;
  if (t.kind === 'pointer') return 'x64';
  if (t.kind === 'other') throw new KprobeSpecError(`${t.what} cannot be fetched as one value`);
  throw new KprobeSpecError(`a struct (${t.name}) is not one value: name one of its members`);
}

/**
 * The fetchargs for a spec's argument words at a function's entry: `NAME`, `NAME:TYPE` (`filename:ustring` reads
 * the string a user pointer points at, `:string` one in kernel memory), `NAME->MEMBER…` through pointers, and
 * `$retval` (return probes only). A pointer the debug information marks `__user` is read as a user string when
 * the spec asks for a string without saying which (`filename:str`).
 */
export function kprobeArgs(params: readonly KernelParam[], words: readonly string[], kind: 'entry' | 'return'): KprobeArg[] {
  const out: KprobeArg[] = [];
  for (const word of words) {
    const [expr, typeOverride] = splitType(word);
    if (expr === '$retval') {
      if (kind !== 'return') throw new KprobeSpecError('$retval exists only at a return (`%return`)');
      out.push({ name: 'retval', fetch: '$retval', type: typeOverride ?? 's64' });
      continue;
    }
    // At a return the registers that held the arguments hold something else: only $retval is meaningful.
    if (kind === 'return') throw new KprobeSpecError(`${expr}: arguments are read at the entry, not at a return`);
    const path = accessPath(expr);
    const param = params.find((p) => p.name === path[0].name);
    if (!param)
      throw new KprobeSpecError(`no parameter ${path[0].name} (the function has ${params.map((p) => p.name).join(', ') || 'none'})`);
    // The value is in the register `$argN` (`inMemory` undefined) or at `+inMemory(fetch)` once read through a pointer.
    let fetch = `$arg${param.index + 1}`;
    let inMemory: number | undefined;
    let type: KernelType = param.type;
    let user = false;
    let bitfield: KernelMember['bitfield'];
    const value = () => (inMemory === undefined ? fetch : `+${user ? 'u' : ''}${inMemory}(${fetch})`);
    for (const { op, name: member } of path.slice(1)) {
      let struct: KernelType;
      if (op === '->') {
        if (type.kind !== 'pointer' || !type.to || type.to.kind !== 'struct')
          throw new KprobeSpecError(`${expr}: ${path[0].name}${accessText(path, member)} is not a pointer to a struct`);
        fetch = value();
        user = type.user;
        inMemory = 0;
        struct = type.to;
      } else {
        // A member of a struct held in memory (`p->a.b`); a struct passed in registers has no address to read from.
        if (type.kind !== 'struct' || inMemory === undefined)
          throw new KprobeSpecError(`${expr}: ${path[0].name}${accessText(path, member)} is not a struct read through a pointer`);
        struct = type;
      }
      if (struct.kind !== 'struct') throw new KprobeSpecError(`${expr}: not a struct`);
      const m = struct.members.find((x) => x.name === member);
      if (!m) throw new KprobeSpecError(`${expr}: struct ${struct.name} has no member ${member}`);
      inMemory += m.offset;
      type = m.type;
      bitfield = m.bitfield;
    }
    fetch = value();
    let ktype: string;
    if (bitfield && typeOverride)
      throw new KprobeSpecError(`${expr} is a bitfield: it is read as its ${bitfield.bits} bits, give it no type`);
    if (bitfield && type.kind === 'int') {
      out.push({
        name: path.map((p) => p.name).join('_'),
        fetch,
        type: `b${bitfield.bits}@${bitfield.bitOffset}/${type.size * 8}`,
        ...(type.signed ? { signed: true as const } : {}),
      });
      continue;
    }
    if (typeOverride === 'ustring' || typeOverride === 'string' || typeOverride === 'str') {
      if (type.kind !== 'pointer') throw new KprobeSpecError(`${expr} is not a pointer: it cannot be read as a string`);
      ktype = typeOverride === 'str' ? (type.user ? 'ustring' : 'string') : typeOverride;
      fetch = `+0(${fetch})`;
    } else {
      ktype = typeOverride ?? scalarType(type);
    }
    out.push({ name: path.map((p) => p.name).join('_'), fetch, type: ktype });
  }
  return out;
}

/** `a->b.c` as its base and each step after it. */
function accessPath(expr: string): Array<{ op: '->' | '.' | ''; name: string }> {
  const out: Array<{ op: '->' | '.' | ''; name: string }> = [];
  const re = /(^|->|\.)([A-Za-z_][A-Za-z0-9_]*)/y;
  let m: RegExpExecArray | null;
  while (re.lastIndex < expr.length && (m = re.exec(expr))) out.push({ op: m[1] as '->' | '.' | '', name: m[2] });
  if (out.length === 0 || re.lastIndex !== expr.length || out[0].op !== '' || out.slice(1).some((s) => s.op === ''))
    throw new KprobeSpecError(`${expr}: not NAME, NAME->MEMBER or NAME->MEMBER.MEMBER`);
  return out;
}

/** The path up to (not including) `member`, for messages. */
function accessText(path: ReadonlyArray<{ op: string; name: string }>, member: string): string {
  const i = path.findIndex((p, j) => j > 0 && p.name === member);
  return path
    .slice(1, i < 0 ? undefined : i)
    .map((p) => `${p.op}${p.name}`)
    .join('');
}

function splitType(word: string): [string, string | undefined] {
  const i = word.lastIndexOf(':');
  return i < 0 ? [word, undefined] : [word.slice(0, i), word.slice(i + 1)];
}

/** One kprobe trace record: `COMM-PID [CPU] FLAGS TS: EVENT: (SYMBOL+0xOFF/0xLEN) name=value …`. */
export interface KprobeRecord {
  comm: string;
  pid: number;
  tgid?: number;
  cpu: number;
  ts: number;
  event: string;
  /** Where it fired, `do_sys_openat2+0x0/0x90`; for a return, where it returned to (`… <- SYMBOL` names the function). */
  at: string;
  returnedFrom?: string;
  /** Field values as printed (strings unquoted). */
  fields: Record<string, string>;
}

const RECORD =
  /^\s*(.*?)-(\d+)\s+(?:\(\s*(\d+|-+)\)\s+)?\[(\d+)\]\s+(?:\S{1,6}\s+)?(\d+(?:\.\d+)?):\s+([A-Za-z_][A-Za-z0-9_]*):\s+\(([^()\s]+?)(?:\s+<-\s+([^()\s]+))?\)(.*)$/s;

/**
 * Parses one record, or null for anything else. Field values are split by the field names the definition gave,
 * in order, so a string holding `x=y` or spaces stays whole.
 */
export function parseKprobeRecord(line: string, fieldNames: readonly string[]): KprobeRecord | null {
  const m = RECORD.exec(line);
  if (!m) return null;
  const rest = m[9];
  const fields: Record<string, string> = nameRecord();
  let pos = 0;
  for (let i = 0; i < fieldNames.length; i++) {
    const key = ` ${fieldNames[i]}=`;
    const at = rest.indexOf(key, pos);
    if (at < 0) return null;
    const start = at + key.length;
    const next = i + 1 < fieldNames.length ? rest.indexOf(` ${fieldNames[i + 1]}=`, start) : rest.length;
    if (next < 0) return null;
    let v = rest.slice(start, next);
    if (v.length >= 2 && v.startsWith('"') && v.endsWith('"')) v = v.slice(1, -1);
    fields[fieldNames[i]] = v;
    pos = next;
  }
  const tgid = m[3] && /^\d+$/.test(m[3]) ? Number(m[3]) : undefined;
  return {
    comm: m[1],
    pid: Number(m[2]),
    ...(tgid !== undefined ? { tgid } : {}),
    cpu: Number(m[4]),
    ts: Number(m[5]),
    event: m[6],
    at: m[7],
    ...(m[8] ? { returnedFrom: m[8] } : {}),
    fields,
  };
}

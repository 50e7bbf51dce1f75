// Record framing by a per-session secret. trace_pipe prints a traced program's text raw: the task name (`comm`,
// up to 15 bytes) at the start of each record and `string` arguments inside it may hold any byte but NUL, so
// newlines, `"`, text shaped like another record, another argument or a `CPU:N [LOST M EVENTS]` line. Every
// definition therefore carries immediate fetchargs (`\imm`, Linux 5.4+: `\imm-value` in tracefs README) whose
// value is a 64-bit secret the traced program never sees (it lives in this process and in root-only tracefs):
//   open       first, so the header (where the comm is) ends at the first occurrence of the secret;
//   after[i]   right after every string argument that is not the last, so a string ends only where `" NAME=SECRET`
//              follows, which its own content cannot spell;
//   end        last, so a record ends only at a line that ends with the secret.
// Non-string values (integers, hex, arrays of integers, `(fault)`) are printed by the kernel, never by the program.
import { randomBytes } from 'node:crypto';
import type { FetchArg, ProbeDefinition } from '../probes/definition';

/** The per-session secret that ends every framed record (see the header of this file). */
export interface Sentinel {
  name: string;
  /** The value as trace_pipe prints it (`0x…` for the x64 immediate). */
  printed: string;
}

export function isStringType(type: string): boolean {
  return type === 'string' || type === 'ustring' || type === 'symstr';
}

export interface FrameLayout {
  open: string;
  /** The marker after argument i, or undefined (not a string, or the last argument: `end` follows it). */
  after: Array<string | undefined>;
  end: string;
}

export function frameLayout(args: ReadonlyArray<{ name: string; type: string }>, base: string): FrameLayout {
  return {
    open: `${base}h`,
    after: args.map((a, i) => (isStringType(a.type) && i < args.length - 1 ? `${base}${i}` : undefined)),
    end: base,
  };
}

/** A fresh secret: the top bit set, so it always prints as 16 hex digits. */
export function newSentinel(name = '__pl'): Sentinel {
  const v = randomBytes(8).readBigUInt64LE(0) | (1n << 63n);
  return { name, printed: `0x${v.toString(16)}` };
}

/** An untyped $comm is a string to the kernel. */
const typeOf = (a: FetchArg): string => a.type ?? (a.fetch === '$comm' ? 'string' : '');

/**
 * `definition` with the framing fetchargs inserted. The parser derives the same layout from the event's schema,
 * whose arguments are the definition's.
 */
export function frameProbe(definition: ProbeDefinition, sentinel: Sentinel): ProbeDefinition {
  const layout = frameLayout(
    definition.args.map((a) => ({ name: a.name, type: typeOf(a) })),
    sentinel.name,
  );
  for (const a of definition.args) {
    if (a.name === layout.end || a.name === layout.open || layout.after.includes(a.name))
      throw new Error(`argument name '${a.name}' is reserved by ProbeLens (names starting with ${sentinel.name} frame the records)`);
  }
  const imm = { fetch: `\\${BigInt(sentinel.printed).toString(10)}`, type: 'x64' };
  const args: FetchArg[] = [{ name: layout.open, ...imm }];
  definition.args.forEach((a, i) => {
    args.push(a);
    const m = layout.after[i];
    if (m) args.push({ name: m, ...imm });
  });
  args.push({ name: layout.end, ...imm });
  return { ...definition, args };
}

/**
 * Raw definition text (`p:G/E PATH:OFF name=fetch[:type] …`, as the agent protocol's own tests write it) with the
 * framing fetchargs inserted; ProbeLens's own definitions are framed as structures (frameProbe).
 */
export function frameDefinition(definition: string, sentinel: Sentinel): string {
  const tokens = definition.split(' ');
  const args = tokens.slice(2).map((t) => {
    const eq = t.indexOf('=');
    const fetch = t.slice(eq + 1);
    const colon = fetch.lastIndexOf(':');
    return colon >= 0
      ? { name: t.slice(0, eq), fetch: fetch.slice(0, colon), type: fetch.slice(colon + 1) }
      : { name: t.slice(0, eq), fetch };
  });
  const framed = frameProbe({ kind: 'p', group: '', event: '', target: { type: 'kprobe', symbol: '', offset: 0n }, args }, sentinel);
  return [...tokens.slice(0, 2), ...framed.args.map((a) => `${a.name}=${a.fetch}${a.type ? `:${a.type}` : ''}`)].join(' ');
}

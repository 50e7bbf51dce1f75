// Counts per key (`trace --by KEY`): a probe's hits counted by the value of one of its integer arguments (`--by len`,
// by the argument's name as hits show it), by log2 buckets of that value (`--by len.log2`), by its return value
// (`--by retval`), by the task's name (`--by comm`), by the process (`--by pid`, its thread-group id) or the thread
// (`--by tid`) that made the call, or, for kernel functions, by the function that called them
// (`--by caller`: the return address at the entry, named by the vmlinux's symbols and the running kernel's KASLR
// offset, as the kernel's `.sym` names it; an inlined copy's caller is the function it is in). Streamed, the session
// counts each hit it receives; aggregated
// in the kernel, a hist trigger per key counts them there (`hist:keys=FIELD[.log2]:vals=hitcount`) and the session
// reads its table; `pid` and `tid` need none: the count trigger keys every hit by its thread (`common_pid`), and a
// thread's process is the target's (/proc for one still alive; saved_tgids, which record-tgid fills as threads run),
// as the stream's hits get theirs. Both give the same rows: a value and its hits (for `.log2`, bucket i holds [2^i, 2^(i+1)), bucket
// 0 also 0, as latency buckets do; the kernel rounds a power of two one bucket lower, so those agree within one).
// Tests: test/unit/core/session/keys.test.ts, test/vm/aggregate.test.ts
import { log2Bucket, type Hit, type HitValue } from '../../shared/hit';
import type { CompiledProbe } from '../probes/compiler';
import { nameRecord } from '../../shared/names';

export interface KeySpec {
  /** As the user wrote it: `comm`, `len`, `len.log2`, `retval`. */
  text: string;
  /** The hit's argument (or `comm`, `retval`, `pid`, `tid`, `caller`). */
  name: string;
  log2: boolean;
}

/** The field a hist trigger keys on for `comm`: the task name every ProbeLens probe fetches. */
export const COMM_FIELD = 'probelens_comm';
/** What `--by caller` counts under when a return probe's trampoline stands in for the return address. */
export const HIDDEN_CALLER = '(hidden by a return probe)';

/**
 * A caller as counted: a return probe on the function (this session's, defined first, never: see traceSession's
 * define; another tracer's or session's, armed later, may) leaves its trampoline where the return address was.
 */
export function callerLabel(name: string): string {
  return /^(arch_rethook_trampoline|__kretprobe_trampoline|kretprobe_trampoline|rethook_trampoline)$/.test(name) ? HIDDEN_CALLER : name;
}

/** The field a hist trigger keys on (`.sym`) for `caller`: a kernel entry's return address (compiler CALLER_ARG). */
export const CALLER_FIELD = 'probelens_caller';

/** Keys that are the calling task's (or call's), not an argument's: no `.log2`. */
const TASK_KEYS = new Set(['comm', 'caller', 'pid', 'tid']);

/** Keys the kernel counts with the count trigger itself (per thread), needing no trigger of their own. */
export const isThreadKey = (k: Pick<KeySpec, 'name'>): boolean => k.name === 'pid' || k.name === 'tid';

const KEY = /^([A-Za-z_][A-Za-z0-9_]{0,63})(\.log2)?$/;

/** A `--by` value, or an Error saying what a key is. */
export function parseKey(text: string): KeySpec {
  const m = KEY.exec(text);
  if (!m || (TASK_KEYS.has(m[1]) && m[2]))
    throw new Error(
      `--by ${JSON.stringify(text)}: a key is an integer argument's name as hits show it (len), its log2 buckets (len.log2), retval, comm, pid (the process), tid (the thread), or caller (kernel functions)`,
    );
  return { text, name: m[1], log2: !!m[2] };
}

/** The tracefs event field the kernel keys `k` on. */
export const keyField = (k: KeySpec): string => (k.name === 'comm' ? COMM_FIELD : k.name === 'caller' ? CALLER_FIELD : k.name);

function integer(v: HitValue | bigint | undefined): number | string | undefined {
  if (typeof v === 'number') return Number.isInteger(v) ? v : undefined;
  if (typeof v === 'bigint') return v >= BigInt(Number.MIN_SAFE_INTEGER) && v <= BigInt(Number.MAX_SAFE_INTEGER) ? Number(v) : v.toString();
  // Integers past 2^53 travel as decimal text (the JSON rule).
  if (typeof v === 'string' && /^-?\d+$/.test(v)) return Number.isSafeInteger(Number(v)) ? Number(v) : v;
  return undefined;
}

/** The value a hit counts under for `k` (undefined: the hit has no such value, and is not counted under it). */
export function keyValue(k: KeySpec, hit: Hit): number | string | undefined {
  if (k.name === 'comm') return hit.comm;
  if (k.name === 'caller') return hit.caller;
  if (k.name === 'pid') return hit.pid;
  if (k.name === 'tid') return hit.tid;
  const raw = k.name === 'retval' && hit.retval !== undefined ? hit.retval : hit.args[k.name];
  const v = integer(raw);
  if (v === undefined || !k.log2) return v;
  // A value past 2^53 is in the top buckets: its exponent is exact from its digits.
  if (typeof v === 'number') return log2Bucket(v);
  return v.startsWith('-') ? 0 : Math.min(63, BigInt(v).toString(2).length - 1);
}

/**
 * Refuses, before anything is armed, a key no probe of the trace fetches, or one that is text (only integers are
 * keys, and `comm`): a `--by` typo would otherwise count nothing without a word.
 */
export function checkKeys(keys: readonly KeySpec[], probes: readonly CompiledProbe[]): void {
  for (const k of keys) {
    if (k.name === 'comm') continue;
    if (isThreadKey(k)) {
      // An argument of that name would be counted silently as the task's id instead: say so, and how to have both.
      const arg = probes.find((p) => p.args.some((a) => a.name === k.name && !a.hidden));
      if (arg)
        throw new Error(
          `--by ${k.text} counts by the ${k.name === 'pid' ? 'process' : 'thread'} that made the call, but ${arg.function ?? arg.event} also fetches an argument '${k.name}': name that argument otherwise in the spec (${k.name[0]}=${k.name}) and count by it with --by ${k.name[0]}`,
        );
      continue;
    }
    if (k.name === 'caller') {
      const user = probes.filter((p) => p.kind === 'entry' && p.definition.target.type !== 'kprobe');
      if (user.length || !probes.some((p) => p.args.some((a) => a.name === CALLER_FIELD)))
        throw new Error(
          `--by caller counts kernel functions' calls by their caller${user.length ? ` (${user[0].function ?? user[0].event} is a user function: its caller would need the process's memory map)` : ': this trace has no kernel function entry placed from a vmlinux, whose symbols name the callers'}`,
        );
      continue;
    }
    const args = probes.flatMap((p) => p.args.filter((a) => a.name === k.name && !a.hidden));
    if (args.length === 0) {
      const names = [...new Set(probes.flatMap((p) => p.args.filter((a) => !a.hidden).map((a) => a.name)))];
      throw new Error(
        `--by ${k.text}: no probe of this trace fetches '${k.name}' (${names.length ? `its arguments: ${names.join(', ')}` : 'it fetches no argument'}; or comm, pid, tid)`,
      );
    }
    if (args.some((a) => a.display === 'string' || /string|\[/.test(a.type)))
      throw new Error(
        `--by ${k.text}: '${k.name}' is text or an array, not an integer; keys are integer arguments, retval, comm, pid or tid`,
      );
  }
}

export interface KeyRow {
  value: number | string;
  hits: number;
}

/** probe → key text → its rows (buckets ascending for `.log2`, else most hits first). */
export type KeyTables = Record<string, Record<string, KeyRow[]>>;

/** Rows in the order they are shown: log2 buckets ascending; otherwise most hits first, then by value. */
export function sortRows(k: Pick<KeySpec, 'log2'>, rows: KeyRow[]): KeyRow[] {
  const byValue = (a: KeyRow, b: KeyRow): number =>
    typeof a.value === 'number' && typeof b.value === 'number' ? a.value - b.value : String(a.value).localeCompare(String(b.value));
  return rows.sort(k.log2 ? byValue : (a, b) => b.hits - a.hits || byValue(a, b));
}

/** Adds `rows` into `into` (same values summed). */
export function addRows(into: KeyRow[], rows: readonly KeyRow[]): void {
  for (const r of rows) {
    const same = into.find((x) => x.value === r.value);
    if (same) same.hits += r.hits;
    else into.push({ ...r });
  }
}

/** The streamed path's counter: every hit of every probe under each key it has a value for. */
export class KeyCounter {
  private readonly counts = new Map<string, Map<string, Map<number | string, number>>>();

  constructor(readonly keys: readonly KeySpec[]) {}

  add(hit: Hit): void {
    if (this.keys.length === 0) return;
    let byKey = this.counts.get(hit.probe);
    if (!byKey) this.counts.set(hit.probe, (byKey = new Map()));
    for (const k of this.keys) {
      const v = keyValue(k, hit);
      if (v === undefined) continue;
      let rows = byKey.get(k.text);
      if (!rows) byKey.set(k.text, (rows = new Map()));
      rows.set(v, (rows.get(v) ?? 0) + 1);
    }
  }

  tables(): KeyTables {
    const out: KeyTables = nameRecord();
    for (const [probe, byKey] of this.counts)
      for (const k of this.keys) {
        const rows = byKey.get(k.text);
        if (rows)
          (out[probe] ??= nameRecord())[k.text] = sortRows(
            k,
            [...rows].map(([value, hits]) => ({ value, hits })),
          );
      }
    return out;
  }
}

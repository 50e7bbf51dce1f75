// In-kernel aggregation with hist triggers (the kernel's Documentation/trace/histogram.rst): the trigger texts a
// session installs on its events, and the reading of a `hist` file's entries. Triggers are data the agent checks
// against a strict pattern (agent/hist.sh); this module only says what they are.
//
// Counts: one trigger per event, `hist:keys=common_pid[,probelens_site]:vals=hitcount`, so the kernel counts hits
// per thread and, on an event of several probe points, per point. Latency: the entry event keeps the time of the
// thread's last entry in a variable (`ts0`), each return event computes `lat` and generates the session's
// synthetic event with it (`onmatch(GROUP.ENTRY).trace(SYNTH,$lat)`), and a trigger on that synthetic event counts
// `lat.log2` buckets. Every timestamp is on the `mono` clock, as the streamed ones are. Keys (`--by`, see
// src/core/session/keys.ts): one more trigger per event and key, `hist:keys=FIELD[.log2]:vals=hitcount`; by caller,
// `hist:keys=[probelens_site,]probelens_caller.sym:vals=hitcount` (the kernel names the return address; per point, so
// the points at inlined copies, whose callers the site says, can be told apart).
import { SITE_ARG } from '../probes/compiler';
import { nameRecord } from '../../shared/names';

/** The count trigger of an event; `perSite` when its records carry SITE_ARG. */
export function countTrigger(perSite: boolean): string {
  return `hist:keys=common_pid${perSite ? `,${SITE_ARG}` : ''}:vals=hitcount`;
}

/**
 * Hits per value of one field (`--by`): its values, with `log2` their log2 buckets, with `sym` the kernel function
 * each names (per point too, with `perSite`).
 */
export function keyTrigger(field: string, log2: boolean, sym = false, perSite = false): string {
  return `hist:keys=${perSite ? `${SITE_ARG},` : ''}${field}${log2 ? '.log2' : sym ? '.sym' : ''}:vals=hitcount`;
}

/** The function a `.sym` key names (`[ffffffff8103e0b5] do_syscall_64`, a module's with ` [MODULE]` after it). */
export function symKeyName(text: string): string {
  return text.replace(/^\[[0-9a-f]+\]\s*/, '').trim();
}

/** On an entry event: the thread's last entry time. */
export function entryTrigger(): string {
  return 'hist:keys=common_pid:ts0=common_timestamp:clock=mono';
}

/** On a return event: the time since the thread's last entry of `entryEvent`, as synthetic event `synth`. */
export function exitTrigger(group: string, entryEvent: string, synth: string): string {
  return `hist:keys=common_pid:lat=common_timestamp-$ts0:clock=mono:onmatch(${group}.${entryEvent}).trace(${synth},$lat)`;
}

/** On the synthetic event: its latencies as log2 buckets. */
export function latencyTrigger(): string {
  return 'hist:keys=lat.log2:vals=hitcount';
}

/** The session's `n`th synthetic latency event (the agent accepts `GROUP_lN` only). */
export function synthName(group: string, n: number): string {
  return `${group}_l${n}`;
}

/** One entry of a hist file: its keys (numbers; a `.log2` key as its exponent) and its hitcount. */
export interface HistEntry {
  keys: Record<string, number>;
  /** Keys whose values are text (a task's name), trimmed of the kernel's padding. */
  text?: Record<string, string>;
  /** Every key's value as printed (digits of a number past 2^53 stay exact here). */
  raw?: Record<string, string>;
  hits: number;
}

export interface HistTable {
  /** The trigger that keeps this table, as the kernel prints it less its defaults and state (see sameTrigger). */
  trigger?: string;
  entries: HistEntry[];
  /** The kernel's totals: hits it counted, and hits it could not add to a full table. */
  hits: number;
  dropped: number;
}

/**
 * A trigger's text as the kernel prints it (`…:vals=hitcount:…:sort=hitcount:size=2048:clock=global [active]`) less
 * what it adds: comparable with the text written.
 */
export function normalTrigger(text: string): string {
  return text
    .replace(/\s+\[[a-z]+\]\s*$/, '')
    .replace(/:vals=hitcount(?=:|$)/, '')
    .replace(/:sort=[^:]*/, '')
    .replace(/:size=\d+/, '')
    .replace(/:clock=global/, '');
}

/**
 * The tables of a hist file, as the agent passes them on: each headed by `# trigger info: TRIGGER [active]`, then
 * entries `{ common_pid: 195, probelens_site: 0 } hitcount: 200` or `{ lat: ~ 2^15 } hitcount: 173`, and the totals
 * `Hits: N`, `Dropped: N`. Other lines are ignored.
 */
export function parseHist(lines: readonly string[]): HistTable[] {
  const tables: HistTable[] = [];
  let t: HistTable | undefined;
  const table = (): HistTable => {
    if (!t) tables.push((t = { entries: [], hits: 0, dropped: 0 }));
    return t;
  };
  for (const l of lines) {
    const info = /^# trigger info: (\S+)/.exec(l);
    if (info) {
      tables.push((t = { trigger: normalTrigger(l.slice('# trigger info: '.length)), entries: [], hits: 0, dropped: 0 }));
      continue;
    }
    const m = /^\{ (.+) \} hitcount:\s*(\d+)\s*$/.exec(l);
    if (m) {
      const keys: Record<string, number> = nameRecord();
      const entry: HistEntry = { keys, hits: Number(m[2]) };
      for (const part of m[1].split(',')) {
        const k = /^\s*([a-z0-9_.]+):\s*(?:~ 2\^)?(-?\d+)\s*$/.exec(part);
        if (k) {
          keys[k[1]] = Number(k[2]);
          (entry.raw ??= nameRecord())[k[1]] = k[2];
        }
        // A string key: the kernel pads it with spaces.
        const t = k ? undefined : /^\s*([a-z0-9_.]+): (.*?)\s*$/.exec(part);
        if (t) (entry.text ??= nameRecord())[t[1]] = t[2];
      }
      table().entries.push(entry);
      continue;
    }
    const tot = /^\s*(Hits|Dropped):\s*(\d+)\s*$/.exec(l);
    if (tot) {
      if (tot[1] === 'Hits') table().hits = Number(tot[2]);
      else table().dropped = Number(tot[2]);
    }
  }
  return tables;
}

/** The table `trigger` keeps, of a hist file's tables. */
export function tableOf(tables: readonly HistTable[], trigger: string): HistTable {
  return tables.find((t) => t.trigger === normalTrigger(trigger)) ?? { entries: [], hits: 0, dropped: 0 };
}

/**
 * The kernel's `.log2` key is ⌈log2 v⌉ (it rounds v up to a power of two): `~ 2^n` holds (2^(n-1), 2^n]. ProbeLens's
 * bucket i holds [2^i, 2^(i+1)), so the kernel's n is bucket n−1: the same values but for a power of two, which
 * the kernel counts one bucket lower than the stream does (agreement within one bucket, the contract's).
 */
export function bucketOfKernelLog2(n: number): number {
  return Math.max(0, n - 1);
}

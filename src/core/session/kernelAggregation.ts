// A session's in-kernel aggregation (`--aggregate`): which hist triggers and synthetic events its events get, and
// what the kernel's hist files say in the aggregates' terms (counts per probe, site and thread; latency buckets per
// probe; counts per key, `--by`). The trigger texts are src/core/tracefs/hist.ts's; the agent installs and removes them.
import { SITE_ARG, type CompiledProbe } from '../probes/compiler';
import {
  bucketOfKernelLog2,
  countTrigger,
  entryTrigger,
  exitTrigger,
  keyTrigger,
  latencyTrigger,
  parseHist,
  synthName,
  symKeyName,
  tableOf,
} from '../tracefs/hist';
import type { TracefsAgent } from '../tracefs/agentClient';
import type { KernelFigures } from './aggregates';
import { addRows, callerLabel, isThreadKey, keyField, sortRows, type KeyRow, type KeySpec } from './keys';
import { nameRecord } from '../../shared/names';

export interface HistPlan {
  /** Synthetic latency events, defined before the triggers that name them. */
  synths: string[];
  /** In the order they must be added (a variable before its readers; a synthetic event's trigger last). */
  triggers: Array<{ event: string; trigger: string }>;
  /** tracefs events whose hist files hold counts, and their count triggers. */
  countEvents: Array<{ event: string; trigger: string }>;
  /** synthetic event → the probe (of the entry) its latencies are counted under */
  latencyOf: Map<string, string>;
  /** Pairs the kernel cannot time (Go's, paired by goroutine): their probes, for a warning. */
  untimed: string[];
  /** Events counted per key (`--by`), with their key triggers. */
  keyEvents: Array<{ event: string; key: KeySpec; trigger: string }>;
}

/**
 * The triggers for `points` (tracefs event → its points by SITE_ARG number): a count on every event, and for each
 * entry event with return events paired to it, the entry's time per thread and a synthetic latency event with its
 * log2 buckets. The kernel keeps one entry time per thread and event: a call nested in another call of the same
 * entry event (recursion, or a shared event's other function) is timed from the inner entry.
 */
export function planHist(
  group: string,
  points: ReadonlyMap<string, readonly CompiledProbe[]>,
  probeName: (p: CompiledProbe) => string,
  keys: readonly KeySpec[] = [],
): HistPlan {
  const plan: HistPlan = { synths: [], triggers: [], countEvents: [], latencyOf: new Map(), untimed: [], keyEvents: [] };
  const all: CompiledProbe[] = [];
  for (const [event, list] of points) {
    const perSite = list.some((p) => p?.args.some((a) => a.name === SITE_ARG));
    plan.countEvents.push({ event, trigger: countTrigger(perSite) });
    plan.triggers.push({ event, trigger: countTrigger(perSite) });
    // Every point of an event fetches the same arguments: a key is counted where its field is fetched.
    const first = list.find((p) => p);
    for (const key of keys) {
      // By process or thread: the count trigger's own per-thread table (kernelFigures).
      if (isThreadKey(key)) continue;
      if (!first?.args.some((a) => a.name === keyField(key))) continue;
      const trigger = keyTrigger(keyField(key), key.log2, key.name === 'caller', perSite && key.name === 'caller');
      plan.keyEvents.push({ event, key, trigger });
      plan.triggers.push({ event, trigger });
    }
    for (const p of list) if (p) all.push(p);
  }
  // entry tracefs event → its return tracefs events, and the probe its latency counts under.
  const pairs = new Map<string, { exits: Set<string>; probe: string }>();
  for (const entry of all) {
    if (entry.kind !== 'entry' || !entry.pairKey) continue;
    const exits = all.filter((q) => q.kind === 'return' && q.pairKey === entry.pairKey);
    if (!exits.length) continue;
    if (entry.pairBy === 'goroutine') {
      if (!plan.untimed.includes(probeName(entry))) plan.untimed.push(probeName(entry));
      continue;
    }
    const e = entry.definition.event;
    const pair = pairs.get(e) ?? { exits: new Set<string>(), probe: probeName(entry) };
    for (const x of exits) pair.exits.add(x.definition.event);
    pairs.set(e, pair);
  }
  const exitTaken = new Set<string>();
  for (const [entryEvent, pair] of pairs) {
    // A return event times one entry event: a second would be a second trigger of the same keys.
    const exits = [...pair.exits].filter((x) => !exitTaken.has(x));
    if (!exits.length) continue;
    const synth = synthName(group, plan.synths.length);
    plan.synths.push(synth);
    plan.latencyOf.set(synth, pair.probe);
    plan.triggers.push({ event: entryEvent, trigger: entryTrigger() });
    for (const x of exits) {
      exitTaken.add(x);
      plan.triggers.push({ event: x, trigger: exitTrigger(group, entryEvent, synth) });
    }
    plan.triggers.push({ event: synth, trigger: latencyTrigger() });
  }
  return plan;
}

/**
 * A key's value as the hits show it, from the kernel's u64 digits: a signed field's wrapped negatives back below 0,
 * and a value past 2^53 as exact decimal text (the JSON rule).
 */
export function kernelValue(digits: string, signed: boolean): number | string {
  let v = BigInt(digits);
  if (signed && v >= 2n ** 63n) v -= 2n ** 64n;
  return v > -(2n ** 53n) && v < 2n ** 53n ? Number(v) : v.toString();
}

/** The events whose hist files the session reads: the counted ones and the synthetic ones. */
export const histEvents = (plan: HistPlan): string[] => [...plan.countEvents.map((c) => c.event), ...plan.synths];

/**
 * What the kernel's hist files (event → lines) say, in the aggregates' terms. `tgids`: thread → process, for
 * `--by pid` (a thread it does not hold counts under its own id, as trace_pipe prints one the kernel forgot).
 */
export function kernelFigures(
  hist: ReadonlyMap<string, readonly string[]>,
  plan: HistPlan,
  points: ReadonlyMap<string, readonly CompiledProbe[]>,
  probeName: (p: CompiledProbe) => string,
  keys: readonly KeySpec[] = [],
  tgids: ReadonlyMap<number, number> = new Map(),
): KernelFigures {
  const out: KernelFigures = { counts: [], latency: nameRecord(), dropped: 0 };
  for (const { event, trigger } of plan.countEvents) {
    // An entry event also holds the table of its entry times.
    const table = tableOf(parseHist(hist.get(event) ?? []), trigger);
    out.dropped += table.dropped;
    const list = points.get(event) ?? [];
    for (const e of table.entries) {
      const point = list[e.keys[SITE_ARG] ?? 0];
      if (!point) continue;
      out.counts.push({
        event,
        point: e.keys[SITE_ARG] ?? 0,
        probe: probeName(point),
        site: point.site,
        tid: e.keys.common_pid,
        hits: e.hits,
      });
    }
  }
  for (const { event, key, trigger } of plan.keyEvents) {
    const table = tableOf(parseHist(hist.get(event) ?? []), trigger);
    out.dropped += table.dropped;
    const list = points.get(event) ?? [];
    const point = list.find((p) => p);
    if (!point) continue;
    const field = keyField(key);
    const rows = (((out.keys ??= nameRecord())[probeName(point)] ??= nameRecord())[key.text] ??= []);
    const signed = /^s\d/.test(point.args.find((a) => a.name === field)?.type ?? '');
    const found: KeyRow[] = [];
    for (const e of table.entries) {
      const n = e.keys[field];
      const raw = e.raw?.[field];
      // A task's name is text even when it is all digits; a .log2 key is the kernel's exponent (0 as a huge one); a
      // value is the kernel's u64, which a signed field's negative values wrap to.
      let value: number | string | undefined;
      if (key.name === 'comm') value = e.text?.[field] ?? raw;
      else if (key.name === 'caller') {
        // At an inlined copy the top of the stack is no return address: its caller is the function it is in.
        const site = list[e.keys[SITE_ARG] ?? 0]?.site;
        value =
          site && site.kind !== 'entry' && site.kind !== 'clone' ? site.caller : e.text?.[field] && callerLabel(symKeyName(e.text[field]));
      } else if (key.log2) value = n === undefined ? undefined : n > 64 ? 0 : bucketOfKernelLog2(n);
      else value = raw === undefined ? undefined : kernelValue(raw, signed);
      if (value !== undefined) found.push({ value, hits: e.hits });
    }
    addRows(rows, found);
    sortRows(key, rows);
  }
  for (const key of keys.filter(isThreadKey)) {
    const byProbe = new Map<string, Map<number, number>>();
    for (const c of out.counts) {
      const id = key.name === 'pid' ? (tgids.get(c.tid) ?? c.tid) : c.tid;
      const rows = byProbe.get(c.probe) ?? byProbe.set(c.probe, new Map()).get(c.probe)!;
      rows.set(id, (rows.get(id) ?? 0) + c.hits);
    }
    for (const [probe, rows] of byProbe)
      ((out.keys ??= nameRecord())[probe] ??= nameRecord())[key.text] = sortRows(
        key,
        [...rows].map(([value, hits]) => ({ value, hits })),
      );
  }
  for (const synth of plan.synths) {
    const probe = plan.latencyOf.get(synth)!;
    const table = tableOf(parseHist(hist.get(synth) ?? []), latencyTrigger());
    out.dropped += table.dropped;
    const log2 = (out.latency[probe] ??= []);
    for (const e of table.entries) {
      // 0 ns has no logarithm: the kernel prints it as a huge exponent.
      const n = e.keys.lat ?? 0;
      const b = n > 64 ? 0 : bucketOfKernelLog2(n);
      while (log2.length <= b) log2.push(0);
      log2[b] += e.hits;
    }
  }
  return out;
}

/** Hits the kernel counted at one point of one event (what a streamed session's received records are). */
export const pointHits = (k: KernelFigures, event: string, point: number): number =>
  k.counts.reduce((n, c) => n + (c.event === event && c.point === point ? c.hits : 0), 0);

/**
 * The process of each thread the kernel counted, for `--by pid`: asked of the target's agent once per new thread
 * while aggregating (/proc, else saved_tgids), and settled at STOP by every saved_tgids entry.
 */
export class ThreadProcesses {
  readonly known = new Map<number, number>();
  private readonly asked = new Set<number>();

  /** Asks the agent about the threads of `k` not asked about before; true when it learnt any. */
  async learn(agent: Pick<TracefsAgent, 'tgids'>, k: KernelFigures): Promise<boolean> {
    const fresh = [...new Set(k.counts.map((c) => c.tid))].filter((t) => !this.known.has(t) && !this.asked.has(t));
    if (!fresh.length) return false;
    for (const t of fresh) this.asked.add(t);
    const found = await agent.tgids(fresh);
    for (const [t, p] of found) this.known.set(t, p);
    return found.size > 0;
  }

  /** STOP's saved_tgids: the kernel's own word, over anything learnt earlier. */
  settle(tgids: ReadonlyMap<number, number> | undefined): void {
    for (const [t, p] of tgids ?? []) this.known.set(t, p);
  }
}

/** Every hit the kernel counted. */
export const totalHits = (k: KernelFigures): number => k.counts.reduce((n, c) => n + c.hits, 0);

/**
 * Reads `plan`'s hist files every `everyMs` while `armed()` holds, one reading at a time (a slow target is not
 * queued up), and hands each to `onHist` (the kernel's figures are cumulative: each replaces the last). Returns
 * what stops it.
 */
export function readPeriodically(
  agent: Pick<TracefsAgent, 'readHist'>,
  plan: HistPlan,
  everyMs: number,
  armed: () => boolean,
  onHist: (hist: Map<string, string[]>) => void | Promise<void>,
): () => void {
  let reading = false;
  const timer = setInterval(() => {
    if (reading || !armed()) return;
    reading = true;
    agent
      .readHist(histEvents(plan))
      .then((h) => (armed() ? onHist(h) : undefined))
      .catch(() => undefined)
      .finally(() => (reading = false));
  }, everyMs);
  timer.unref();
  return () => clearInterval(timer);
}

// The workspace's probes as a reviewable file, `.vscode/probelens.json`: per binary (relative to the workspace
// when inside it), the probe specs in perf-probe syntax, each possibly disabled. Round-trips exactly what it
// understands and tells the user, line by line, what it could not read. A probe may be counted in the kernel
// (`"aggregate": true`: hist triggers, where the target has them) instead of streamed hit by hit.
// Tests: test/unit/vscode/model/probeSet.test.ts, test/unit/vscode/model/probeEdits.test.ts
import { isAbsolute, posix, relative } from 'node:path';
import { nameRecord } from '../../shared/names';

export interface ProbeSetEntry {
  spec: string;
  enabled: boolean;
  /** Counted in the kernel (hist triggers) rather than streamed; absent: streamed. */
  aggregate?: true;
}

export interface ProbeSet {
  /** binary path (workspace-relative or absolute) → its probes, in the order they were added */
  binaries: Record<string, ProbeSetEntry[]>;
}

export class ProbeSetFormatError extends Error {
  constructor(file: string, detail: string) {
    super(`${file}: ${detail}; fix the file by hand or delete it (ProbeLens rewrites it when probes change)`);
    this.name = 'ProbeSetFormatError';
  }
}

export const PROBE_SET_VERSION = 1;

export function emptyProbeSet(): ProbeSet {
  return { binaries: nameRecord() };
}

/** Parses the file's text (JSON; `//` comment lines are tolerated since people edit it by hand). */
export function parseProbeSet(text: string, file = 'probelens.json'): ProbeSet {
  let raw: unknown;
  try {
    raw = JSON.parse(text.replace(/^\s*\/\/.*$/gm, ''));
  } catch (e) {
    throw new ProbeSetFormatError(file, `not valid JSON (${(e as Error).message})`);
  }
  if (typeof raw !== 'object' || raw === null || Array.isArray(raw))
    throw new ProbeSetFormatError(file, 'expected an object with "binaries"');
  const o = raw as { version?: unknown; binaries?: unknown };
  if (o.version !== undefined && o.version !== PROBE_SET_VERSION)
    throw new ProbeSetFormatError(file, `version ${String(o.version)} is not supported (expected ${PROBE_SET_VERSION})`);
  const set = emptyProbeSet();
  if (o.binaries === undefined) return set;
  if (typeof o.binaries !== 'object' || o.binaries === null || Array.isArray(o.binaries))
    throw new ProbeSetFormatError(file, '"binaries" must map binary paths to lists of probes');
  for (const [bin, list] of Object.entries(o.binaries as Record<string, unknown>)) {
    if (!Array.isArray(list)) throw new ProbeSetFormatError(file, `"binaries"."${bin}" must be a list`);
    set.binaries[bin] = list.map((e, i) => {
      if (typeof e === 'string') return { spec: e, enabled: true };
      if (typeof e === 'object' && e !== null && typeof (e as { spec?: unknown }).spec === 'string') {
        const { spec, enabled, aggregate } = e as { spec: string; enabled?: unknown; aggregate?: unknown };
        if (aggregate !== undefined && typeof aggregate !== 'boolean')
          throw new ProbeSetFormatError(file, `"binaries"."${bin}"[${i}]."aggregate" must be true or false`);
        const entry: ProbeSetEntry = { spec, enabled: enabled === undefined ? true : enabled === true };
        if (aggregate) entry.aggregate = true;
        return entry;
      }
      throw new ProbeSetFormatError(file, `"binaries"."${bin}"[${i}] must be a spec string or {"spec", "enabled", "aggregate"}`);
    });
  }
  return set;
}

/** Stable text: enabled streamed probes as plain strings (easy to review), the others as objects. */
export function serializeProbeSet(set: ProbeSet): string {
  const binaries: Record<string, Array<string | object>> = nameRecord();
  for (const bin of Object.keys(set.binaries).sort()) {
    const list = set.binaries[bin];
    if (list.length === 0) continue;
    binaries[bin] = list.map((e) =>
      e.enabled && !e.aggregate
        ? e.spec
        : { spec: e.spec, ...(e.enabled ? {} : { enabled: false }), ...(e.aggregate ? { aggregate: true } : {}) },
    );
  }
  return `${JSON.stringify({ version: PROBE_SET_VERSION, binaries }, null, 2)}\n`;
}

/** The key a binary is stored under: workspace-relative (posix) when inside the workspace, else absolute. */
export function binaryKey(binaryPath: string, workspaceFolder: string | undefined): string {
  if (!workspaceFolder) return binaryPath;
  const rel = relative(workspaceFolder, binaryPath);
  return rel && !rel.startsWith('..') && !isAbsolute(rel) ? rel.split('\\').join('/') : binaryPath;
}

export function binaryFromKey(key: string, workspaceFolder: string | undefined): string {
  return isAbsolute(key) || !workspaceFolder ? key : posix.join(workspaceFolder, key);
}

/** Adds a spec (enabling it when already present); returns whether the set changed. */
export function addProbe(set: ProbeSet, bin: string, spec: string): boolean {
  const list = (set.binaries[bin] ??= []);
  const e = list.find((x) => x.spec === spec);
  if (e) {
    if (e.enabled) return false;
    e.enabled = true;
    return true;
  }
  list.push({ spec, enabled: true });
  return true;
}

export function removeProbe(set: ProbeSet, bin: string, spec: string): boolean {
  const list = set.binaries[bin];
  const i = list ? list.findIndex((x) => x.spec === spec) : -1;
  if (i < 0) return false;
  list!.splice(i, 1);
  if (list!.length === 0) delete set.binaries[bin];
  return true;
}

export function setProbeEnabled(set: ProbeSet, bin: string, spec: string, enabled: boolean): boolean {
  const e = set.binaries[bin]?.find((x) => x.spec === spec);
  if (!e || e.enabled === enabled) return false;
  e.enabled = enabled;
  return true;
}

/** Counts a probe in the kernel (`on`) or streams it; returns whether the set changed. */
export function setProbeAggregate(set: ProbeSet, bin: string, spec: string, on: boolean): boolean {
  const e = set.binaries[bin]?.find((x) => x.spec === spec);
  if (!e || !!e.aggregate === on) return false;
  if (on) e.aggregate = true;
  else delete e.aggregate;
  return true;
}

/**
 * The entries a binary's streaming session carries: all but those counted in the kernel, except where the target
 * cannot count them (`kernelCounts` false: no hist triggers), which stream instead.
 */
export function streamedEntries(set: ProbeSet, bin: string, kernelCounts: boolean): ProbeSetEntry[] {
  return (set.binaries[bin] ?? []).filter((e) => !e.aggregate || !kernelCounts);
}

/** The enabled specs counted in the kernel, each by a session of its own (none where the target cannot). */
export function aggregatedSpecs(set: ProbeSet, bin: string, kernelCounts: boolean): string[] {
  return kernelCounts ? (set.binaries[bin] ?? []).filter((e) => e.enabled && e.aggregate).map((e) => e.spec) : [];
}

export function enabledSpecs(set: ProbeSet, bin: string): string[] {
  return (set.binaries[bin] ?? []).filter((e) => e.enabled).map((e) => e.spec);
}

/** What a running session has defined for one spec. */
export interface LiveSpecState {
  spec: string;
  enabled: boolean;
}

/** The in-place edits that turn a session's probes into the set's entries for its binary. */
export interface EditPlan {
  add: string[];
  remove: string[];
  enable: string[];
  disable: string[];
}

/**
 * Compares what a session has defined (`live`) with the set's entries for its binary (`wanted`): specs gone
 * from the set are removed, new enabled ones added, toggled ones enabled or disabled; a disabled spec that
 * was never defined stays so. `refused` specs (the compiler or kernel said no and nothing changed since) are
 * not tried again.
 */
export function planEdits(
  live: readonly LiveSpecState[],
  wanted: readonly ProbeSetEntry[],
  refused: ReadonlySet<string> = new Set(),
): EditPlan {
  const plan: EditPlan = { add: [], remove: [], enable: [], disable: [] };
  const liveBySpec = new Map(live.map((l) => [l.spec, l]));
  const wantedSpecs = new Set(wanted.map((w) => w.spec));
  for (const l of live) if (!wantedSpecs.has(l.spec)) plan.remove.push(l.spec);
  for (const w of wanted) {
    const l = liveBySpec.get(w.spec);
    if (!l) {
      if (w.enabled && !refused.has(w.spec) && !plan.add.includes(w.spec)) plan.add.push(w.spec);
    } else if (w.enabled && !l.enabled) plan.enable.push(w.spec);
    else if (!w.enabled && l.enabled) plan.disable.push(w.spec);
  }
  return plan;
}

/** Binaries whose entries differ between two sets (a hand edit or a checkout of the file touches only those). */
export function changedBinaries(before: ProbeSet, after: ProbeSet): string[] {
  const keys = new Set([...Object.keys(before.binaries), ...Object.keys(after.binaries)]);
  const same = (a: ProbeSetEntry[] = [], b: ProbeSetEntry[] = []) =>
    a.length === b.length && a.every((e, i) => e.spec === b[i].spec && e.enabled === b[i].enabled && !e.aggregate === !b[i].aggregate);
  return [...keys].filter((k) => !same(before.binaries[k], after.binaries[k])).sort();
}

// The workspace's probes as a reviewable file, `.vscode/probelens.json`: per binary (relative to the workspace
// when inside it), the probe specs in perf-probe syntax, each possibly disabled. Round-trips exactly what it
// understands and tells the user, line by line, what it could not read.
import { isAbsolute, posix, relative } from 'node:path';

export interface ProbeSetEntry {
  spec: string;
  enabled: boolean;
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
  return { binaries: {} };
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
        const en = (e as { enabled?: unknown }).enabled;
        return { spec: (e as { spec: string }).spec, enabled: en === undefined ? true : en === true };
      }
      throw new ProbeSetFormatError(file, `"binaries"."${bin}"[${i}] must be a spec string or {"spec", "enabled"}`);
    });
  }
  return set;
}

/** Stable text: enabled probes as plain strings (easy to review), disabled ones as objects. */
export function serializeProbeSet(set: ProbeSet): string {
  const binaries: Record<string, Array<string | ProbeSetEntry>> = {};
  for (const bin of Object.keys(set.binaries).sort()) {
    const list = set.binaries[bin];
    if (list.length === 0) continue;
    binaries[bin] = list.map((e) => (e.enabled ? e.spec : { spec: e.spec, enabled: false }));
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
    a.length === b.length && a.every((e, i) => e.spec === b[i].spec && e.enabled === b[i].enabled);
  return [...keys].filter((k) => !same(before.binaries[k], after.binaries[k])).sort();
}

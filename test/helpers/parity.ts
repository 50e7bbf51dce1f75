// Oracles for the corpus: a binary's symbol table and load segments (readelf), perf probe's own placement
// (`perf probe -x BIN -D FUNC`, a dry run that needs no root), and ProbeLens's `functions --json` with its sites.
// Shared by the corpus tier (a sample) and `npm run bench:parity` (everything).
import { execFile, spawn } from 'node:child_process';
import { promisify } from 'node:util';
import { functionsCommand } from '../../src/cli/commands/inspect';

const execFileP = promisify(execFile);

export interface Sym {
  name: string;
  address: bigint;
  size: bigint;
}

export interface ElfFacts {
  /** FUNC symbols with code (.symtab, else .dynsym), sorted by address. */
  funcs: Sym[];
  byName: Map<string, Sym[]>;
  /** Load segments, to turn addresses into the file offsets perf probe prints. */
  loads: { vaddr: bigint; offset: bigint; filesz: bigint }[];
}

export async function elfFacts(bin: string): Promise<ElfFacts> {
  const { stdout: syms } = await execFileP('readelf', ['-sW', bin], { maxBuffer: 512 << 20 });
  const funcs: Sym[] = [];
  let table = '';
  const seen = new Set<string>();
  for (const line of syms.split('\n')) {
    const t = /^Symbol table '([^']+)'/.exec(line);
    if (t) {
      table = t[1];
      continue;
    }
    // Num: Value Size Type Bind Vis Ndx Name
    const m = /^\s*\d+:\s+([0-9a-f]+)\s+(\d+|0x[0-9a-f]+)\s+FUNC\s+\S+\s+\S+\s+(\d+)\s+(\S+)/.exec(line);
    if (!m) continue;
    if (table === '.dynsym' && seen.size > 0) continue; // .symtab is a superset when present
    const name = m[4].replace(/@.*$/, '');
    const key = `${name}@${m[1]}`;
    if (seen.has(key)) continue;
    seen.add(key);
    funcs.push({ name, address: BigInt(`0x${m[1]}`), size: BigInt(m[2]) });
  }
  funcs.sort((a, b) => (a.address < b.address ? -1 : a.address > b.address ? 1 : 0));
  const byName = new Map<string, Sym[]>();
  for (const s of funcs) byName.set(s.name, [...(byName.get(s.name) ?? []), s]);
  const { stdout: ph } = await execFileP('readelf', ['-lW', bin]);
  const loads = [...ph.matchAll(/^\s*LOAD\s+0x([0-9a-f]+)\s+0x([0-9a-f]+)\s+0x[0-9a-f]+\s+0x([0-9a-f]+)/gm)].map((m) => ({
    offset: BigInt(`0x${m[1]}`),
    vaddr: BigInt(`0x${m[2]}`),
    filesz: BigInt(`0x${m[3]}`),
  }));
  return { funcs, byName, loads };
}

export function fileOffsetOf(facts: ElfFacts, address: bigint): bigint | undefined {
  const l = facts.loads.find((s) => address >= s.vaddr && address < s.vaddr + s.filesz);
  return l ? address - l.vaddr + l.offset : undefined;
}

/** The FUNC symbol whose code contains `address` (a sized one if several). */
export function symbolAt(facts: ElfFacts, address: bigint): Sym | undefined {
  let lo = 0;
  let hi = facts.funcs.length;
  while (lo < hi) {
    const mid = (lo + hi) >> 1;
    if (facts.funcs[mid].address <= address) lo = mid + 1;
    else hi = mid;
  }
  for (let i = lo - 1; i >= 0 && i >= lo - 64; i--) {
    const s = facts.funcs[i];
    if (address >= s.address && address < s.address + (s.size || 1n)) return s;
  }
  return undefined;
}

// --- ProbeLens's view -----------------------------------------------------------------------------------------

export type SiteKind = 'entry' | 'clone' | 'part' | 'inlined';
export interface SiteJson {
  kind: SiteKind;
  address: string;
  caller?: string;
  file?: string;
  line?: number;
}
export interface FunctionJson {
  name: string;
  linkageName: string;
  file: string | null;
  line: number | null;
  address: string | null;
  probeable: boolean;
  reason: string | null;
  sites?: SiteJson[];
}

/** `probelens functions BIN --json`, in this process. */
export async function probelensFunctions(bin: string): Promise<FunctionJson[]> {
  let text = '';
  await functionsCommand([bin, '--json'], { out: (s) => void (text += s) });
  return JSON.parse(text) as FunctionJson[];
}

export const SITES_MISSING =
  '`functions --json` lists no `sites` for any function: the sites model (a function is all of its sites) has not landed';

// --- perf probe's view ----------------------------------------------------------------------------------------

/**
 * Names perf probe 6.1 cannot take as a function spec: C++ qualified names (`ns::f`, its parser splits at ':'),
 * Go's `pkg.F`/`(*T).M` (the '.' reads as a file name), and compiler-made symbols.
 */
export function perfCannotParse(f: FunctionJson): boolean {
  return /[^A-Za-z0-9_]/.test(f.name) || f.linkageName.startsWith('_Z');
}

export type PerfAnswer = { offsets: bigint[] } | { error: string };

/**
 * perf probe's placement for each named function: the file offsets `perf probe -x BIN -D NAME` would arm.
 * Batched (one perf run parses the whole DWARF), split in halves when a batch fails, since one bad name fails
 * the whole run.
 */
export async function perfPlacement(bin: string, names: string[], batch = 64): Promise<Map<string, PerfAnswer>> {
  const out = new Map<string, PerfAnswer>();
  const run = async (group: string[]): Promise<void> => {
    if (group.length === 0) return;
    const args = ['probe', '-x', bin, '-q', ...group.flatMap((n) => ['-D', n])];
    try {
      const { stdout, stderr } = await execFileP('perf', args, { maxBuffer: 64 << 20 });
      const lines = `${stdout}\n${stderr}`.split('\n').filter((l) => /^p:/.test(l));
      // Events come in spec order, each spec's named after its function (event names are at most 63 characters),
      // its further probes with a _N suffix.
      let i = 0;
      for (const l of lines) {
        const m = /^p:[^/]+\/(\S+) \S+:0x([0-9a-f]+)/.exec(l);
        if (!m) continue;
        if (i + 1 < group.length && m[1] === group[i + 1].slice(0, 63)) i++;
        const prev = out.get(group[i]);
        out.set(group[i], { offsets: [...(prev && 'offsets' in prev ? prev.offsets : []), BigInt(`0x${m[2]}`)] });
      }
      for (const n of group) if (!out.has(n)) out.set(n, { error: 'perf probe printed no event' });
    } catch (e) {
      if (group.length === 1) {
        const err = e as { stderr?: string; message: string };
        out.set(group[0], { error: (err.stderr ?? err.message).trim().split('\n')[0] || 'perf probe failed' });
        return;
      }
      const half = group.length >> 1;
      await run(group.slice(0, half));
      await run(group.slice(half));
    }
  };
  for (let i = 0; i < names.length; i += batch) await run(names.slice(i, i + batch));
  return out;
}

// --- comparing the two ----------------------------------------------------------------------------------------

export type Reason =
  | 'perf-at-part' // perf arms a .part.N copy as its own instance; ProbeLens enters it only as the rule in docs/cli.md says
  | 'perf-at-cold' // perf placed a probe inside a .cold block
  | 'inlined-entry-differs' // the same inlined copy, a different choice of its entry address
  | 'perf-only-inlined' // perf found an inlined copy ProbeLens has no site for
  | 'ours-only-inlined' // ProbeLens arms an inlined copy perf does not
  | 'ours-only-clone'
  | 'ours-only-part'
  | 'ours-only-entry'
  | 'perf-only-other';

export interface Difference {
  side: 'perf-only' | 'ours-only';
  fileOffset: bigint;
  symbol: string;
  reason: Reason;
}

/** Compares one function's sites with perf's offsets; no differences means agreement. */
export function compareSites(facts: ElfFacts, sites: SiteJson[], perf: bigint[]): Difference[] {
  const ours = new Map<bigint, SiteJson>();
  for (const s of sites) {
    const off = fileOffsetOf(facts, BigInt(s.address));
    if (off !== undefined) ours.set(off, s);
  }
  const theirs = new Set(perf);
  const sym = (off: bigint) => {
    // perf prints file offsets; symbols are in addresses
    const l = facts.loads.find((s) => off >= s.offset && off < s.offset + s.filesz);
    return l ? symbolAt(facts, off - l.offset + l.vaddr) : undefined;
  };
  const oursOnly = [...ours.keys()].filter((o) => !theirs.has(o));
  const perfOnly = [...theirs].filter((o) => !ours.has(o));
  const diffs: Difference[] = [];
  const paired = new Set<bigint>();
  for (const o of oursOnly) {
    const s = ours.get(o)!;
    const container = sym(o);
    if (s.kind === 'inlined') {
      // The same copy with another entry: a perf-only address inside the same containing function.
      const mate = perfOnly.find((p) => !paired.has(p) && container && sym(p) === container);
      if (mate !== undefined) {
        paired.add(mate);
        diffs.push({ side: 'ours-only', fileOffset: o, symbol: container?.name ?? '?', reason: 'inlined-entry-differs' });
        continue;
      }
    }
    diffs.push({ side: 'ours-only', fileOffset: o, symbol: container?.name ?? '?', reason: `ours-only-${s.kind}` });
  }
  for (const p of perfOnly) {
    if (paired.has(p)) continue;
    const container = sym(p);
    const name = container?.name ?? '?';
    const reason: Reason = /\.part\.\d+/.test(name) ? 'perf-at-part' : /\.cold/.test(name) ? 'perf-at-cold' : 'perf-only-inlined';
    diffs.push({
      side: 'perf-only',
      fileOffset: p,
      symbol: name,
      reason: reason === 'perf-only-inlined' && !container ? 'perf-only-other' : reason,
    });
  }
  return diffs;
}

/** The placement rule: a function's out-of-line entry is its symbol's address (wherever a symbol exists). */
export function placementViolations(facts: ElfFacts, fns: FunctionJson[]): string[] {
  const bad: string[] = [];
  const entries = new Map<string, string>();
  for (const f of fns) {
    const sites = f.sites ?? [];
    if (f.probeable !== sites.length > 0) bad.push(`${f.name} (${f.file}:${f.line}): probeable=${f.probeable} with ${sites.length} sites`);
    for (const s of sites.filter((x) => x.kind === 'entry')) {
      const addr = BigInt(s.address);
      const at = symbolAt(facts, addr);
      if (at && /\.cold(\.\d+)?$/.test(at.name)) bad.push(`${f.name}: entry ${s.address} is inside ${at.name}`);
      const named = facts.byName.get(f.linkageName) ?? facts.byName.get(f.name);
      if (named && !named.some((n) => n.address === addr)) {
        const there = at ? ` (in ${at.name})` : '';
        bad.push(`${f.name}: entry ${s.address}${there}, its symbol at ${named.map((n) => `0x${n.address.toString(16)}`).join('/')}`);
      }
      const key = `${f.name}@${s.address}`;
      const where = `${f.file}:${f.line}`;
      if (entries.has(key)) bad.push(`${f.name} is listed twice at ${s.address} (${entries.get(key)} and ${where})`);
      entries.set(key, where);
    }
  }
  // Every function symbol is some function's entry (or one of its other sites): nothing with code goes missing.
  const covered = new Set(fns.flatMap((f) => (f.sites ?? []).map((s) => BigInt(s.address))));
  // Clones (.isra, .constprop) are entered by calls of their own; .part and .cold code is reached from its
  // function (docs/cli.md's rule says which .part entries are armed).
  // Go's ABI wrappers: of `pkg.F` and `pkg.F.abi0`, one forwards to the other and only the function itself is a site.
  const abiPartnerCovered = (name: string) => {
    const partner = name.endsWith('.abi0') ? name.slice(0, -5) : `${name}.abi0`;
    return (facts.byName.get(partner) ?? []).some((p) => covered.has(p.address));
  };
  for (const s of facts.funcs) {
    if (s.size === 0n || /\.(part|cold)(\.\d+)?$/.test(s.name) || covered.has(s.address) || abiPartnerCovered(s.name)) continue;
    bad.push(`symbol ${s.name} at 0x${s.address.toString(16)} is no function's site`);
  }
  return bad;
}

// --- perf probe armed for real ----------------------------------------------------------------------------------

/**
 * Arms each named function where `perf probe -x BIN -a GROUP:fN=NAME` places it (real uprobes, perf's own
 * placement: all of a function's probes are one event `GROUP:fN`). Batched like perfPlacement, split in halves
 * when a batch fails; returns each armed name's event and why the others could not be armed. Undo with perfDisarm.
 */
export async function perfArm(
  bin: string,
  group: string,
  names: string[],
  batch = 128,
): Promise<{ events: Map<string, string>; failed: Map<string, string> }> {
  const events = new Map<string, string>();
  const failed = new Map<string, string>();
  const run = async (first: number, group_: string[]): Promise<void> => {
    if (group_.length === 0) return;
    const args = ['probe', '-q', '-x', bin, ...group_.flatMap((n, i) => ['-a', `${group}:f${first + i}=${n}`])];
    try {
      await execFileP('perf', args, { maxBuffer: 64 << 20 });
      group_.forEach((n, i) => events.set(n, `${group}:f${first + i}`));
    } catch (e) {
      if (group_.length === 1) {
        const err = e as { stderr?: string; message: string };
        failed.set(group_[0], (err.stderr ?? err.message).trim().split('\n')[0] || 'perf probe failed');
        return;
      }
      // What a failed run may have added before it failed is removed before its halves are tried.
      const added = group_.flatMap((_, i) => ['-d', `${group}:f${first + i}`]);
      await execFileP('perf', ['probe', '-q', ...added]).catch(() => undefined);
      const half = group_.length >> 1;
      await run(first, group_.slice(0, half));
      await run(first + half, group_.slice(half));
    }
  };
  for (let i = 0; i < names.length; i += batch) await run(i, names.slice(i, i + batch));
  return { events, failed };
}

/** Removes every event of `group` that perfArm added. */
export async function perfDisarm(group: string): Promise<void> {
  await execFileP('perf', ['probe', '-q', '-d', `${group}:*`]).catch(() => undefined);
}

/**
 * `perf stat` counting every event of `group` in process `pid` (without one: in every process, for programs run
 * many times), started and attached (its first interval line printed) before this resolves; stop() ends it and
 * gives the count per event.
 */
export async function perfStat(group: string, pid?: number): Promise<{ stop(): Promise<Map<string, number>> }> {
  const who = pid === undefined ? ['-a'] : ['-p', String(pid)];
  const proc = spawn('perf', ['stat', '-x,', '-I', '200', '-e', `${group}:*`, ...who], { stdio: ['ignore', 'ignore', 'pipe'] });
  let text = '';
  const closed = new Promise<void>((r) => proc.on('close', () => r()));
  await new Promise<void>((resolve, reject) => {
    proc.stderr.setEncoding('utf8').on('data', (d: string) => {
      text += d;
      if (/^\s*[\d.]+,/m.test(text)) resolve();
    });
    proc.on('close', (code) => reject(new Error(`perf stat exited (${code}) before counting: ${text.trim()}`)));
  });
  return {
    async stop() {
      proc.kill('SIGINT');
      await closed;
      // Interval lines: TIME,COUNT,UNIT,EVENT,…: each interval's count since the last one.
      const counts = new Map<string, number>();
      for (const m of text.matchAll(/^\s*[\d.]+,(\d+|<not counted>),[^,]*,([^,]+),/gm))
        counts.set(m[2], (counts.get(m[2]) ?? 0) + (m[1] === '<not counted>' ? 0 : Number(m[1])));
      return counts;
    },
  };
}

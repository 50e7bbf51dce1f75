// npm run bench:parity -- --kernel VMLINUX
// Kernel placement beside `perf probe -k VMLINUX -D FUNC` (a dry run: it prints the kprobe definitions it would
// write, `p:probe/fdget_pos ksys_read+37`, from the vmlinux's DWARF and symbol table), as SYMBOL+OFFSET sets, for a
// fixed sample of the vmlinux's functions of three kinds chosen by a rule (see sample()); every difference is
// listed with its reason category, then docs/real-programs.md's table.
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { openBinary } from '../src/core/binary';
import type { BinaryIndex } from '../src/core/index/binaryIndex';
import { loadIndex } from '../src/core/index/load';
import type { IndexedFunction } from '../src/core/index/model';
import { compileProbes } from '../src/core/probes/compiler';
import { kernelImage } from '../src/core/probes/kernel';

const execFileP = promisify(execFile);

/** Functions sampled per kind. */
const PER_KIND = 12;
/** perf probe refuses more than 128 probe points; a sample stays well below. */
const MAX_SITES = 64;

type Kind = 'out-of-line' | 'clone' | 'inlined';

function kindOf(f: IndexedFunction): Kind | undefined {
  if (f.sites.length === 0) return undefined;
  if (f.sites.some((s) => s.kind === 'clone')) return 'clone';
  if (f.sites.some((s) => s.kind === 'entry')) return 'out-of-line';
  return f.sites.every((s) => s.kind === 'inlined') ? 'inlined' : undefined;
}

/**
 * The rule: functions with DWARF (a declaring file), a plain C name that names one function of the index (so
 * `FUNC` means the same code to both tools) and 1..MAX_SITES sites, by kind: `clone` has a clone site,
 * `out-of-line` an entry and no clone, `inlined` only inlined copies; in name order, PER_KIND evenly spaced from
 * each kind (the ((i + 1/2) · n / PER_KIND)-th).
 */
export function sample(index: BinaryIndex): Array<{ name: string; kind: Kind }> {
  const count = new Map<string, number>();
  for (const f of index.functions()) count.set(f.name, (count.get(f.name) ?? 0) + 1);
  const byKind = new Map<Kind, string[]>();
  for (const f of index.functions()) {
    if (!f.file || !/^[A-Za-z_][A-Za-z0-9_]*$/.test(f.name) || count.get(f.name) !== 1 || f.sites.length > MAX_SITES) continue;
    const k = kindOf(f);
    if (k) byKind.set(k, [...(byKind.get(k) ?? []), f.name]);
  }
  const out: Array<{ name: string; kind: Kind }> = [];
  for (const kind of ['out-of-line', 'clone', 'inlined'] as const) {
    const names = (byKind.get(kind) ?? []).sort();
    for (let i = 0; i < Math.min(PER_KIND, names.length); i++)
      out.push({ name: names[Math.floor(((i + 0.5) * names.length) / PER_KIND)], kind });
  }
  return out;
}

async function perfPoints(vmlinux: string, name: string): Promise<{ points: string[] } | { error: string }> {
  try {
    const { stdout, stderr } = await execFileP('perf', ['probe', '-k', vmlinux, '-D', name], { maxBuffer: 16 << 20 });
    const points = `${stdout}\n${stderr}`
      .split('\n')
      .map((l) => /^p:\S+ (\S+)/.exec(l)?.[1])
      .filter((p): p is string => p !== undefined);
    return { points };
  } catch (e) {
    const err = e as { stderr?: string; message: string };
    return { error: (err.stderr ?? err.message).trim().split('\n')[0] || 'perf probe failed' };
  }
}

export async function kernelParity(vmlinux: string): Promise<void> {
  const { index } = await loadIndex(vmlinux);
  const k = kernelImage(await openBinary(vmlinux));
  if (!k) throw new Error(`${vmlinux} is not a kernel image`);
  const address = new Map<string, bigint>();
  const size = new Map<string, bigint>();
  for (const s of k.funcs) {
    if (k.nameCount.get(s.name) !== 1) continue;
    address.set(s.name, s.address);
    size.set(s.name, s.size);
  }
  // perf writes a point whose function's name it cannot use (a weak alias) as `_text+OFFSET`; _text is where .text begins.
  const text = k.image.elf.section('.text');
  if (text) {
    address.set('_text', text.addr);
    size.set('_text', BigInt(text.size));
  }
  // perf probe runs on a machine whose own kernel is another one: each point it prints must name a symbol of this
  // vmlinux, inside that symbol's code, to be about this vmlinux.
  let perfPointsSeen = 0;
  const foreign: string[] = [];
  const at = (point: string): bigint | undefined => {
    const m = /^(.+)\+(\d+)$/.exec(point);
    const base = m ? address.get(m[1]) : undefined;
    return base === undefined ? undefined : base + BigInt(m![2]);
  };
  const holder = (point: string) => point.replace(/\+\d+$/, '');
  const rows = new Map<Kind, { n: number; agree: number; sites: number; diffs: Record<string, number> }>();
  const picked = sample(index);
  for (const kind of ['out-of-line', 'clone', 'inlined'])
    console.log(
      `sample\t${kind}\t${picked
        .filter((p) => p.kind === kind)
        .map((p) => p.name)
        .join(' ')}`,
    );
  for (const { name, kind } of picked) {
    const row = rows.get(kind) ?? { n: 0, agree: 0, sites: 0, diffs: {} };
    rows.set(kind, row);
    row.n++;
    const diff = (reason: string, detail: string) => {
      row.diffs[reason] = (row.diffs[reason] ?? 0) + 1;
      console.log(`${kind}\t${name}\t${reason}\t${detail}`);
    };
    let ours: string[] = [];
    let warnings: string[] = [];
    // Where DWARF says the copies begin: a point elsewhere is an entry the decoding of the holder added.
    const dwarfSites = new Set(index.findFunctions(name).flatMap((f) => f.sites.map((x) => x.address)));
    try {
      const probes = await compileProbes([name], index, { maxSites: 1000 });
      ours = probes.flatMap((p) =>
        p.definition.target.type === 'kprobe' ? [`${p.definition.target.symbol}+${p.definition.target.offset}`] : [],
      );
      warnings = probes.flatMap((p) => p.warnings);
    } catch (e) {
      warnings = [(e as Error).message];
    }
    row.sites += ours.length;
    const perf = await perfPoints(vmlinux, name);
    if ('error' in perf) {
      diff(
        /not found/.test(perf.error) ? 'perf probe finds no such function' : 'perf probe failed',
        `${perf.error} (ours: ${ours.join(' ')})`,
      );
      continue;
    }
    for (const p of perf.points) {
      perfPointsSeen++;
      const m = /^(.+)\+(\d+)$/.exec(p);
      const sz = m ? size.get(m[1]) : undefined;
      if (!m || sz === undefined || BigInt(m[2]) >= sz) foreign.push(p);
    }
    const oursOnly = ours.filter((p) => !perf.points.includes(p));
    const perfOnly = perf.points.filter((p) => !ours.includes(p));
    if (oursOnly.length === 0 && perfOnly.length === 0) row.agree++;
    const paired = new Set<string>();
    for (const o of oursOnly) {
      const same = perfOnly.find((p) => !paired.has(p) && at(p) !== undefined && at(p) === at(o));
      const mate = same ?? perfOnly.find((p) => !paired.has(p) && holder(p) === holder(o));
      if (mate) paired.add(mate);
      const a = at(o);
      const reason = same
        ? 'same address, another symbol'
        : mate
          ? 'another entry address in the same holder'
          : a !== undefined && !dwarfSites.has(a)
            ? 'ours only: an entry found by decoding the holder (duplicated path), not a DWARF entry pc'
            : 'ours only: a DWARF copy perf does not arm';
      diff(reason, `${o}${mate ? ` / perf ${mate}` : ''}`);
    }
    for (const p of perfOnly) {
      if (paired.has(p)) continue;
      const h = holder(p);
      const refused = warnings.find((w) => w.includes(`${h}+`) || w.includes(`${h} `));
      diff(
        /\.part\.\d+$/.test(h)
          ? 'perf at a .part'
          : /\.cold(\.\d+)?$/.test(h)
            ? 'perf in a .cold block'
            : refused
              ? 'refused by ProbeLens (kernel rule)'
              : 'perf only',
        `${p}${refused ? ` (${refused})` : ''}`,
      );
    }
  }
  const fmt = (r: Record<string, number>) =>
    Object.entries(r)
      .sort((a, b) => b[1] - a[1])
      .map(([reason, n]) => `${reason} ${n}`)
      .join('; ') || '—';
  console.log(
    `\nperf probe points: ${perfPointsSeen}, of which not inside a symbol of this vmlinux: ${foreign.length}${foreign.length ? ` (${foreign.slice(0, 5).join(' ')})` : ''}`,
  );
  console.log(
    '\n| kind (rule: see bench/parityKernel.ts) | functions | ProbeLens sites | same SYMBOL+OFFSET set as perf probe | differences by reason |',
  );
  console.log('|---|---|---|---|---|');
  for (const [kind, r] of rows) console.log(`| ${kind} | ${r.n} | ${r.sites} | ${r.agree} | ${fmt(r.diffs)} |`);
}

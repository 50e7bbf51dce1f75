// npm run bench:parity -- [redis-server|postgres|…] [--lines N] [--lines-only]
// npm run bench:parity -- --kernel VMLINUX: kernel functions beside perf probe -k (bench/parityKernel.ts)
// Every function of every corpus binary placed by ProbeLens (`functions --json` sites) beside `perf probe -D`
// (perf 6.1, a dry run), every difference listed with its reason category, then docs/real-programs.md's table; then line
// probes: N sampled source lines per C/C++ binary (default 300, half of them lines of inlined functions) beside
// `perf probe -D FILE:LINE`, with their table.
// Builds the corpus first if needed (test/helpers/corpus.ts). Not part of .ci/run: a full run takes a while.
import { loadIndex } from '../src/core/index/load';
import { kernelParity } from './parityKernel';
import { corpusProject, type CorpusName } from '../test/helpers/corpus';
import { compareLine, sampleLines } from '../test/helpers/lineParity';
import { compareSites, elfFacts, perfCannotParse, perfPlacement, probelensFunctions, type FunctionJson } from '../test/helpers/parity';

const BINARIES: Array<[CorpusName, string]> = [
  ['redis', 'redis-server'],
  ['postgres', 'postgres'],
  ['postgres', 'libpq.so'],
  ['ninja', 'ninja'],
  ['gofmt', 'gofmt'],
  ['sqlite', 'sqlite3'],
];

interface Row {
  binary: string;
  functions: number;
  sites: number;
  compared: number;
  agree: number;
  notCompared: Record<string, number>;
  differences: Record<string, number>;
}

async function one(project: CorpusName, name: string): Promise<Row> {
  const p = await corpusProject(project);
  const bin = p.binaries[name];
  const [facts, listed] = await Promise.all([elfFacts(bin), probelensFunctions(bin)]);
  // Before the sites model, a function was its one `address`: measured as a single entry site.
  const before = !listed.some((f) => f.sites);
  const fns = before
    ? listed.map((f) => ({ ...f, sites: f.address && f.probeable ? [{ kind: 'entry' as const, address: f.address }] : [] }))
    : listed;
  const row: Row = {
    binary: `${name} (${project} ${p.version})${before ? ', one address per function (no sites model)' : ''}`,
    functions: fns.length,
    sites: fns.reduce((n, f) => n + (f.sites?.length ?? 0), 0),
    compared: 0,
    agree: 0,
    notCompared: {},
    differences: {},
  };
  const skip = (why: string) => (row.notCompared[why] = (row.notCompared[why] ?? 0) + 1);
  const byName = new Map<string, FunctionJson[]>();
  for (const f of fns) {
    if (perfCannotParse(f)) skip('perf cannot parse the name (C++ ns::f, Go pkg.F)');
    else byName.set(f.name, [...(byName.get(f.name) ?? []), f]);
  }
  const names = [...byName.keys()].sort().filter((n) => {
    const k = byName.get(n)!.reduce((s, f) => s + (f.sites?.length ?? 0), 0);
    // perf probes only functions with debug info; asking it about others fails whole batches.
    if (!byName.get(n)!.some((f) => f.file)) {
      skip(k ? 'no DWARF (perf probes only functions with debug info)' : 'no code (both agree)');
      return false;
    }
    if (k > 128) skip('more than 128 sites (perf probe refuses)');
    return k <= 128;
  });
  const perf = await perfPlacement(bin, names, 200);
  for (const n of names) {
    const ans = perf.get(n)!;
    const sites = byName.get(n)!.flatMap((f) => f.sites ?? []);
    if ('error' in ans) {
      if (sites.length === 0) skip('no code (both agree)');
      else {
        skip('perf probe failed');
        console.log(`${name}\t${n}\tperf-failed\t${ans.error}`);
      }
      continue;
    }
    row.compared++;
    const diffs = compareSites(facts, sites, ans.offsets);
    if (diffs.length === 0) row.agree++;
    for (const d of diffs) {
      row.differences[d.reason] = (row.differences[d.reason] ?? 0) + 1;
      console.log(`${name}\t${n}\t${d.reason}\t${d.side} 0x${d.fileOffset.toString(16)} in ${d.symbol}`);
    }
  }
  return row;
}

interface LineRow {
  binary: string;
  sampled: number;
  inlined: number;
  placed: number;
  agree: number;
  agreeInlined: number;
  differences: Record<string, number>;
}

/** Line probes of one binary beside perf probe's, one perf run per line (perf fails a whole batch on one line). */
async function lines(project: CorpusName, name: string, count: number): Promise<LineRow> {
  const p = await corpusProject(project);
  const bin = p.binaries[name];
  const [{ index }, facts] = await Promise.all([loadIndex(bin), elfFacts(bin)]);
  const sample = sampleLines(index, p.srcDir, count);
  const row: LineRow = {
    binary: `${name} (${project} ${p.version})`,
    sampled: sample.length,
    inlined: sample.filter((s) => s.inlined).length,
    placed: 0,
    agree: 0,
    agreeInlined: 0,
    differences: {},
  };
  for (const s of sample) {
    const c = await compareLine(bin, facts, index, p.srcDir, s.file, s.line, s.inlined);
    if (c.perf) row.placed++;
    if (c.differences.length === 0) {
      row.agree++;
      if (s.inlined) row.agreeInlined++;
    }
    for (const d of c.differences) {
      row.differences[d.reason] = (row.differences[d.reason] ?? 0) + 1;
      const where = d.address === undefined ? (c.perfError ?? '') : `0x${d.address.toString(16)} in ${d.symbol ?? '?'}`;
      console.log(`${name}\t${c.spec}\t${d.reason}\t${d.side} ${where}`);
    }
  }
  return row;
}

async function main(): Promise<void> {
  const argv = process.argv.slice(2);
  const ki = argv.indexOf('--kernel');
  if (ki >= 0) return kernelParity(argv[ki + 1]);
  const li = argv.indexOf('--lines');
  const lineCount = li >= 0 ? Number(argv[li + 1]) : 300;
  const linesOnly = argv.includes('--lines-only');
  const only = (li >= 0 ? argv.filter((_, i) => i !== li && i !== li + 1) : argv).filter((a) => a !== '--lines-only');
  const rows: Row[] = [];
  const lineRows: LineRow[] = [];
  for (const [project, name] of BINARIES) {
    if (only.length && !only.includes(name)) continue;
    if (name !== 'gofmt' && lineCount > 0) {
      const t1 = Date.now();
      lineRows.push(await lines(project, name, lineCount));
      console.error(`${name} lines: ${((Date.now() - t1) / 1000).toFixed(0)} s`);
    }
    if (linesOnly) continue;
    const t0 = Date.now();
    rows.push(await one(project, name));
    console.error(`${name}: ${((Date.now() - t0) / 1000).toFixed(0)} s`);
  }
  const fmt = (r: Record<string, number>) =>
    Object.entries(r)
      .sort((a, b) => b[1] - a[1])
      .map(([k, v]) => `${k} ${v.toLocaleString('en')}`)
      .join('; ') || '—';
  if (rows.length) {
    console.log('\n| corpus binary | functions | sites | compared with perf probe | agreement | differences by reason | not compared |');
    console.log('|---|---|---|---|---|---|---|');
  }
  for (const r of rows) {
    const pct = r.compared ? ((100 * r.agree) / r.compared).toFixed(1) : '—';
    console.log(
      `| ${r.binary} | ${r.functions.toLocaleString('en')} | ${r.sites.toLocaleString('en')} | ${r.compared.toLocaleString('en')} | ` +
        `${r.agree.toLocaleString('en')} (${pct}%) | ${fmt(r.differences)} | ${fmt(r.notCompared)} |`,
    );
  }
  if (lineRows.length === 0) return;
  // Lines are sampled: every k-th line with code of the program's own sources, plus as many lines of inlined functions.
  console.log(
    '\n| corpus binary | lines sampled (of inlined functions) | placed by perf probe | agreement (inlined lines) | differences by reason |',
  );
  console.log('|---|---|---|---|---|');
  for (const r of lineRows) {
    const pct = r.placed ? ((100 * r.agree) / r.placed).toFixed(1) : '—';
    console.log(
      `| ${r.binary} | ${r.sampled} (${r.inlined}) | ${r.placed} | ${r.agree} (${pct}%; ${r.agreeInlined}) | ${fmt(r.differences)} |`,
    );
  }
}

main().catch((e: Error) => {
  console.error(e.message);
  process.exit(1);
});

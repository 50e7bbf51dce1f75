// Exact counts on a real Rust program: ripgrep built by cargo at -C opt-level=3 with LLVM's PGO entry counters
// (test/corpus/profraw.ts), whose every run writes how often each function was entered, inlined copies included.
// The workload is rg searching the crates it was built from a dozen ways; a probe on a function must see exactly the calls
// the runs counted, from all its sites. Only functions of ripgrep and the crates cargo built are compared: the
// standard library comes precompiled, so its copies inlined there count nowhere. The same functions armed where
// `perf probe` places them (by symbol: it cannot parse a Rust path) must count fewer of them exactly.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { copyFileSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { loadIndex } from '../../src/core/index/load';
import type { IndexedFunction } from '../../src/core/index/model';
import { callSites } from '../../src/core/probes/resolve';
import { TraceSession } from '../../src/core/session/traceSession';
import { LocalTarget } from '../../src/core/target/local';
import type { Hit } from '../../src/core/tracefs/hitParser';
import { batches, EVERY, settle, Tally } from './batches';
import { corpusProjectOrSkip } from '../helpers/corpus';
import { elfFacts, perfArm, perfDisarm, perfStat } from '../helpers/parity';
import { requireTracefs } from '../helpers/tracefs';
import { entryCounterIncrements, readProfraw, symbolOfPgoName } from './profraw';

/**
 * A v0 symbol without its instantiating crate: the same instance of a generic made in two crates (`…E12is_canonical`
 * + `Cs…_10grep_regex`, or `B6_` naming its own crate regex_syntax) has two symbols, one DWARF name, and is one
 * function to the user.
 */
function withoutInstantiatingCrate(sym: string): string {
  // The crate that defines the function, as a back-reference (`B6_`): a path ends in an identifier or `E`, never so.
  const backref = /B[0-9A-Za-z]*_$/.exec(sym);
  if (backref) return sym.slice(0, backref.index);
  for (let i = sym.lastIndexOf('C'); i > 2; i = sym.lastIndexOf('C', i - 1)) {
    const m = /^C(?:s[0-9A-Za-z]*_)?(\d+)/.exec(sym.slice(i));
    if (m && sym.length - i - m[0].length === Number(m[1]) && /^[A-Za-z0-9_]+$/.test(sym.slice(i + m[0].length))) return sym.slice(0, i);
  }
  return sym;
}

/** Flat [lo, hi, lo, hi…] code ranges as [lo, hi) pairs. */
const pairs = (flat: readonly number[]): bigint[][] => {
  const out: bigint[][] = [];
  for (let i = 0; i + 1 < flat.length; i += 2) out.push([BigInt(flat[i]), BigInt(flat[i + 1])]);
  return out;
};
/**
 * PROBELENS_CORPUS_ONLY=REGEX traces only the candidates whose names it matches, in the first batch (to look again
 * at functions a run found wrong, in minutes): the figures of such a run are not the test's.
 */
const ONLY = process.env.PROBELENS_CORPUS_ONLY ? new RegExp(process.env.PROBELENS_CORPUS_ONLY) : undefined;
const MIN_FUNCTIONS = ONLY ? 1 : 300;

/** Hits per function from hits per event: an event's spec, or its probe's name where it has none. */
function bySpec(perEvent: ReadonlyMap<string, { probe: string; n: number }>, spec: ReadonlyMap<string, string>): Map<string, number> {
  const out = new Map<string, number>();
  for (const [event, { probe, n }] of perEvent) {
    const name = spec.get(event) ?? probe;
    out.set(name, (out.get(name) ?? 0) + n);
  }
  return out;
}
const CARGO_REGISTRY = '/usr/share/cargo/registry';
// Bounds that keep the stream loss-free and teardown short (≈45 ms of kernel time per armed event).
const MAX_HITS = 200_000;
const MAX_SITES = 1_000;

/**
 * What a user runs rg for, over the sources of the crates it was built from (Debian's cargo registry, 4,500 files):
 * literals, classes, words, case, context, multiline, JSON, globs, types, file lists, sorting.
 */
const RUNS: readonly string[][] = [
  ['-c', 'fn [a-z_]+\\(', '.'],
  ['-i', '-w', '--json', 'searcher', '-g', 'grep-*/**', '.'],
  ['-F', '-l', 'impl', '.'],
  ['-n', '-A2', '-B1', 'TODO|FIXME|XXX', '-g', 'regex*/**', '.'],
  ['-v', '-c', 'use ', '-g', 'ignore-*/**', '.'],
  ['--type', 'rust', '-o', '[A-Z][a-z]+Error', '.'],
  ['-U', '-c', 'struct \\w+ \\{\\n\\s+pub', '.'],
  ['-g', '*.md', '-r', 'RG', 'ripgrep|regex', '.'],
  ['--files', '.'],
  ['--stats', '-S', 'Matcher', '.'],
  ['--sort', 'path', '-e', 'Sink', '-e', 'Searcher', '-g', 'grep-*/**', '.'],
  ['--no-ignore', '--hidden', '-c', '-w', 'fn main', '.'],
];

/**
 * Runs the workload once; each run's profile goes to `dir/<tag>-N.profraw`. Returns the calls per symbol. A run may
 * take 2 min, and 20 µs more per hit the probes are expected to take (a batch of one function called millions of times).
 */
async function workload(rg: string, tree: string, dir: string, tag: string, hits = 0): Promise<Map<string, bigint>> {
  const timeout = 120_000 + Math.ceil(hits / 50);
  for (const [i, args] of RUNS.entries()) {
    const env = { ...process.env, LLVM_PROFILE_FILE: join(dir, `${tag}-${i}.profraw`) };
    // No stdin: rg reads it when given no path. Output is counted, not kept. One search thread: the calls a
    // parallel walk makes vary from run to run with the threads' timing, and so would the functions chosen.
    const child = spawn(rg, ['-j1', ...args], { cwd: tree, env, stdio: ['ignore', 'ignore', 'pipe'], timeout });
    let stderr = '';
    child.stderr.setEncoding('utf8').on('data', (d: string) => (stderr += d));
    const code = await new Promise<number | null>((resolve) => child.on('close', resolve));
    // 1 is rg's "no match"; anything else is a broken workload, which must fail rather than count less.
    if (code !== 0 && code !== 1) throw new Error(`rg ${args.join(' ')} failed (${code}): ${stderr.trim()}`);
  }
  const calls = new Map<string, bigint>();
  for (const f of readdirSync(dir).filter((f) => f.startsWith(`${tag}-`) && f.endsWith('.profraw')))
    for (const [name, n] of readProfraw(join(dir, f))) calls.set(symbolOfPgoName(name), (calls.get(symbolOfPgoName(name)) ?? 0n) + n);
  return calls;
}

test('instrumented ripgrep searching its tree: received hits equal the program’s own call counts, exactly', async (t) => {
  if (!requireTracefs(t)) return;
  const p = await corpusProjectOrSkip(t, 'ripgrep-instrumented');
  if (!p) return;
  // A private copy: uprobes sit on the inode, so nobody else's rg run hits our probes (or theirs ours).
  const dir = mkdtempSync(join(tmpdir(), 'probelens-corpus-rg-'));
  const rg = join(dir, 'rg');
  copyFileSync(p.binaries.rg, rg);
  const { index } = await loadIndex(rg, { noCache: true });

  // A function as the user names it is every definition of that name (one per instance of a generic, one per
  // codegen unit that kept a copy); the oracle names them by symbol.
  const defs = new Map<string, IndexedFunction[]>();
  const nameOf = new Map<string, string>();
  for (const f of index.functions()) {
    defs.set(f.name, [...(defs.get(f.name) ?? []), f]);
    if (f.linkageName) nameOf.set(withoutInstantiatingCrate(f.linkageName), f.name);
  }
  const ours = (file: string | undefined) =>
    file !== undefined && (file.startsWith(`${CARGO_REGISTRY}/`) || file.startsWith(`${p.srcDir}/`));
  const sitesOf = (n: string) => defs.get(n)!.flatMap((f) => callSites(f));
  const symbolsOf = (n: string) => new Set(defs.get(n)!.map((f) => f.linkageName!));
  const byName = (calls: Map<string, bigint>) => {
    const out = new Map<string, number>();
    for (const [sym, c] of calls) {
      const n = nameOf.get(withoutInstantiatingCrate(sym));
      if (n !== undefined) out.set(n, (out.get(n) ?? 0) + Number(c));
    }
    return out;
  };
  const dwarfEntryPcs = new Set(
    index.functions().flatMap((f) =>
      callSites(f)
        .filter((s) => s.kind === 'inlined')
        .map((s) => s.address),
    ),
  );

  const perfGroup = `probelens_perf_${process.pid}`;
  let session: TraceSession | undefined;
  const t0 = Date.now();
  const secs = () => `${Math.round((Date.now() - t0) / 1000)} s`;
  try {
    // 1. The program alone: what the workload calls (and a check of the oracle: one `main` per run).
    const first = await workload(rg, CARGO_REGISTRY, dir, 'alone');
    const called = byName(first);
    const firstBases = new Set([...first.keys()].map(withoutInstantiatingCrate));
    assert.equal(called.get('rg::main'), RUNS.length, 'the profiles count one call of rg::main per run');

    // Functions the workload calls, defined in ripgrep or a crate cargo built (not the standard library's own
    // crates, /rustc/… and /rust/deps/…, whose MIR comes optimized and inlined from its own build), every definition
    // instrumented (its symbol in the profile), at most 128 sites each; those with inlined copies first, then the
    // fewest sites, then the fewest calls.
    const candidates = [...called.keys()].filter((n) => {
      const fs = defs.get(n)!;
      if (fs.some((f) => !f.linkageName || !ours(f.file) || !firstBases.has(withoutInstantiatingCrate(f.linkageName)))) return false;
      const s = sitesOf(n).length;
      return s > 0 && s <= 128 && called.get(n)! > 0 && (!ONLY || ONLY.test(n));
    });
    const inlined = (n: string) => sitesOf(n).some((s) => s.kind === 'inlined');
    candidates.sort(
      (a, b) =>
        Number(inlined(b)) - Number(inlined(a)) ||
        sitesOf(a).length - sitesOf(b).length ||
        called.get(a)! - called.get(b)! ||
        a.localeCompare(b),
    );
    let chosen: string[] = [];
    let hits = 0;
    let sites = 0;
    for (const n of candidates) {
      if (hits + called.get(n)! > MAX_HITS || sites + sitesOf(n).length > MAX_SITES) continue;
      chosen.push(n);
      hits += called.get(n)!;
      sites += sitesOf(n).length;
    }
    t.diagnostic(`${candidates.length} candidate functions; chose ${chosen.length} (${sites} sites, ≈${hits} hits)`);
    const firstBatch = new Set(chosen);
    assert.ok(chosen.length >= MIN_FUNCTIONS, `at least ${MIN_FUNCTIONS} functions to compare (${chosen.length} qualify)`);

    t.diagnostic(`${secs()}: starting the session`);
    // 2. The same workload traced: all chosen functions armed at all their sites, in every rg process.
    const received: Hit[] = [];
    session = await TraceSession.start({
      target: new LocalTarget(),
      index,
      specs: chosen,
      bufferKb: 16384,
      maxSites: 128,
      // A function define refuses (no entry of any copy can be proved and armed) is set aside and named before
      // the workload runs: a miss.
      keepGoing: true,
      onHit: (h) => received.push(h),
    });
    const refused = new Map(session.refused.map((r) => [r.spec, r.error.message]));
    t.diagnostic(`define refused ${refused.size}:`);
    for (const why of [...refused.values()].slice(0, 10)) t.diagnostic(`  ${why.slice(0, 300)}`);
    chosen = chosen.filter((n) => !refused.has(n));
    const specOf = new Map(session.probes.map((pr) => [pr.event, pr.spec]));
    const siteOf = new Map(session.probes.map((pr) => [pr.event, pr.site]));
    const lowerBound = new Set(session.probes.filter((pr) => pr.lowerBound).map((pr) => pr.spec));
    t.diagnostic(`${lowerBound.size} of ${chosen.length} functions are counted as a lower bound: ${[...lowerBound].sort().join(', ')}`);
    t.diagnostic(`${secs()}: armed, running the workload`);
    const expected = byName(await workload(rg, CARGO_REGISTRY, dir, 'traced'));
    // The stream lags the programs: wait until it has delivered nothing new for two seconds.
    await settle(() => received.length, 4, 240);
    const summary = await session.stop();
    session = undefined;
    t.diagnostic(`${secs()}: stopped`);
    assert.equal(summary.lost, 0, `lost ${summary.lost} events: the comparison needs every hit`);

    const got = new Map<string, number>();
    const kindsRan = new Set<string>();
    for (const h of received) {
      const spec = specOf.get(h.event) ?? h.probe;
      got.set(spec, (got.get(spec) ?? 0) + 1);
      const site = (h as Hit & { site?: { kind?: string; address?: string } }).site ?? siteOf.get(h.event);
      if (!site?.kind) continue;
      kindsRan.add(site.kind);
      if (site.kind === 'inlined' && site.address !== undefined && !dwarfEntryPcs.has(BigInt(site.address))) kindsRan.add('inlined-path');
    }
    // Copies no debug information describes: code that increments a function's entry counter outside every range
    // DWARF gives the function's code (LLVM dropped the inlined scope and kept the lines, or gave the call's first
    // instructions the caller's location). ProbeLens cannot see those calls; such a function may count short, never
    // over, and is reported as the miss it is.
    const increments = await entryCounterIncrements(rg);
    const undescribed = new Map<string, bigint[]>();
    const undescribedOf = (n: string): bigint[] => {
      const ranges = defs
        .get(n)!
        .flatMap((f) => [
          ...(f.address !== undefined ? [[f.address, f.address + BigInt(f.size)]] : []),
          ...f.sites.flatMap((st) => pairs(st.ranges ?? [])),
        ]);
      const outside = [...increments]
        .filter(([pgo]) => nameOf.get(withoutInstantiatingCrate(symbolOfPgoName(pgo))) === n)
        .flatMap(([, at]) => at)
        .filter((a) => !ranges.some(([lo, hi]) => a >= lo && a < hi));
      return outside;
    };
    for (const n of chosen) {
      const outside = undescribedOf(n);
      if (outside.length > 0) undescribed.set(n, outside);
    }
    const over: string[] = [];
    const differ: string[] = [];
    const short: string[] = [];
    const unseen: string[] = [];
    const exactNames: string[] = [];
    for (const n of chosen) {
      const g = got.get(n) ?? 0;
      const e = expected.get(n) ?? 0;
      const kinds = [...new Set(sitesOf(n).map((s) => s.kind))].join(',');
      const line = `${n}: received ${g}, the program counted ${e} (${sitesOf(n).length} sites: ${kinds})`;
      if (g > e) over.push(line);
      else if (lowerBound.has(n)) short.push(line);
      else if (g !== e && undescribed.has(n))
        unseen.push(
          `${line}; counted where no DWARF describes it at ${undescribed
            .get(n)!
            .map((a) => `0x${a.toString(16)}`)
            .join(', ')}`,
        );
      else if (g !== e) differ.push(line);
      else exactNames.push(n);
    }
    const exact = exactNames.length;
    const generics = exactNames.filter((n) => symbolsOf(n).size > 1 || n.includes('<'));
    const closures = exactNames.filter((n) => n.includes('{closure#') && inlined(n));
    t.diagnostic(`${exact} of ${chosen.length} functions counted exactly; ${short.length} lower bounds (misses):\n  ${short.join('\n  ')}`);
    t.diagnostic(`${unseen.length} short where calls run in code no debug information describes (misses):\n  ${unseen.join('\n  ')}`);
    t.diagnostic(
      `of ${chosen.length + refused.size} functions the workload calls that were chosen: ${exact} exact, ${short.length + refused.size} ` +
        `named a lower bound or refused before tracing, ${unseen.length} short in undescribed code, ${over.length} over, ${differ.length} otherwise`,
    );
    t.diagnostic(
      `exact among them: ${generics.length} instances of generics, ${closures.length} closures inlined into their callers ` +
        `(${closures.slice(0, 3).join('; ')}); site kinds that ran: ${[...kindsRan].sort().join(', ')}`,
    );
    if (differ.length) t.diagnostic(`differ:\n  ${differ.join('\n  ')}`);
    assert.deepEqual(over, [], `${over.length} function(s) counted more calls than the program made`);
    assert.deepEqual(differ, [], `${differ.length} function(s) whose count was not called a lower bound differ`);
    assert.ok(exact >= MIN_FUNCTIONS, `at least ${MIN_FUNCTIONS} functions counted exactly (${exact})`);
    for (const k of ['entry', 'inlined'])
      assert.ok(kindsRan.has(k), `a ${k} site ran (kinds that ran: ${[...kindsRan].sort().join(', ')})`);
    assert.ok(generics.length > 0 && closures.length > 0, 'monomorphised generics and inlined closures among the exact counts');

    // 3. perf probe on the same functions: it cannot parse a Rust path (`::`), so each is armed by its symbols
    // (v0-mangled, which it can parse), the name a perf user has from `perf probe --funcs`; a function is counted
    // right when the sum over its symbols equals the program's count.
    const facts = await elfFacts(rg);
    const symbols = chosen.flatMap((n) => [...symbolsOf(n)].filter((s) => facts.byName.has(s)));
    t.diagnostic(`${secs()}: arming perf probe at ${symbols.length} symbols`);
    // One perf run for all of them where it can: each run reads the binary's whole DWARF.
    const perf = await perfArm(rg, perfGroup, symbols, 1024);
    const stat = await perfStat(perfGroup);
    const perfExpected = byName(await workload(rg, CARGO_REGISTRY, dir, 'perf'));
    const perfCounts = await stat.stop();
    await perfDisarm(perfGroup);
    t.diagnostic(
      `perf probe armed ${perf.events.size} symbols, ${perfCounts.size} events counted; refused ${perf.failed.size}: ${[...perf.failed]
        .slice(0, 5)
        .map(([n, why]) => `${n}: ${why}`)
        .join('; ')}`,
    );
    const perfRight: string[] = [];
    const perfOff: string[] = [];
    for (const n of chosen) {
      const evs = [...symbolsOf(n)].map((s) => perf.events.get(s)).filter((e) => e !== undefined);
      const g = evs.reduce((sum, e) => sum + (perfCounts.get(e) ?? 0), 0);
      if (evs.length > 0 && g === (perfExpected.get(n) ?? 0)) perfRight.push(n);
      else perfOff.push(`${n}: perf counted ${evs.length ? g : 'nothing (not armed)'}, the program ${perfExpected.get(n) ?? 0}`);
    }
    t.diagnostic(`perf probe: ${perfRight.length} of ${chosen.length} exact; otherwise:\n  ${perfOff.slice(0, 30).join('\n  ')}`);
    t.diagnostic(`counted exactly: ProbeLens ${exact} (none over), perf probe ${perfRight.length}, of ${chosen.length}`);
    assert.ok(exact > perfRight.length, `ProbeLens counts more functions exactly (${exact}) than perf probe (${perfRight.length})`);

    // 4. With PROBELENS_CORPUS_EVERY=1, every other candidate in batches within the same bounds, over the runs again.
    const rest = candidates.filter((n) => !firstBatch.has(n));
    if (!EVERY) t.diagnostic(`${rest.length} other candidates not traced (PROBELENS_CORPUS_EVERY=1 traces them)`);
    const tally = new Tally();
    let refusedRest = 0;
    let unseenRest = 0;
    let heapMost = 0;
    for (const batch of EVERY
      ? batches(
          rest,
          (n) => sitesOf(n).length,
          (n) => called.get(n)!,
          MAX_SITES,
          MAX_HITS,
        )
      : []) {
      // Counts per event, not the hits: a batch brings up to 200,000 of them and the run has about 150 batches.
      const perEvent = new Map<string, { probe: string; n: number }>();
      let received = 0;
      session = await TraceSession.start({
        target: new LocalTarget(),
        index,
        specs: batch,
        bufferKb: 16384,
        maxSites: 128,
        keepGoing: true,
        onHit: (h) => {
          received++;
          const e = perEvent.get(h.event);
          if (e) e.n++;
          else perEvent.set(h.event, { probe: h.probe, n: 1 });
        },
      });
      const no = new Set(session.refused.map((r) => r.spec));
      const spec = new Map(session.probes.map((pr) => [pr.event, pr.spec]));
      const bound = new Set(session.probes.filter((pr) => pr.lowerBound).map((pr) => pr.spec));
      const expected = batch.reduce((sum, n) => sum + called.get(n)!, 0);
      let counted: Map<string, number>;
      try {
        counted = byName(await workload(rg, CARGO_REGISTRY, dir, `every-${tally.batches}`, expected));
      } catch (e) {
        // A run past its limit: name the functions whose hits so far passed their calls in the run that chose them.
        const worst = [...bySpec(perEvent, spec)]
          .filter(([n, c]) => c > (called.get(n) ?? 0))
          .sort((a, b) => b[1] - a[1])
          .slice(0, 5);
        throw new Error(
          `${(e as Error).message} (batch ${tally.batches + 1}: ${batch.length} functions, ≈${expected} hits expected; ` +
            `hits past the chosen run's calls: ${worst.map(([n, c]) => `${n} ${c} > ${called.get(n) ?? 0}`).join('; ') || 'none'})`,
        );
      }
      await settle(() => received, 4, 240);
      const done = await session.stop();
      session = undefined;
      assert.equal(done.lost, 0, `lost ${done.lost} events: the comparison needs every hit`);
      const seen = bySpec(perEvent, spec);
      refusedRest += no.size;
      heapMost = Math.max(heapMost, process.memoryUsage().heapUsed);
      // Short where the program's counter runs in code no DWARF describes as the function: the miss it is.
      const unseen = batch.filter((n) => !no.has(n) && (seen.get(n) ?? 0) < (counted.get(n) ?? 0) && undescribedOf(n).length > 0);
      unseenRest += unseen.length;
      tally.add(
        batch.filter((n) => !no.has(n) && !unseen.includes(n)),
        seen,
        counted,
        bound,
      );
    }
    if (EVERY) {
      t.diagnostic(
        `${tally.summary(rest.length)}; ${refusedRest} refused by define, ${unseenRest} short in undescribed code; heap at most ${Math.round(heapMost / 2 ** 20)} MiB`,
      );
      assert.deepEqual(tally.over, [], 'no function is counted over its calls');
      assert.deepEqual(tally.off, [], 'every function not named a lower bound is counted exactly');
    }
  } finally {
    if (session) await session.stop().catch(() => undefined);
    await perfDisarm(perfGroup);
    rmSync(dir, { recursive: true, force: true });
  }
});

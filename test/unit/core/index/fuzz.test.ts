// Bounded fuzzing of the whole indexing path (ELF container, compressed sections, DWARF units, line tables,
// types, locations, CFI-free paths) with mutated real fixtures: no crash, no hang, no unbounded memory, and
// every failure one of our typed errors naming where it happened. Seeds are fixed, so a failure replays.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, execFileSync } from 'node:child_process';
import { createInterface } from 'node:readline';
import { resolve } from 'node:path';
import { fixtureOrSkip, type FixtureName } from '../../../helpers/fixtures';

const CHILD = resolve(__dirname, 'fuzz-child.ts');
const CASES = Number(process.env.PROBELENS_FUZZ_CASES ?? 1500);
// A hang never answers, so the bound only decides how long a real hang takes to report. It must also cover a
// child that is merely slow: on a loaded 2-core CI machine (load average 36 seen) one case took over 10 s.
const HANG_MS = 60_000;
const HEAP_MB = 512;

function hotRanges(bin: string): Array<[number, number]> {
  const out: Array<[number, number]> = [[0, 64]];
  const sh = execFileSync('readelf', ['-SW', bin], { encoding: 'utf8' });
  for (const m of sh.matchAll(/\]\s+(\.\S+)\s+\S+\s+[0-9a-f]+\s+([0-9a-f]+)\s+([0-9a-f]+)/g)) {
    if (/^\.(debug_|zdebug_|symtab|strtab|note|eh_frame|dynsym|dynstr)/.test(m[1]))
      out.push([parseInt(m[2], 16), parseInt(m[2], 16) + parseInt(m[3], 16)]);
  }
  return out;
}

async function runCases(
  bin: string,
  first: number,
  count: number,
): Promise<{ done: number; typed: Map<string, number>; failures: string[] }> {
  const child = spawn(
    process.execPath,
    [`--max-old-space-size=${HEAP_MB}`, '--import', 'tsx', CHILD, bin, JSON.stringify(hotRanges(bin)), String(first), String(count)],
    { stdio: ['ignore', 'pipe', 'pipe'] },
  );
  let stderr = '';
  child.stderr.on('data', (d) => (stderr += d));
  const typed = new Map<string, number>();
  const failures: string[] = [];
  let done = 0;
  let last = first - 1;
  let timer: NodeJS.Timeout | undefined;
  const arm = () => {
    clearTimeout(timer);
    timer = setTimeout(() => {
      failures.push(`hang: seed ${last + 1} gave no answer within ${HANG_MS} ms`);
      child.kill('SIGKILL');
    }, HANG_MS);
  };
  arm();
  const lines = createInterface({ input: child.stdout });
  lines.on('line', (l) => {
    arm();
    const { seed, outcome } = JSON.parse(l) as { seed: number; outcome: string };
    last = seed;
    done++;
    if (outcome.startsWith('untyped:')) failures.push(`seed ${seed}: ${outcome}`);
    else typed.set(outcome, (typed.get(outcome) ?? 0) + 1);
  });
  const code = await new Promise<number | null>((res) => child.on('exit', (c) => res(c)));
  clearTimeout(timer);
  if (code !== 0 && failures.length === 0) failures.push(`crash after seed ${last}: exit ${code}: ${stderr.slice(-2000)}`);
  return { done, typed, failures };
}

for (const name of ['calls-O2', 'calls-O2-zstd', 'rust-O2-dwarf5'] as FixtureName[]) {
  // The Rust program carries its standard library's DWARF (15,000 functions): one case indexes it whole, 2.5 s on a
  // quiet 2-core machine and many times that under load, so it gets fewer cases. Each case is bounded by HANG_MS,
  // so the test's own bound is theirs summed: a loaded machine makes it slow, never red.
  const n = name.startsWith('rust') ? Math.ceil(CASES / 30) : CASES;
  test(`fuzz: ${n} mutations of ${name} give only typed errors`, { timeout: n * HANG_MS }, async (t) => {
    const f = await fixtureOrSkip(t, name);
    if (!f) return;
    const r = await runCases(f.path, 1, n);
    assert.deepEqual(r.failures, [], r.failures.join('\n\n'));
    assert.equal(r.done, n, 'every case answered');
    // The mutations must actually reach the parsers: most cases fail with a typed error, some survive.
    const typedCount = [...r.typed].filter(([k]) => k.startsWith('typed:')).reduce((a, [, v]) => a + v, 0);
    assert.ok(typedCount > n / 10, `typed errors: ${JSON.stringify([...r.typed])}`);
    t.diagnostic(JSON.stringify(Object.fromEntries(r.typed)));
  });
}

// Child of fuzz.test.ts: indexes mutated copies of a binary, one case at a time, and reports each outcome
// on stdout (one JSON line per case) so the parent can tell a hang (silence) from a crash (exit) from a typed
// error (an answer). Cases are generated from a seed so a failure can be replayed exactly.
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { buildIndex } from '../../../../src/core/index/build';
import { openDebugAccess } from '../../../../src/core/index/debugAccess';

const TYPED = new Set([
  'NotElfError',
  'ElfFormatError',
  'UnsupportedArchError',
  'CoreFileError',
  'DwarfFormatError',
  'DwarfTypeLimitError',
  'CfiError',
  'DebugFileMismatchError',
  'ZstdDataError',
  'NoDebugInfoError',
]);

/** xorshift32: tiny, seedable, good enough to pick offsets. */
function rng(seed: number) {
  // Small consecutive seeds start xorshift in near-identical states: scramble, then warm it up.
  let x = Math.imul(seed ^ 0x9e3779b9, 0x85ebca6b) >>> 0 || 1;
  const next = () => {
    x ^= x << 13;
    x >>>= 0;
    x ^= x >>> 17;
    x ^= x << 5;
    x >>>= 0;
    return x / 0x100000000;
  };
  for (let i = 0; i < 16; i++) next();
  return next;
}

export function mutate(orig: Buffer, seed: number, hot: Array<[number, number]>): Buffer {
  const r = rng(seed);
  const b = Buffer.from(orig);
  const pick = () => {
    // Most mutations land in the interesting ranges (headers, section table, DWARF sections).
    if (r() < 0.8 && hot.length) {
      const [lo, hi] = hot[Math.floor(r() * hot.length)];
      return lo + Math.floor(r() * Math.max(1, hi - lo));
    }
    return Math.floor(r() * b.length);
  };
  const kind = r();
  if (kind < 0.15) return b.subarray(0, Math.floor(r() * b.length));
  const n = 1 + Math.floor(r() * 8);
  for (let i = 0; i < n; i++) {
    const at = pick();
    if (at >= b.length) continue;
    const k = r();
    if (k < 0.5) b[at] ^= 1 << Math.floor(r() * 8);
    else if (k < 0.75) b[at] = Math.floor(r() * 256);
    else {
      const v = [0, 0xffffffff, 0x7fffffff, 0x80000000, 1, 0xfffffffe][Math.floor(r() * 6)];
      if (at + 4 <= b.length) b.writeUInt32LE(v, at);
    }
  }
  return b;
}

if (require.main === module)
  void (async () => {
    const [bin, hotJson, first, count] = process.argv.slice(2);
    const orig = readFileSync(bin);
    const hot = JSON.parse(hotJson) as Array<[number, number]>;
    const dir = mkdtempSync(join(tmpdir(), 'probelens-fuzz-'));
    const path = join(dir, 'case');
    try {
      for (let seed = Number(first); seed < Number(first) + Number(count); seed++) {
        writeFileSync(path, mutate(orig, seed, hot));
        let outcome: string;
        try {
          const d = await buildIndex(path);
          // Also walk the on-demand paths a probe compiler uses: locals and locations at each function's entry.
          if (!d.symbolsOnly) {
            const acc = await openDebugAccess(path);
            for (const f of d.functions.slice(0, 20))
              if (f.dieOffset >= 0 && f.address !== undefined) acc.dwarf.variablesAt(f.dieOffset, Number(f.address));
          }
          outcome = 'ok';
        } catch (e) {
          const name = e instanceof Error ? e.name : typeof e;
          outcome = TYPED.has(name)
            ? process.env.PROBELENS_FUZZ_VERBOSE
              ? `typed:${name}: ${(e as Error).message}`
              : `typed:${name}`
            : `untyped:${name}: ${e instanceof Error ? `${e.message}\n${e.stack}` : String(e)}`;
        }
        process.stdout.write(`${JSON.stringify({ seed, outcome })}\n`);
      }
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  })();

// What the real-program corpus found in the function-sites model, reproduced on fixtures: a `.cold` block known
// only by its symbol is no function, Go's ABI wrappers are not a second definition, and a function with a
// concrete DIE in several units (C++ templates, COMDAT) is listed once with its sites deduplicated.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { copyFileSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { buildIndex } from '../../../../src/core/index/build';
import { fixtureOrSkip } from '../../../helpers/fixtures';
import { missing } from '../../../helpers/require';

/** nm: text symbols by name. */
function nm(bin: string): Map<string, bigint[]> {
  const m = new Map<string, bigint[]>();
  for (const l of execFileSync('nm', ['--defined-only', bin], { encoding: 'utf8', maxBuffer: 256 << 20 }).split('\n')) {
    const r = /^([0-9a-f]+) [TtWw] (\S+)$/.exec(l);
    if (r) m.set(r[2], [...(m.get(r[2]) ?? []), BigInt(`0x${r[1]}`)]);
  }
  return m;
}

test('a .cold block with only a symbol (no DWARF) is neither a function nor an entry', async (t) => {
  const f = await fixtureOrSkip(t, 'sites');
  if (!f) return;
  const dir = mkdtempSync(join(tmpdir(), 'probelens-cold-'));
  try {
    // The sites fixture without its DWARF: every function is known by its symbol alone, as in a library built
    // without -g (redis's bundled lua).
    const bin = join(dir, 'sites-nodebug');
    copyFileSync(f.path, bin);
    try {
      execFileSync('objcopy', ['--strip-debug', bin]);
    } catch (e) {
      missing(t, `objcopy: ${(e as Error).message}`);
      return;
    }
    const syms = nm(bin);
    const cold = [...syms.entries()].filter(([n]) => /\.cold(\.\d+)?$/.test(n));
    assert.ok(cold.length > 0, 'the fixture has .cold blocks');
    const idx = await buildIndex(bin);
    assert.ok(idx.symbolsOnly);
    const coldAddresses = new Set(cold.flatMap(([, a]) => a));
    const wrong = idx.functions.filter((fn) => /\.cold/.test(fn.name) || fn.sites.some((s) => coldAddresses.has(s.address)));
    assert.deepEqual(
      wrong.map((fn) => fn.name),
      [],
    );
    // The functions the blocks were split from are still there, at their symbols.
    for (const [n] of cold) {
      const base = n.replace(/\.cold(\.\d+)?$/, '');
      const fn = idx.functions.find((x) => x.name === base || x.linkageName === base);
      if (syms.has(base))
        assert.deepEqual(
          fn?.sites.map((s) => s.address),
          syms.get(base),
          base,
        );
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

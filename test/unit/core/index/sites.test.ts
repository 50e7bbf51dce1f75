// A function is all of its code, checked on the `sites` fixture (GCC -O2: .cold split, .part, .isra/.constprop
// clones, always_inline copies, same-name statics, an alias) against tools independent of our code: nm for
// symbols, readelf --debug-dump=info for inlined copies, perf probe -D for where a probe goes.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { buildIndex } from '../../../../src/core/index/build';
import { BinaryIndex } from '../../../../src/core/index/binaryIndex';
import { symbolLookup } from '../../../../src/core/index/sites';
import type { SymbolGroup } from '../../../../src/core/binary/symbols';
import { addressNumber } from '../../../../src/core/dwarf/format';
import type { IndexedFunction } from '../../../../src/core/index/model';
import { callSites, resolvePoint } from '../../../../src/core/probes/resolve';
import { parseSpec } from '../../../../src/core/probes/spec';
import { fixtureOrSkip, type Fixture, type FixtureName } from '../../../helpers/fixtures';
import { missing } from '../../../helpers/require';
import { funcSymbol } from '../../../helpers/symbols';

const sh = (cmd: string, args: string[]) => execFileSync(cmd, args, { encoding: 'utf8', maxBuffer: 256 << 20 });

/** nm: every name of every defined text symbol (statics of the same name: several addresses). */
function nm(bin: string): Map<string, bigint[]> {
  const m = new Map<string, bigint[]>();
  for (const l of sh('nm', ['--defined-only', bin]).split('\n')) {
    const r = /^([0-9a-f]+) [TtWw] (\S+)$/.exec(l);
    if (!r) continue;
    const l2 = m.get(r[2]) ?? [];
    l2.push(BigInt(`0x${r[1]}`));
    m.set(r[2], l2);
  }
  return m;
}

/** perf probe -D FUNC: the addresses perf would probe (without root: a dry run). */
function perfSites(bin: string, func: string): bigint[] | undefined {
  try {
    const out = execFileSync('perf', ['probe', '-x', bin, '-D', func], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] });
    return [...out.matchAll(/:0x([0-9a-f]+)/g)].map((m) => BigInt(`0x${m[1]}`)).sort((a, b) => (a < b ? -1 : 1));
  } catch {
    return undefined;
  }
}

/** readelf: DIE offsets of the DW_TAG_inlined_subroutine copies whose abstract origin is named `name`. */
function inlinedCount(bin: string, name: string): number {
  const dump = sh('readelf', ['--debug-dump=info', '--dwarf-depth=99', bin]);
  const origin = new RegExp(
    `<1><([0-9a-f]+)>: Abbrev Number: \\d+ \\(DW_TAG_subprogram\\)\\n(?:\\s+<[0-9a-f]+>\\s+DW_AT_\\w+\\s*:.*\\n)*?\\s+<[0-9a-f]+>\\s+DW_AT_name\\s*:.*\\b${name}\\n`,
    'g',
  );
  const offsets = [...dump.matchAll(origin)].map((m) => m[1]);
  let n = 0;
  for (const off of offsets)
    n += [...dump.matchAll(new RegExp(`DW_TAG_inlined_subroutine\\)\\n\\s+<[0-9a-f]+>\\s+DW_AT_abstract_origin: <0x${off}>`, 'g'))].length;
  return n;
}

const hex = (a: bigint) => `0x${a.toString(16)}`;
const kinds = (f: IndexedFunction) => f.sites.map((s) => s.kind);

async function load(t: Parameters<typeof fixtureOrSkip>[0], name: FixtureName): Promise<{ f: Fixture; idx: BinaryIndex } | undefined> {
  const f = await fixtureOrSkip(t, name);
  if (!f) return undefined;
  return { f, idx: new BinaryIndex(await buildIndex(f.path, { debugDirs: f.debugDirs, debugFile: f.debugFile })) };
}

function only(idx: BinaryIndex, name: string): IndexedFunction {
  const l = idx.function(name);
  assert.equal(l.length, 1, `${name}: listed once (got ${l.map((x) => `${x.file}:${x.line}`).join(', ')})`);
  return l[0];
}

test('sites: the GCC -O2 fixture really has each case (nm oracle), and each function is listed once with all its sites', async (t) => {
  const x = await load(t, 'sites');
  if (!x) return;
  const { f, idx } = x;
  const syms = nm(f.path);
  for (const s of ['cold_fn.cold', 'part_fn.part.0', 'part_ext.part.0', 'clone_fn.constprop.0.isra.0', 'alias_name'])
    assert.ok(syms.has(s), `the fixture has ${s} (gcc changed its decisions?)`);
  assert.equal(syms.get('same_name')?.length, 2, 'two statics named same_name');
  assert.ok(!syms.has('inl_fn'), 'inl_fn has no out-of-line copy');

  // .cold: the entry is the symbol's address, never the cold block (the lowest address of its ranges).
  const cold = only(idx, 'cold_fn');
  assert.deepEqual(kinds(cold), ['entry']);
  assert.equal(cold.address, syms.get('cold_fn')![0]);
  assert.ok(cold.address! > syms.get('cold_fn.cold')![0], 'the cold block is the lowest address');
  assert.ok(!idx.functions().some((g) => g.address === syms.get('cold_fn.cold')![0]), 'the cold block is no function of its own');

  // .part of a static: the head is inlined into each caller; the part is a site, not a function.
  const part = only(idx, 'part_fn');
  assert.deepEqual(kinds(part), ['part', 'inlined', 'inlined']);
  assert.equal(part.sites[0].address, syms.get('part_fn.part.0')![0]);
  assert.equal(part.sites[0].symbol, 'part_fn.part.0');
  assert.equal(part.sites.filter((s) => s.kind === 'inlined').length, inlinedCount(f.path, 'part_fn'));
  for (const s of part.sites.filter((s) => s.kind === 'inlined')) {
    assert.match(s.caller ?? '', /^drive_part_[ab]$/);
    assert.ok(s.file?.endsWith('/sites.c') && s.line! > 0, 'an inlined copy names its call site');
  }

  const ext = only(idx, 'part_ext');
  assert.deepEqual(kinds(ext), ['entry', 'part', 'inlined', 'inlined']);
  assert.equal(ext.address, syms.get('part_ext')![0]);
  assert.equal(ext.sites[1].address, syms.get('part_ext.part.0')![0]);

  const clone = only(idx, 'clone_fn');
  assert.deepEqual(kinds(clone), ['clone']);
  assert.equal(clone.sites[0].address, syms.get('clone_fn.constprop.0.isra.0')![0]);

  const inl = only(idx, 'inl_fn');
  assert.ok(inl.probeable, 'a function with inlined copies only is probe-able');
  assert.deepEqual(kinds(inl), ['inlined', 'inlined']);
  assert.equal(inl.sites.length, inlinedCount(f.path, 'inl_fn'));

  const both = only(idx, 'both_fn');
  assert.deepEqual(kinds(both), ['entry', 'inlined']);

  const alias = only(idx, 'alias_target');
  assert.deepEqual(alias.aliases, ['alias_name']);
  assert.equal(idx.function('alias_name')[0], alias, 'the alias names the same function');
  assert.equal(alias.sites[0].address, syms.get('alias_name')![0]);

  const same = idx.function('same_name');
  assert.equal(same.length, 2);
  assert.deepEqual(same.map((g) => g.address).sort(), [...syms.get('same_name')!].sort());
  assert.deepEqual(same.map((g) => g.file!.replace(/^.*\//, '')).sort(), ['sites.c', 'sites_other.c']);
});

test('sites: a function probe arms every call site, as perf probe -D places them (parts excepted, see callSites)', async (t) => {
  const x = await load(t, 'sites');
  if (!x) return;
  const { f, idx } = x;
  if (perfSites(f.path, 'main') === undefined) {
    missing(t, 'perf (linux-perf) for perf probe -D');
    return;
  }
  for (const name of ['cold_fn', 'part_fn', 'part_ext', 'clone_fn', 'inl_fn', 'both_fn', 'same_name', 'alias_target']) {
    const perf = perfSites(f.path, name)!;
    const ours = resolvePoint(parseSpec(name).point, idx);
    const armed = new Set(ours.map((s) => s.address));
    // perf also arms the .part beside the callers whose head was inlined (counting those calls twice), and
    // arms one probe per address where two inlined copies share one (counting once what ran twice).
    const parts = idx.function(name).flatMap((g) => g.sites.filter((s) => s.kind === 'part').map((s) => s.address));
    const expected = new Set(
      perf.filter((a) => !parts.includes(a) || idx.function(name).every((g) => callSites(g).some((s) => s.address === a))),
    );
    assert.deepEqual([...armed].sort().map(hex), [...expected].sort().map(hex), `${name}: armed sites = perf probe -D`);
    for (const s of ours) assert.equal(s.kind, 'entry');
  }
  // Two inlined copies at one address (alias_name(i) + alias_target(i)) are two calls: two probes.
  const alias = resolvePoint(parseSpec('alias_name').point, idx);
  assert.equal(alias.length, only(idx, 'alias_target').sites.length);
  // NAME@FILE narrows same-name statics to one.
  assert.equal(resolvePoint(parseSpec('same_name@sites_other.c').point, idx).length, 1);
});

test('placement: on every function of every C/C++/Rust/Go fixture, the out-of-line entry is its symbol address', async (t) => {
  for (const name of ['sites', 'calls-O2', 'many-O2', 'threads', 'usdt', 'cpp-O2', 'rust-O2', 'go'] as const) {
    const x = await load(t, name);
    if (!x) return;
    const syms = nm(x.f.debugFile ?? x.f.path);
    let checked = 0;
    for (const fn of x.idx.functions()) {
      const entry = fn.sites.find((s) => s.kind === 'entry');
      if (!entry || fn.dieOffset < 0) continue;
      const at = [fn.linkageName ?? fn.name, ...(fn.aliases ?? [])].flatMap((a) => syms.get(a) ?? []);
      if (!at.length) continue;
      assert.ok(
        at.includes(entry.address),
        `${name}: ${fn.name} entry ${hex(entry.address)} is not its symbol (${at.map(hex).join(', ')})`,
      );
      assert.equal(fn.address, entry.address);
      checked++;
    }
    assert.ok(checked > 3, `${name}: ${checked} functions checked`);
  }
});

test('symbol lookup: the names of a group looked up as a Map of the groups by address number answers', () => {
  const sym = funcSymbol;
  const group = (address: bigint, ...names: string[]): SymbolGroup => ({ address, size: 16n, symbols: names.map((n) => sym(n, address)) });
  const asMap = (groups: SymbolGroup[]) => new Map(groups.map((g) => [addressNumber(g.address), g.symbols.map((s) => s.name)]));
  const sorted = [group(0x1000n, 'a', 'a_alias'), group(0x1010n, 'b'), group(0xffffffff81000000n, 'k'), group(0xffffffff81000010n, 'k2')];
  // A kernel address folds onto 2^53 - 2^32 + 0x1000 (one number, two groups: the later one answers), and 2^53
  // lies above every folded address as a number though below them as an address.
  const same = [group(0x1000n, 'a'), group(2n ** 53n - 2n ** 32n + 0x1000n, 'unfolded'), group(0xffffffff00001000n, 'folds')];
  const unordered = [group(0x1000n, 'a'), group(2n ** 53n, 'above'), group(0xffffffff00001000n, 'folds'), group(0xffffffff00002000n, 'f2')];
  for (const groups of [sorted, same, unordered, []]) {
    const want = asMap(groups);
    const got = symbolLookup(groups);
    for (const a of [...want.keys(), 0, 0x1008, 0x1010 + 1, addressNumber(0xffffffff81000008n)]) {
      assert.deepEqual(got.get(a), want.get(a), `get ${a}`);
      assert.equal(got.has(a), want.has(a), `has ${a}`);
    }
  }
});

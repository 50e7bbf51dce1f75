// Line probes: which addresses a line arms and which copy of which function each is in. On the lines fixture
// (GCC -O2) against tools independent of our code (nm for the copies' symbols, perf probe -D where perf can
// answer), and on small hand-made indexes for the rules themselves (blocks, owners, the max-sites limit).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { join } from 'node:path';
import { buildIndex } from '../../../../src/core/index/build';
import { BinaryIndex } from '../../../../src/core/index/binaryIndex';
import { INDEX_FORMAT, LINE_IS_STMT, type FunctionSite, type IndexData, type IndexedFunction } from '../../../../src/core/index/model';
import { resolvePoint } from '../../../../src/core/probes/resolve';
import { checkSiteLimit, TooManySitesError } from '../../../../src/core/probes/sites';
import { parsePoint } from '../../../../src/core/probes/spec';
import { fixtureOrSkip } from '../../../helpers/fixtures';
import { missing } from '../../../helpers/require';
import { markedLines } from '../../../helpers/marks';

const hex = (a: bigint) => `0x${a.toString(16)}`;

/** nm: the text symbol whose code holds an address (by the next symbol's start). */
function symbolOf(bin: string): (a: bigint) => string {
  const syms = execFileSync('nm', ['-n', '--defined-only', bin], { encoding: 'utf8' })
    .split('\n')
    .map((l) => /^([0-9a-f]+) [Tt] (\S+)$/.exec(l))
    .filter((m): m is RegExpExecArray => m !== null)
    .map((m) => ({ a: BigInt(`0x${m[1]}`), name: m[2] }));
  return (a) => syms.filter((s) => s.a <= a).at(-1)?.name ?? '?';
}

function perfLine(bin: string, spec: string): bigint[] | { error: string } {
  try {
    const out = execFileSync('perf', ['probe', '-x', bin, '-D', spec], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] });
    return [...out.matchAll(/:0x([0-9a-f]+)/g)].map((m) => BigInt(`0x${m[1]}`)).sort((a, b) => (a < b ? -1 : 1));
  } catch (e) {
    return { error: String((e as { stderr?: string }).stderr ?? e) };
  }
}

test('lines fixture: each marked line is armed in every copy of its code, and each address names its copy', async (t) => {
  const f = await fixtureOrSkip(t, 'lines');
  if (!f) return;
  const idx = new BinaryIndex(await buildIndex(f.path));
  const marks = markedLines(join(__dirname, '../../../fixtures/src/c/lines.c'));
  const sym = symbolOf(f.path);
  const at = (spec: string) =>
    resolvePoint(parsePoint(spec), idx).map((s) => ({
      sym: sym(s.address),
      fn: s.fn?.name,
      site: `${s.site?.kind} ${s.site?.caller ?? ''}`.trim(),
      a: s.address,
    }));
  const line = (mark: string) => `lines.c:${marks.get(mark)}`;
  const rel = (fn: string, mark: string) => `${fn}:${marks.get(mark)! - idx.function(fn)[0].line!}`;

  // The always_inline function: one address per inlined copy (two in main, one in sum_to's loop), no other.
  const inl = at(line('inl'));
  assert.deepEqual(inl.map((x) => `${x.sym}/${x.site}`).sort(), ['main/inlined main', 'main/inlined main', 'sum_to/inlined sum_to']);
  assert.ok(inl.every((x) => x.fn === 'scaled'));
  assert.equal(idx.function('scaled')[0].sites.length, 3, 'one address per copy');
  // The .cold block: its address is in checked.cold, its copy is checked's own code.
  assert.deepEqual(
    at(line('cold')).map((x) => `${x.sym}/${x.site}/${x.fn}`),
    ['checked.cold/entry/checked'],
  );
  // The clone: clone_line only exists as clone_line.constprop.0.isra.0.
  assert.deepEqual(
    at(line('clone')).map((x) => `${x.sym}/${x.site}`),
    [`${sym(idx.function('clone_line')[0].sites[0].address)}/clone`],
  );
  assert.match(at(line('clone'))[0].sym, /^clone_line\.(constprop|isra)/);
  // Inlined into main and out of line.
  assert.deepEqual(
    at(line('both'))
      .map((x) => `${x.sym}/${x.site}`)
      .sort(),
    ['both/entry', 'main/inlined main'],
  );
  // The loop body: once per iteration, so one block.
  assert.equal(at(line('loop')).length, 1);

  // FUNC:REL is the same line wherever the function's code is (the .cold block and inlined copies too).
  for (const [fn, mark] of [
    ['scaled', 'inl'],
    ['checked', 'cold'],
    ['both', 'both'],
    ['clone_line', 'clone'],
    ['sum_to', 'loop'],
  ]) {
    assert.deepEqual(
      at(rel(fn, mark)).map((x) => x.a),
      at(line(mark)).map((x) => x.a),
      `${fn}:… = ${line(mark)}`,
    );
  }
});

test('lines fixture: perf probe -D arms the same addresses wherever it answers', async (t) => {
  const f = await fixtureOrSkip(t, 'lines');
  if (!f) return;
  if (!Array.isArray(perfLine(f.path, 'main'))) {
    missing(t, 'perf (linux-perf) for perf probe -D');
    return;
  }
  const idx = new BinaryIndex(await buildIndex(f.path));
  const marks = markedLines(join(__dirname, '../../../fixtures/src/c/lines.c'));
  const line = (mark: string) => `lines.c:${marks.get(mark)}`;
  const ours = (spec: string) => resolvePoint(parsePoint(spec), idx).map((s) => hex(s.address));
  // perf probe agrees where it answers; where it refuses, the reason is perf's (lines sharing an address with
  // another line; a .cold block it finds no symbol for).
  let compared = 0;
  for (const mark of marks.keys()) {
    const perf = perfLine(f.path, line(mark));
    if ('error' in perf) {
      assert.match(perf.error, /sharing the address with other lines|Failed to find symbol/, `${mark}: why perf refuses`);
      continue;
    }
    compared++;
    assert.deepEqual(perf.map(hex), ours(line(mark)), `${mark}: perf probe's addresses`);
  }
  assert.ok(compared > 0, 'perf answered for some line');
});

// --- the rules, on hand-made indexes ---------------------------------------------------------------------------

const S = LINE_IS_STMT;
const site = (kind: FunctionSite['kind'], address: number, ranges: number[], caller?: string): FunctionSite => ({
  kind,
  address: BigInt(address),
  fileOffset: BigInt(address),
  dieOffset: address,
  unitOffset: 0,
  caller,
  file: caller ? '/p/a.c' : undefined,
  line: caller ? 40 : undefined,
  ranges,
});
const fn = (name: string, line: number, sites: FunctionSite[], address?: number, size = 0): IndexedFunction => ({
  name,
  file: '/p/a.c',
  line,
  address: address === undefined ? undefined : BigInt(address),
  size,
  params: [],
  inlinedInstances: sites.filter((s) => s.kind === 'inlined').length,
  sites,
  probeable: sites.length > 0,
  external: true,
  unitOffset: 0,
  dieOffset: line,
});
function index(functions: IndexedFunction[], rows: Array<[number, number, number?]>): BinaryIndex {
  const data: IndexData = {
    format: INDEX_FORMAT,
    path: '/bin/x',
    size: 1,
    mtimeMs: 1,
    arch: 'x86_64',
    elfType: 'DYN',
    symbolsOnly: false,
    functions,
    files: ['/p/a.c'],
    lines: {
      address: Float64Array.from(rows, (r) => r[0]),
      line: Uint32Array.from(rows, (r) => r[1]),
      file: new Uint32Array(rows.length),
      flags: Uint8Array.from(rows, (r) => r[2] ?? S),
    },
    usdt: [],
  };
  return new BinaryIndex(data);
}

test('blocks: rows of a line in a row are one block, but two copies back to back are two', () => {
  // helper (line 10, body line 11) inlined twice into caller (line 30) whose code is [0x1000, 0x1100);
  // the copies sit back to back, so the first row of the second copy follows a row of the same line.
  const helper = fn('helper', 10, [
    site('inlined', 0x1010, [0x1010, 0x1020], 'caller'),
    site('inlined', 0x1020, [0x1020, 0x1030], 'caller'),
  ]);
  const caller = fn('caller', 30, [site('entry', 0x1000, [0x1000, 0x1100])], 0x1000, 0x100);
  const idx = index(
    [helper, caller],
    [
      [0x1000, 31],
      [0x1010, 11],
      [0x1018, 11], // a second row of the same block (another column or view)
      [0x1020, 11],
      [0x1030, 32],
      [0x1040, 33],
      [0x1048, 32], // line 32 again after line 33: a second block
    ],
  );
  const sites = resolvePoint(parsePoint('a.c:11'), idx);
  assert.deepEqual(
    sites.map((s) => hex(s.address)),
    ['0x1010', '0x1020'],
  );
  assert.deepEqual(
    sites.map((s) => hex(s.site!.address)),
    ['0x1010', '0x1020'],
    'each in its own copy',
  );
  assert.ok(sites.every((s) => s.fn === helper));
  assert.deepEqual(
    resolvePoint(parsePoint('a.c:32'), idx).map((s) => hex(s.address)),
    ['0x1030', '0x1048'],
  );
  // The caller's line 31 and 32 are the caller's even where the callee's copy range covers them.
  assert.ok(resolvePoint(parsePoint('caller:2'), idx).every((s) => s.fn === caller && s.site?.kind === 'entry'));
  // FUNC:REL of the callee reaches both copies, and none of the caller's lines.
  assert.equal(resolvePoint(parsePoint('helper:1'), idx).length, 2);
  assert.throws(() => resolvePoint(parsePoint('helper:21'), idx), /has no code inside helper/);
});

test('a block opened by a non-statement row is armed at its first statement row', () => {
  const caller = fn('caller', 30, [site('entry', 0x1000, [0x1000, 0x1100])], 0x1000, 0x100);
  const idx = index(
    [caller],
    [
      [0x1000, 31],
      [0x1008, 32, 0],
      [0x100c, 32],
      [0x1010, 32, 0],
      [0x1014, 33],
    ],
  );
  assert.deepEqual(
    resolvePoint(parsePoint('a.c:32'), idx).map((s) => hex(s.address)),
    ['0x100c'],
  );
});

test('a call on the line whose callee is inlined with no code of the line left arms the copy’s entry', () => {
  // Line 40 of caller is `return helper(x);`: every instruction of it is the callee's (its rows say line 11).
  const helper = fn('helper', 10, [site('inlined', 0x1010, [0x1010, 0x1020], 'caller')]);
  const caller = fn('caller', 30, [site('entry', 0x1000, [0x1000, 0x1100])], 0x1000, 0x100);
  const idx = index(
    [helper, caller],
    [
      [0x1000, 31],
      [0x1010, 11],
      [0x1020, 41],
    ],
  );
  const sites = resolvePoint(parsePoint('a.c:40'), idx);
  assert.deepEqual(
    sites.map((s) => `${hex(s.address)} ${s.fn?.name} ${s.site?.kind}`),
    ['0x1010 caller entry'],
  );
});

test('more than 128 sites: a line probe needs the same confirmation as a function probe', () => {
  const copies = Array.from({ length: 130 }, (_, i) =>
    site('inlined', 0x1000 + i * 0x10, [0x1000 + i * 0x10, 0x1008 + i * 0x10], 'caller'),
  );
  const helper = fn('helper', 10, copies);
  const rows: Array<[number, number]> = copies.flatMap((c) => [
    [Number(c.address), 11] as [number, number],
    [Number(c.address) + 8, 31] as [number, number],
  ]);
  const caller = fn('caller', 30, [site('entry', 0x1000, [0x1000, 0x2000])], 0x1000, 0x1000);
  const idx = index([helper, caller], rows);
  assert.equal(resolvePoint(parsePoint('a.c:11'), idx).length, 130);
  assert.throws(
    () => checkSiteLimit(['a.c:11'], idx, {}),
    (e: unknown) => e instanceof TooManySitesError && e.sites === 130 && /--max-sites 130/.test(e.message),
  );
  assert.doesNotThrow(() => checkSiteLimit(['a.c:11'], idx, { maxSites: 130 }));
});

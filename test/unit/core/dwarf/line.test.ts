import assert from 'node:assert/strict';
import { basename } from 'node:path';
import { test } from 'node:test';
import type { FixtureName } from '../../../helpers/fixtures';
import { open, tool } from './oracle';
import { mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { TestContext } from 'node:test';
import { openBinary } from '../../../../src/core/binary';
import { openDwarf } from '../../../../src/core/dwarf';
import { missing } from '../../../helpers/require';
import { have, run, workDir } from '../binary/build';

// readelf prints one row per line-table row: file (as the table names it), line, address, optional view, and an
// `x` in the Stmt column for is_stmt rows; end_sequence rows show `-` as the line. Sequences that start at
// address 0 belong to functions the linker discarded (their relocations resolved to 0); we drop those on
// purpose, so they are left out of the comparison.
function readelfStmtRows(out: string): Set<string> {
  const rows = new Set<string>();
  let seq: string[] = [],
    first = -1;
  for (const l of out.split('\n')) {
    const m = /^(\S+)\s+(\d+|-)\s+(0x[0-9a-f]+|0)(?:\s+\d+)?(\s+x)?\s*$/.exec(l);
    if (!m) continue;
    const addr = parseInt(m[3], 16);
    if (first < 0) first = addr;
    if (m[2] === '-') {
      if (first !== 0) for (const r of seq) rows.add(r);
      seq = [];
      first = -1;
    } else if (m[4]) seq.push(`${basename(m[1])}:${m[2]}:${addr}`);
  }
  return rows;
}

const VARIANTS: FixtureName[] = [
  'calls-O0',
  'calls-O2',
  'calls-O0-dwarf2',
  'calls-O2-dwarf2',
  'calls-O0-dwarf4',
  'calls-O2-dwarf4',
  'calls-O0-dwarf64',
  'calls-O2-dwarf64',
  'cpp-O2',
  'rust-O0',
  'go',
  'calls-aarch64-O2',
];

for (const name of VARIANTS) {
  test(`${name}: line rows equal the is_stmt rows of readelf --debug-dump=decodedline`, async (t) => {
    const o = await open(t, name);
    if (!o) return;
    const out = tool(t, 'readelf', ['-W', '--debug-dump=decodedline', o.f.path]);
    if (out === undefined) return;
    const theirs = readelfStmtRows(out);
    const ours = new Set<string>();
    for (const lt of o.dw.lineTables()) for (const r of lt.stmtRows()) ours.add(`${basename(r.file)}:${r.line}:${r.address}`);
    assert.ok(theirs.size > 50, `readelf rows parsed (${theirs.size})`);
    const missingRows = [...theirs].filter((r) => !ours.has(r));
    const extra = [...ours].filter((r) => !theirs.has(r));
    assert.deepEqual(missingRows.slice(0, 10), [], `${missingRows.length} rows missing`);
    assert.deepEqual(extra.slice(0, 10), [], `${extra.length} extra rows`);
  });
}

// x86-64 only: this host's gdb has no AArch64 prologue analyser, so it is no oracle there.
for (const name of ['calls-O0', 'calls-O2', 'calls-O0-dwarf2', 'calls-O2-dwarf4', 'calls-O0-dwarf64'] as FixtureName[]) {
  test(`${name}: the address after the prologue and its line equal gdb's breakpoint`, async (t) => {
    const o = await open(t, name);
    if (!o) return;
    const fns = ['add_ints', 'many_args', 'sum_array', 'account_deposit', 'sum_squares', 'classify', 'tick'];
    const out = tool(t, 'gdb', ['-nx', '-batch', ...fns.flatMap((f) => ['-ex', `break ${f}`]), o.f.path]);
    if (out === undefined) return;
    const bps = [...out.matchAll(/Breakpoint \d+ at 0x([0-9a-f]+): file (\S+), line (\d+)\./g)];
    assert.equal(bps.length, fns.length, out);
    fns.forEach((f, i) => {
      const fn = o.dw.functions().find((x) => x.name === f)!;
      const lt = o.dw.lineTableFor(fn.entryPc!)!;
      const pc = lt.afterPrologue(fn.ranges[0], fn.ranges[1]);
      assert.equal(pc, parseInt(bps[i][1], 16), `${f} address`);
      const at = lt.lineAt(pc)!;
      assert.equal(at.line, Number(bps[i][3]), `${f} line`);
      assert.equal(at.file, bps[i][2]);
    });
  });
}

test('calls-O0: file:line → addresses finds the marked loop line, and address → line inverts it', async (t) => {
  const o = await open(t, 'calls-O0');
  if (!o) return;
  const { readFileSync } = await import('node:fs');
  const file = o.f.sourceFiles.find((f) => f.endsWith('calls.c'))!;
  const line =
    readFileSync(file, 'utf8')
      .split('\n')
      .findIndex((l) => l.includes('@line:sum_squares.step')) + 1;
  const addrs = o.dw.addressesForLine(file, line);
  assert.ok(addrs.length >= 1);
  const ss = o.dw.functions().find((f) => f.name === 'sum_squares')!;
  for (const a of addrs) {
    assert.ok(a >= ss.ranges[0] && a < ss.ranges[1]);
    assert.deepEqual(o.dw.lineAt(a)?.line, line);
  }
  assert.deepEqual(o.dw.addressesForLine(file, 100000), []);
  assert.deepEqual(o.dw.addressesForLine('/nonexistent.c', line), []);
});

test('a relative comp_dir (built with -fdebug-prefix-map, as distributions build kernels) is not joined to itself: files resolve through it once', async (t: TestContext) => {
  if (!have('gcc')) return missing(t, 'gcc (builds the binary)');
  const root = mkdtempSync(join(workDir, 'relative-'));
  mkdirSync(join(root, 'build', 'out'), { recursive: true });
  writeFileSync(join(root, 'a.c'), 'int f(int x) { return x * 3; }\nint main(void) { return f(2); }\n');
  const bin = join(root, 'build', 'out', 'prog');
  run('gcc', ['-g', '-gdwarf-5', '-O1', `-fdebug-prefix-map=${root}/=`, '../../a.c', '-o', bin], { cwd: join(root, 'build', 'out') });
  assert.match(run('readelf', ['--debug-dump=info', bin]), /DW_AT_comp_dir\s*:.*: build\/out$/m, 'comp_dir is relative');
  const dw = openDwarf((await openBinary(bin)).dwarf(), 'x86_64');
  const [unit] = dw.units();
  assert.deepEqual([...new Set(dw.unitFiles(unit))], ['a.c']);
});

test('address → line parses only the line table of the unit whose code holds it, and answers as reading every table in unit order does', async (t) => {
  for (const name of ['sites', 'rust-O2', 'go'] as const) {
    const all = await open(t, name);
    const one = await open(t, name);
    if (!all || !one) return;
    const tables = all.dw.lineTables();
    assert.ok(tables.length >= 2, `${name}: ${tables.length} line tables`);
    const pcs = one.dw
      .functions()
      .filter((f) => f.ranges.length >= 2)
      .flatMap((f) => [f.ranges[0], (f.ranges[0] + f.ranges[1] - 1) >> 1]);
    assert.ok(pcs.length > 4, `${name}: ${pcs.length} addresses`);
    const parsedBefore = one.dw.lineTablesParsed;
    void one.dw.lineAt(pcs[0]);
    assert.equal(one.dw.lineTablesParsed - parsedBefore, 1, `${name}: one table parsed for one address`);
    for (const pc of [...pcs, 0, 2 ** 40]) {
      const expected = tables.find((tb) => tb.rowAt(pc) >= 0)?.lineAt(pc);
      assert.deepEqual(one.dw.lineAt(pc), expected, `${name}: the line at 0x${pc.toString(16)}`);
    }
  }
});

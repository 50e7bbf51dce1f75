// The probelens CLI's read commands as a user runs them: exit codes, stderr sentences, contract JSON.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { fixtureOrSkip, markerLine } from '../../helpers/fixtures';
import { loadIndex } from '../../../src/core/index/load';
import { variablesAtAddress } from '../../../src/core/probes/variables';

const MAIN = resolve(__dirname, '../../../src/cli/main.ts');
const cache = mkdtempSync(join(tmpdir(), 'probelens-cli-cache-'));

function cli(...args: string[]) {
  const r = spawnSync(process.execPath, ['--import', 'tsx', MAIN, ...args], {
    encoding: 'utf8',
    env: { ...process.env, XDG_CACHE_HOME: cache },
  });
  return { code: r.status, out: r.stdout, err: r.stderr };
}

test('functions --json has the contract shape; --match filters; the cache is written and reused', async (t) => {
  const f = await fixtureOrSkip(t, 'calls-O0');
  if (!f) return;
  const r = cli('functions', f.path, '--match', 'add_*', '--json');
  assert.equal(r.code, 0, r.err);
  const list = JSON.parse(r.out);
  const add = list.find((x: { name: string }) => x.name === 'add_ints');
  assert.deepEqual(Object.keys(add), [
    'name',
    'linkageName',
    'file',
    'line',
    'address',
    'fileOffset',
    'size',
    'params',
    'inlinedInstances',
    'aliases',
    'sites',
    'probeable',
    'reason',
  ]);
  assert.match(add.address, /^0x[0-9a-f]+$/);
  assert.equal(add.file, join(f.srcDir, 'calls.c'));
  assert.deepEqual(
    add.params.map((p: { name: string; type: string; location: string }) => [p.name, p.type, p.location]),
    [
      ['a', 'int', '%di'],
      ['b', 'int', '%si'],
    ],
  );
  assert.ok(list.every((x: { name: string }) => x.name.startsWith('add_')));
  const again = cli('functions', f.path, '--match', 'add_*', '--json');
  assert.equal(again.out, r.out, 'same answer from the cache');
  const fresh = cli('functions', f.path, '--match', 'add_*', '--json', '--no-cache');
  assert.equal(fresh.out, r.out, 'same answer without it');
  // Written element by element (a kernel's list never becomes one string), byte for byte what JSON.stringify
  // prints of the whole array, in the default locale's order of names.
  const all = cli('functions', f.path, '--json');
  const whole = JSON.parse(all.out) as Array<{ name: string }>;
  assert.ok(whole.length > 3);
  assert.equal(all.out, `${JSON.stringify(whole, null, 2)}\n`);
  assert.deepEqual(
    whole.map((x) => x.name),
    whole.map((x) => x.name).sort((a, b) => a.localeCompare(b)),
  );
  const none = cli('functions', f.path, '--match', 'no_such_*', '--json');
  assert.equal(none.out, '[]\n');
});

test('lines and vars', async (t) => {
  const f = await fixtureOrSkip(t, 'calls-O0');
  if (!f) return;
  const fns = JSON.parse(cli('functions', f.path, '--match', 'add_ints', '--json').out);
  const line = fns[0].line as number;
  const lines = cli('lines', f.path, `calls.c:${line + 1}`, '--json');
  assert.equal(lines.code, 0, lines.err);
  const rows = JSON.parse(lines.out);
  assert.equal(rows.length, 1);
  assert.equal(rows[0].file, join(f.srcDir, 'calls.c'));
  assert.ok(rows[0].addresses.length >= 1);
  const vars = cli('vars', f.path, 'add_ints', '--json');
  assert.equal(vars.code, 0, vars.err);
  assert.deepEqual(
    JSON.parse(vars.out)
      .filter((v: { kind: string }) => v.kind === 'param')
      .map((v: { name: string; location: string }) => [v.name, v.location]),
    [
      ['a', '%di'],
      ['b', '%si'],
    ],
  );
});

test('errors: one actionable sentence on stderr, non-zero exit', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'probelens-cli-'));
  const text = join(dir, 'notes.txt');
  writeFileSync(text, 'hello\n');
  const cases: Array<[string[], number, RegExp]> = [
    [['functions', join(dir, 'missing')], 1, /no such file: .*missing/],
    [['functions', text], 1, /not an ELF executable or shared library/],
    [['functions'], 2, /missing BIN/],
    [['functions', text, '--bogus'], 2, /unknown option --bogus/],
    [['frobnicate'], 2, /unknown command 'frobnicate'/],
  ];
  for (const [args, code, re] of cases) {
    const r = cli(...args);
    assert.equal(r.code, code, `${args.join(' ')}: ${r.err}`);
    assert.match(r.err, re);
    assert.equal(r.err.trim().split('\n').length, 1, 'one line');
  }
});

test('an unknown function names close matches', async (t) => {
  const f = await fixtureOrSkip(t, 'calls-O0');
  if (!f) return;
  const r = cli('vars', f.path, 'add_int');
  assert.equal(r.code, 1);
  assert.match(r.err, /has no function 'add_int' \(did you mean 'add_ints'/);
});

test('variablesAtAddress: a loop line shows its locals with register/stack fetches', async (t) => {
  const f = await fixtureOrSkip(t, 'calls-O0');
  if (!f) return;
  const { index } = await loadIndex(f.path, { noCache: true });
  const m = markerLine(f, 'sum_squares.step');
  const [addr] = index.addressesForLine(m.file, m.line);
  const vars = await variablesAtAddress(index, addr);
  const byName = new Map(vars.map((v) => [v.name, v]));
  assert.equal(byName.get('n')?.kind, 'param');
  assert.equal(byName.get('i')?.kind, 'local');
  assert.equal(byName.get('acc')?.type, 'long int');
  // At -O0 locals live in the frame: gcc's frame base is the CFA, which CFI puts at %bp+16 after the prologue.
  assert.match(byName.get('i')!.location, /^-[0-9]+\(%bp\)$/);
});

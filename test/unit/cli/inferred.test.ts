// The calling-convention guess: only for a parameter DWARF says nothing about (no location, no constant), only
// at the out-of-line entry of a C-ABI function, and always marked as inferred. Hand-assembled DWARF on a real
// gcc-built executable decides exactly what DWARF says.
import { test, type TestContext } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { A, assemble, hostileElf, int, subprogram, T, type DieSpec } from '../../helpers/dwarfAsm';
import { missing } from '../../helpers/require';
import { have } from '../core/binary/build';

const MAIN = resolve(__dirname, '../../../src/cli/main.ts');
const cache = mkdtempSync(join(tmpdir(), 'probelens-cli-inferred-'));

/** `guess(long x)` (x without a location) and `told(long x)` (x in %rdi), in a unit of language `lang`. */
function build(t: TestContext, lang: number): string | undefined {
  for (const tool of ['gcc', 'nm', 'objcopy'])
    if (!have(tool)) {
      missing(t, `${tool} (builds the executable)`);
      return undefined;
    }
  return hostileElf(['guess', 'told'], (addr) => {
    const sp = (n: string, abi: boolean) =>
      subprogram(n, addr.get(n)!.address, addr.get(n)!.size, [abi ? ['x', 'int', 'abi'] : ['x', 'int']]);
    const unit: DieSpec = {
      tag: T.compile_unit,
      attrs: [
        [A.name, { str: 'hostile.c' }],
        [A.language, { data1: lang }],
      ],
      children: [int(), sp('guess', true), sp('told', false)],
    };
    return assemble(unit);
  });
}

function cli(...args: string[]) {
  const r = spawnSync(process.execPath, ['--import', 'tsx', MAIN, ...args], {
    encoding: 'utf8',
    timeout: 120_000,
    env: { ...process.env, XDG_CACHE_HOME: cache },
  });
  return { code: r.status, out: r.stdout, err: r.stderr };
}

test('a C parameter with no DWARF location at all is taken from the calling convention and marked inferred', (t) => {
  const bin = build(t, 0x0c); // C99
  if (!bin) return;
  const fns = JSON.parse(cli('functions', bin, '--json', '--no-cache').out) as Array<{
    name: string;
    params: Array<{ name: string; location: string; inferred?: boolean }>;
  }>;
  const guess = fns.find((f) => f.name === 'guess')!;
  assert.deepEqual(guess.params, [{ name: 'x', type: 'int', location: '%di', inferred: true }]);
  const told = fns.find((f) => f.name === 'told')!;
  assert.deepEqual(told.params, [{ name: 'x', type: 'int', location: '%di' }], 'a location DWARF gives is no guess');
  assert.match(cli('functions', bin).out, /guess\(int x@≈%di\)/);
  const def = cli('define', bin, 'guess x', '--json');
  assert.equal(def.code, 0, def.err);
  const probes = JSON.parse(def.out) as Array<{ definition: string; inferred?: string[] }>;
  assert.match(probes[0].definition, / x=%di:s32 /);
  assert.deepEqual(probes[0].inferred, ['x']);
  assert.equal((JSON.parse(cli('define', bin, 'told x', '--json').out) as Array<{ inferred?: string[] }>)[0].inferred, undefined);
});

test('a Rust parameter with no DWARF location is not guessed: Rust has no stable calling convention', (t) => {
  const bin = build(t, 0x1c); // Rust
  if (!bin) return;
  const fns = JSON.parse(cli('functions', bin, '--json', '--no-cache').out) as Array<{ name: string; params: Array<{ location: string }> }>;
  assert.match(fns.find((f) => f.name === 'guess')!.params[0].location, /^unavailable: optimized out \(DWARF gives no location for it\)$/);
  const def = cli('define', bin, 'guess x');
  assert.notEqual(def.code, 0);
  assert.match(def.err, /'x' cannot be fetched at guess .*entry( \(0x[0-9a-f]+\))?: optimized out \(DWARF gives no location for it\)/);
});

// The CLI on a real executable carrying hand-assembled hostile DWARF (self-referential bitfield structs,
// function types whose parameters point back at them, a doubling DAG of function types, a 100,000-deep
// pointer chain, a typedef cycle, a 1 TiB struct by value): `functions`, `vars` and `define` end with a
// bounded answer or a clear error naming the DIE. The timeout only catches a hang; each run prints its time.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { test, type TestContext } from 'node:test';
import { have } from '../core/binary/build';
import {
  A,
  assemble,
  cu,
  doublingFunctionTypes,
  hostileElf,
  int,
  pointerChain,
  selfBitfieldStruct,
  selfParamFunctionType,
  subprogram,
  T,
  typedefCycle,
} from '../../helpers/dwarfAsm';
import { missing } from '../../helpers/require';

const MAIN = resolve(__dirname, '../../../src/cli/main.ts');
const HANG_MS = 120_000;
const cache = mkdtempSync(join(tmpdir(), 'probelens-cli-hostile-'));

const FUNCS = ['typebomb', 'typebomb_abi', 'fnback', 'doubling', 'deep', 'tdef', 'huge'];
let built: { bin: string; die: Map<string, number> } | undefined;

function hostile(t: TestContext): { bin: string; die: Map<string, number> } | undefined {
  for (const tool of ['gcc', 'nm', 'objcopy'])
    if (!have(tool)) {
      missing(t, `${tool} (builds the hostile executable)`);
      return undefined;
    }
  if (built) return built;
  let die = new Map<string, number>();
  const bin = hostileElf(FUNCS, (addr) => {
    const sp = (n: string, params: Array<[string, string, 'abi'?]>) => subprogram(n, addr.get(n)!.address, addr.get(n)!.size, params);
    const a = assemble(
      cu([
        int(),
        selfBitfieldStruct('S'),
        ...selfParamFunctionType('F', 3),
        ...doublingFunctionTypes('D', 60),
        ...pointerChain('P', 100_000),
        ...typedefCycle('A', 3),
        {
          tag: T.structure_type,
          label: 'H',
          attrs: [
            [A.name, { str: 'huge' }],
            [A.byte_size, { data8: 1n << 40n }],
          ],
        },
        sp('typebomb', [['s', 'S']]),
        sp('typebomb_abi', [['s', 'S', 'abi']]),
        sp('fnback', [['f', 'F_ptr']]),
        sp('doubling', [['d', 'D0_ptr']]),
        sp('deep', [['p', 'P0']]),
        sp('tdef', [['a', 'A0', 'abi']]),
        sp('huge', [['h', 'H', 'abi']]),
      ]),
    );
    die = a.offsets;
    return a;
  });
  return (built = { bin, die });
}

function cli(t: TestContext, ...args: string[]) {
  const t0 = Date.now();
  const r = spawnSync(process.execPath, ['--import', 'tsx', MAIN, ...args], {
    encoding: 'utf8',
    timeout: HANG_MS,
    killSignal: 'SIGKILL',
    env: { ...process.env, XDG_CACHE_HOME: cache },
  });
  t.diagnostic(`probelens ${args.join(' ')}: ${Date.now() - t0} ms`);
  assert.equal(r.signal, null, `probelens ${args.join(' ')} did not end within ${HANG_MS} ms (a hang)`);
  return { code: r.status, out: r.stdout, err: r.stderr };
}

const hex = (n: number | undefined) => `0x${n!.toString(16)}`;
const limit = (die: number | undefined, reason: string) =>
  new RegExp(`DWARF type at DIE ${hex(die)} is ${reason} \\(.*\\): the binary's debug information is corrupt or hostile`);

test('functions: every hostile function is listed; a type that cannot be described says why, by DIE, in its place', (t) => {
  const h = hostile(t);
  if (!h) return;
  const r = cli(t, 'functions', h.bin, '--json', '--no-cache');
  assert.equal(r.code, 0, r.err);
  const fns = new Map(
    (JSON.parse(r.out) as Array<{ name: string; params: Array<{ name: string; type: string; location: string }> }>).map((f) => [
      f.name,
      f.params,
    ]),
  );
  for (const f of FUNCS) assert.ok(fns.has(f), `${f} listed`);
  assert.deepEqual(fns.get('typebomb'), [{ name: 's', type: 'struct S', location: '%di' }]);
  assert.match(fns.get('typebomb_abi')![0].location, limit(h.die.get('S'), 'cyclic'));
  assert.match(fns.get('fnback')![0].location, limit(h.die.get('F_ptr'), 'cyclic'));
  assert.match(fns.get('deep')![0].location, /^unavailable: DWARF type at DIE 0x[0-9a-f]+ is too deep \(more than 128 nested types\)/);
  assert.match(fns.get('tdef')![0].location, limit(h.die.get('A0'), 'cyclic'));
  assert.match(fns.get('huge')![0].location, limit(h.die.get('H'), 'too large'));
  const d = fns.get('doubling')![0];
  assert.equal(d.location, '%di');
  assert.ok(d.type.startsWith('int (*)(int (*)(int (*)(') && d.type.length <= 2048, `bounded name (${d.type.length} characters)`);
});

test('vars: bounded listings, or one clear error naming the DIE', (t) => {
  const h = hostile(t);
  if (!h) return;
  const ok = cli(t, 'vars', h.bin, 'typebomb_abi', '--json');
  assert.equal(ok.code, 0, ok.err);
  const [s] = JSON.parse(ok.out) as Array<{ name: string; type: string; location: string }>;
  assert.equal(s.type, 'struct S');
  assert.match(s.location, limit(h.die.get('S'), 'cyclic'));
  const deep = cli(t, 'vars', h.bin, 'deep');
  assert.equal(deep.code, 1);
  assert.match(deep.err, /^probelens: DWARF type at DIE 0x[0-9a-f]+ is too deep/);
});

test("define: 'typebomb s', 'typebomb $params' and the other shapes end with the error, or a definition", (t) => {
  const h = hostile(t);
  if (!h) return;
  for (const [spec, die, reason] of [
    ['typebomb s', 'S', 'cyclic'],
    ['typebomb $params', 'S', 'cyclic'],
    ['fnback f', 'F_ptr', 'cyclic'],
    ['huge h', 'H', 'too large'],
  ]) {
    const r = cli(t, 'define', h.bin, spec);
    assert.equal(r.code, 1, `${spec}: ${r.out}`);
    assert.match(r.err, limit(h.die.get(die), reason), spec);
    assert.equal(r.err.trim().split('\n').length, 1, 'one sentence');
  }
  const deep = cli(t, 'define', h.bin, 'deep p');
  assert.equal(deep.code, 1);
  assert.match(deep.err, /is too deep \(more than 128 nested types\)/);
  const d = cli(t, 'define', h.bin, 'doubling d');
  assert.equal(d.code, 0, d.err);
  assert.match(d.out, /^p:probelens_\d+_define\/doubling \S+:0x[0-9a-f]+ d=%di:x64 /);
});

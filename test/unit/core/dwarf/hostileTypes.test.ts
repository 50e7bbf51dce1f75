// Hostile type graphs, assembled by hand: each ends with a bounded answer or a DwarfTypeLimitError naming the
// DIE, never a hang. Every case runs in a child process (hostile-child.ts), so a regression to unbounded work
// is caught by the timer here instead of blocking the runner; the time taken is printed beside each.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { resolve } from 'node:path';
import { test } from 'node:test';
import { Types, MAX_TYPE_NAME, DwarfTypeLimitError, type TypeResolver } from '../../../../src/core/dwarf/types';
import { openDwarf } from '../../../../src/core/dwarf/index';
import { assemble, cu, doublingFunctionTypes, int, sectionSource, T, A, type DieSpec } from '../../../helpers/dwarfAsm';

const CHILD = resolve(__dirname, 'hostile-child.ts');
const HANG_MS = 60_000;

type Outcome = { ok: string } | { error: string; name: string };
interface Result {
  root: number;
  name: Outcome;
  desc: Outcome;
  again: Outcome;
  ms: number;
}

let results: Map<string, Result> | undefined;

/** Runs every shape in one child; a shape that never answers fails with its name. */
function run(shape: string): Result {
  if (!results) {
    const r = spawnSync(process.execPath, ['--import', 'tsx', CHILD, ...cases.map(([s]) => s)], {
      encoding: 'utf8',
      timeout: HANG_MS,
      killSignal: 'SIGKILL',
    });
    results = new Map(
      r.stdout
        .split('\n')
        .filter(Boolean)
        .map((l) => JSON.parse(l) as Result & { shape: string })
        .map((x) => [x.shape, x]),
    );
    if (r.signal === null) assert.equal(r.status, 0, r.stderr);
  }
  const got = results.get(shape);
  assert.ok(got, `"${shape}" did not finish within ${HANG_MS} ms (a hang)`);
  return got;
}

function limitError(o: Outcome, die: number, reason: string): void {
  assert.ok('error' in o, `expected an error, got ${JSON.stringify(o)}`);
  assert.equal(o.name, 'DwarfTypeLimitError', o.error);
  assert.match(o.error, new RegExp(`^DWARF type at DIE 0x${die.toString(16)} is ${reason} `));
}

const ok = (o: Outcome): string => {
  assert.ok('ok' in o, `expected an answer, got ${JSON.stringify(o)}`);
  return o.ok;
};

const cases: Array<[string, (r: Result) => void]> = [
  [
    'self-bitfield struct',
    (r) => {
      assert.equal(ok(r.name), 'struct S');
      limitError(r.desc, r.root, 'cyclic');
    },
  ],
  [
    'function type with parameters pointing back',
    (r) => {
      limitError(r.name, r.root, 'cyclic');
      limitError(r.desc, r.root, 'cyclic');
    },
  ],
  [
    'pointer to that function type',
    (r) => {
      assert.ok('error' in r.name && /is cyclic/.test(r.name.error), JSON.stringify(r.name));
      assert.ok('error' in r.desc && /is cyclic/.test(r.desc.error), JSON.stringify(r.desc));
    },
  ],
  [
    'function types doubling over 60 levels',
    (r) => {
      const n = ok(r.name);
      assert.ok(n.startsWith('int (int (*)(int (*)('), n.slice(0, 80));
      assert.ok(n.length <= MAX_TYPE_NAME && n.endsWith('…'), `clipped at ${MAX_TYPE_NAME}: ${n.length}`);
      assert.equal(ok(r.desc), 'function ? -');
    },
  ],
  [
    'pointer chain 100 deep',
    (r) => {
      assert.equal(ok(r.name), `int ${'*'.repeat(100)}`);
      assert.equal(ok(r.desc), 'pointer 8 -');
    },
  ],
  [
    'pointer chain 100,000 deep',
    (r) => {
      assert.ok(
        'error' in r.name && /^DWARF type at DIE 0x[0-9a-f]+ is too deep \(more than 128 nested types\)/.test(r.name.error),
        JSON.stringify(r.name),
      );
      assert.ok('error' in r.desc && /is too deep/.test(r.desc.error), JSON.stringify(r.desc));
    },
  ],
  [
    'typedef cycle',
    (r) => {
      assert.equal(ok(r.name), 'A0_t');
      limitError(r.desc, r.root, 'cyclic');
    },
  ],
  [
    'const of itself',
    (r) => {
      limitError(r.name, r.root, 'cyclic');
      limitError(r.desc, r.root, 'cyclic');
    },
  ],
  [
    'array of itself',
    (r) => {
      limitError(r.name, r.root, 'cyclic');
      limitError(r.desc, r.root, 'cyclic');
    },
  ],
  [
    'enum based on itself',
    (r) => {
      assert.equal(ok(r.name), 'enum e');
      limitError(r.desc, r.root, 'cyclic');
    },
  ],
];

for (const [shape, check] of cases) {
  test(`hostile DWARF, ${shape}: a bounded answer or a typed error naming the DIE`, (t) => {
    const r = run(shape);
    t.diagnostic(`${shape}: ${r.ms.toFixed(1)} ms`);
    check(r);
    assert.deepEqual('error' in r.again ? r.again.error : 'ok', 'error' in r.desc ? r.desc.error : 'ok', 'the second ask answers the same');
  });
}

/** The DWARF reader behind a Types instance, counting every DIE it is asked to read. */
function counted(dies: DieSpec[]): { types: (steps?: number) => Types; reads: () => number; offsets: Map<string, number> } {
  const a = assemble(cu([int(), ...dies]));
  const dw = openDwarf(sectionSource(a), 'x86_64');
  let n = 0;
  const res: TypeResolver = {
    unitOf: (o) => dw.unitOf(o),
    dieAt: (o) => {
      n++;
      return dw.dieAt(o);
    },
    scopeOf: () => '',
  };
  return { types: (steps) => new Types(res, steps), reads: () => n, offsets: a.offsets };
}

test('type rendering is memoised: a DAG of function types doubling 20 times reads each DIE a bounded number of times', () => {
  const c = counted(doublingFunctionTypes('D', 20));
  const name = c.types().name(c.offsets.get('D0'));
  // 41 type DIEs plus 40 parameter DIEs; without sharing, rendering would read 2^20 of them.
  assert.ok(c.reads() < 400, `${c.reads()} DIE reads`);
  assert.ok(name.startsWith('int (int (*)(int (*)('));
});

test('each top-level type query reads at most its step budget of DIEs, then names the type it was describing', () => {
  const members: DieSpec[] = Array.from({ length: 1000 }, (_, i) => ({
    tag: T.member,
    attrs: [
      [A.name, { str: `m${i}` }],
      [A.type, { ref: 'int' }],
      [A.data_member_location, { udata: i * 4 }],
    ],
  }));
  const big: DieSpec = {
    tag: T.structure_type,
    label: 'Big',
    attrs: [
      [A.name, { str: 'big' }],
      [A.byte_size, { data4: 4000 }],
    ],
    children: members,
  };
  const c = counted([big]);
  const off = c.offsets.get('Big')!;
  assert.equal(c.types().describe(off).members?.length, 1000, 'within the default budget');
  const small = c.types(100);
  assert.throws(
    () => small.describe(off),
    (e: unknown) =>
      e instanceof DwarfTypeLimitError &&
      e.dieOffset === off &&
      e.reason === 'too large' &&
      e.message.startsWith(`DWARF type at DIE 0x${off.toString(16)} is too large (more than 100 DIEs read describing it`),
  );
  // The budget is per query: the next query starts afresh (the failure itself is remembered).
  assert.equal(small.name(c.offsets.get('int')), 'int');
});

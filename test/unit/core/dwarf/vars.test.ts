import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { test } from 'node:test';
import type { FunctionInfo, LocDesc } from '../../../../src/core/dwarf/index';
import type { FixtureName } from '../../../helpers/fixtures';
import { open, tool } from './oracle';

type Shape = { kind: string; name?: string; offset?: number; value?: string };

// gdb's wording for the location kinds a probe can use; anything else is a "complex" expression we must
// report as unsupported rather than guess at.
function gdbShape(what: string): Shape {
  what = what.trim();
  let m = /^a variable in \$(\w+)/.exec(what);
  if (m) return { kind: 'register', name: m[1] };
  m = /^the constant (-?\d+)/.exec(what);
  if (m) return { kind: 'value', value: m[1] };
  if (/^optimized out/.test(what)) return { kind: 'optimized-out' };
  // With a CFA frame base gdb folds the CFA rule in: "frame base reg $rsp offset 8+OFF" is DW_OP_fbreg OFF.
  m = /^a variable at frame base reg \$\w+ offset -?\d+\+(-?\d+)/.exec(what);
  if (m) return { kind: 'fbreg', offset: Number(m[1]) };
  m = /^a complex DWARF expression:\s+0: DW_OP_fbreg (-?\d+)$/.exec(what);
  if (m) return { kind: 'fbreg', offset: Number(m[1]) };
  m =
    /^a complex DWARF expression:\s+0: DW_OP_(?:GNU_)?entry_value\s+2: DW_OP_(?:reg\d+|(?:GNU_)?regval_type<[^>]*>) \[\$(\w+)\]\s+\d+: DW_OP_stack_value$/.exec(
      what,
    );
  if (m) return { kind: 'entry-value', name: m[1] };
  return { kind: 'unsupported' };
}

function ourShape(l: LocDesc): Shape {
  switch (l.kind) {
    case 'register':
      return { kind: 'register', name: l.name };
    case 'value':
      return { kind: 'value', value: String(l.value) };
    case 'fbreg':
      return { kind: 'fbreg', offset: l.offset };
    case 'entry-value':
      return l.inner.kind === 'register' ? { kind: 'entry-value', name: l.inner.name } : { kind: 'unsupported' };
    case 'optimized-out':
      return { kind: 'optimized-out' };
    default:
      return { kind: 'unsupported' };
  }
}

interface GdbSymbol {
  name: string;
  ranges: Array<{ lo: number; hi: number; shape: Shape }> | undefined;
  single?: Shape;
}

function infoScope(out: string): GdbSymbol[] {
  const syms: GdbSymbol[] = [];
  for (const chunk of out.split(/^Symbol /m).slice(1)) {
    const m = /^(\S+) is ([\s\S]*?)\n?, length \d+\.\s*$/.exec(chunk.replace(/\nScope for[\s\S]*$/, '').trimEnd());
    if (!m) continue;
    const [, name, body] = m;
    if (body.startsWith('multi-location:')) {
      const ranges = [...body.matchAll(/Range 0x([0-9a-f]+)-0x([0-9a-f]+): ([\s\S]*?)(?=\n\s*Range 0x|$)/g)].map((r) => ({
        lo: parseInt(r[1], 16),
        hi: parseInt(r[2], 16),
        shape: gdbShape(r[3]),
      }));
      syms.push({ name, ranges });
    } else syms.push({ name, ranges: undefined, single: gdbShape(body) });
  }
  return syms;
}

const FUNCS = [
  'add_ints',
  'many_args',
  'sum_array',
  'account_deposit',
  'find_account',
  'point_dist2',
  'scale',
  'classify',
  'sum_squares',
  'tick',
];

for (const name of ['calls-O0', 'calls-O2', 'calls-O2-dwarf4', 'calls-O2-dwarf2', 'calls-O2-dwarf64'] as FixtureName[]) {
  test(`${name}: variable locations at each address equal gdb info scope`, async (t) => {
    const o = await open(t, name);
    if (!o) return;
    const out = tool(t, 'gdb', ['-nx', '-batch', ...FUNCS.flatMap((f) => ['-ex', `info scope ${f}`]), o.f.path]);
    if (out === undefined) return;
    const perFn = out.split(/^Scope for /m).slice(1);
    assert.equal(perFn.length, FUNCS.length, out);
    let checked = 0;
    for (const block of perFn) {
      const fnName = block.slice(0, block.indexOf(':'));
      const fn: FunctionInfo = o.dw.functions().find((f) => f.name === fnName)!;
      for (const s of infoScope(block)) {
        // gdb lists nested blocks' variables too (and their location ranges may reach outside the block): find
        // the variable's DIE where it is in scope, then compare its location over every range gdb printed.
        let die: number | undefined;
        for (let pc = fn.ranges[0]; pc < fn.ranges[1] && die === undefined; pc++) {
          die = o.dw.variablesAt(fn.dieOffset, pc).find((x) => x.name === s.name)?.dieOffset;
        }
        assert.ok(die !== undefined, `${fnName}: ${s.name} found`);
        const probes: Array<{ lo: number; hi: number; shape: Shape }> = s.ranges ?? [
          { lo: fn.entryPc!, hi: fn.ranges[1], shape: s.single! },
        ];
        for (const r of probes as Array<{ lo: number; hi: number; shape: Shape }>) {
          assert.deepEqual(ourShape(o.dw.locationOf(die, r.lo)), r.shape, `${fnName}: ${s.name} at 0x${r.lo.toString(16)}`);
          // The last byte of the range still uses it.
          assert.deepEqual(ourShape(o.dw.locationOf(die, r.hi - 1)), r.shape);
          checked++;
        }
        if (s.ranges) {
          // An address of the function that no range covers: gdb would say optimized out.
          const lo: number = fn.ranges[0],
            hi: number = fn.ranges[1];
          for (let pc: number = lo; pc < hi; pc++) {
            if (s.ranges.some((r) => pc >= r.lo && pc < r.hi)) continue;
            assert.equal(o.dw.locationOf(die, pc).kind, 'optimized-out', `${fnName}: ${s.name} at 0x${pc.toString(16)}`);
            break;
          }
        }
      }
    }
    assert.ok(checked >= 20, `${checked} locations compared`);
  });
}

test('calls-O2: entry locations follow the psABI argument registers; stack arguments are CFA-relative', async (t) => {
  for (const [name, regs] of [
    ['calls-O2', ['rdi', 'rsi', 'rdx', 'rcx', 'r8', 'r9']],
    ['calls-aarch64-O2', ['x0', 'x1', 'x2', 'x3', 'x4', 'x5', 'x6', 'x7']],
  ] as const) {
    const o = await open(t, name);
    if (!o) return;
    const fn = o.dw.functions().find((f) => f.name === 'many_args')!;
    const at = o.dw.variablesAt(fn.dieOffset, fn.entryPc!);
    assert.deepEqual(
      at.map((v) => v.kind),
      Array(8).fill('param'),
    );
    at.slice(0, regs.length).forEach((v, i) => assert.deepEqual(ourShape(v.location), { kind: 'register', name: regs[i] }, v.name));
    if (name === 'calls-O2') {
      assert.deepEqual(
        at.slice(6).map((v) => v.location),
        [
          { kind: 'fbreg', offset: 0 },
          { kind: 'fbreg', offset: 8 },
        ],
      );
      assert.deepEqual(o.dw.frameBase(fn), { kind: 'cfa', offset: 0 });
    }
  }
});

test('calls-O0: locals of nested blocks are in scope only inside their block', async (t) => {
  const o = await open(t, 'calls-O0');
  if (!o) return;
  const file = o.f.sourceFiles.find((f) => f.endsWith('calls.c'))!;
  const line =
    readFileSync(file, 'utf8')
      .split('\n')
      .findIndex((l) => l.includes('@line:sum_squares.step')) + 1;
  const fn = o.dw.functions().find((f) => f.name === 'sum_squares')!;
  const [pc] = o.dw.addressesForLine(file, line);
  const inLoop = o.dw.variablesAt(fn.dieOffset, pc);
  assert.deepEqual(
    inLoop.map((v) => `${v.kind} ${v.type} ${v.name}`),
    ['param int n', 'local long int acc', 'local int i'],
  );
  assert.ok(inLoop.every((v) => v.location.kind === 'fbreg'));
  const atEntry = o.dw.variablesAt(fn.dieOffset, fn.entryPc!);
  assert.deepEqual(
    atEntry.map((v) => v.name),
    ['n', 'acc'],
  );
});

// Child of hostileTypes.test.ts: builds one hostile type graph, asks the DWARF reader for its name and its
// description, and prints what came back (value or typed error) with the time taken. Run as a child so that
// a hang is caught by the parent's timer rather than blocking the test runner's event loop.
import { openDwarf } from '../../../../src/core/dwarf/index';
import {
  assemble,
  cu,
  doublingFunctionTypes,
  int,
  pointerChain,
  selfBitfieldStruct,
  selfParamFunctionType,
  sectionSource,
  T,
  A,
  typedefCycle,
  type DieSpec,
} from '../../../helpers/dwarfAsm';

export const SHAPES: Record<string, { dies: () => DieSpec[]; root: string }> = {
  'self-bitfield struct': { dies: () => [selfBitfieldStruct('S')], root: 'S' },
  'function type with parameters pointing back': { dies: () => selfParamFunctionType('F', 3), root: 'F' },
  'pointer to that function type': { dies: () => selfParamFunctionType('F', 3), root: 'F_ptr' },
  'function types doubling over 60 levels': { dies: () => doublingFunctionTypes('D', 60), root: 'D0' },
  'pointer chain 100 deep': { dies: () => pointerChain('P', 100), root: 'P0' },
  'pointer chain 100,000 deep': { dies: () => pointerChain('P', 100_000), root: 'P0' },
  'typedef cycle': { dies: () => typedefCycle('A', 3), root: 'A0' },
  'const of itself': { dies: () => [{ tag: T.const_type, label: 'C', attrs: [[A.type, { ref: 'C' }]] }], root: 'C' },
  'array of itself': {
    dies: () => [
      {
        tag: T.array_type,
        label: 'R',
        attrs: [[A.type, { ref: 'R' }]],
        children: [{ tag: T.subrange_type, attrs: [[A.upper_bound, { data1: 3 }]] }],
      },
    ],
    root: 'R',
  },
  'enum based on itself': {
    dies: () => [
      {
        tag: T.enumeration_type,
        label: 'E',
        attrs: [
          [A.name, { str: 'e' }],
          [A.byte_size, { data1: 4 }],
          [A.type, { ref: 'E' }],
        ],
      },
    ],
    root: 'E',
  },
};

type Outcome = { ok: string } | { error: string; name: string };

function attempt(f: () => string): Outcome {
  try {
    return { ok: f() };
  } catch (e) {
    return { error: (e as Error).message, name: (e as Error).name };
  }
}

if (require.main === module) {
  // One line per shape as it finishes: the parent tells which shape hung from the last line it got.
  for (const key of process.argv.slice(2)) {
    const shape = SHAPES[key];
    const a = assemble(cu([int(), ...shape.dies()]));
    const root = a.offsets.get(shape.root)!;
    const t0 = process.hrtime.bigint();
    const dw = openDwarf(sectionSource(a), 'x86_64');
    const name = attempt(() => dw.typeName(root));
    const desc = attempt(() => {
      const d = dw.typeOf(root);
      return `${d.kind} ${d.byteSize ?? '?'} ${d.members?.length ?? '-'}`;
    });
    // A second ask must answer from the caches, with the same outcome.
    const again = attempt(() => dw.typeOf(root).kind);
    const ms = Number(process.hrtime.bigint() - t0) / 1e6;
    process.stdout.write(`${JSON.stringify({ shape: key, root, name, desc, again, ms })}\n`);
  }
}

// A small DWARF 4 assembler for hand-made (and hostile) debug info: a tree of DIEs with symbolic references
// becomes .debug_abbrev and .debug_info bytes (one 32-bit compile unit, 8-byte addresses, little-endian), so
// a test knows every DIE offset by construction. `hostileElf` puts such sections into a real gcc-built
// executable with objcopy, for tests that run the whole CLI on it.
import { execFileSync } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { SectionSource } from '../../src/core/binary/sections';

export const T = {
  compile_unit: 0x11,
  structure_type: 0x13,
  member: 0x0d,
  pointer_type: 0x0f,
  typedef: 0x16,
  const_type: 0x26,
  subroutine_type: 0x15,
  formal_parameter: 0x05,
  base_type: 0x24,
  subprogram: 0x2e,
  variable: 0x34,
  array_type: 0x01,
  subrange_type: 0x21,
  enumeration_type: 0x04,
  enumerator: 0x28,
} as const;

export const A = {
  name: 0x03,
  byte_size: 0x0b,
  bit_offset: 0x0c,
  bit_size: 0x0d,
  language: 0x13,
  low_pc: 0x11,
  high_pc: 0x12,
  type: 0x49,
  data_member_location: 0x38,
  encoding: 0x3e,
  external: 0x3f,
  location: 0x02,
  frame_base: 0x40,
  upper_bound: 0x2f,
  const_value: 0x1c,
} as const;

/** An attribute value: a string, a number (data4/udata), a DIE label to refer to, an address, an expression. */
export type Val =
  | { str: string }
  | { data1: number }
  | { data4: number }
  | { data8: bigint }
  | { udata: number }
  | { ref: string }
  | { addr: bigint }
  | { expr: number[] }
  | { flag: true };

export interface DieSpec {
  tag: number;
  label?: string;
  attrs?: Array<[number, Val]>;
  children?: DieSpec[];
}

const FORM = {
  addr: 0x01,
  data1: 0x0b,
  data4: 0x06,
  data8: 0x07,
  string: 0x08,
  udata: 0x0f,
  ref4: 0x13,
  exprloc: 0x18,
  flag_present: 0x19,
};

function formOf(v: Val): number {
  if ('str' in v) return FORM.string;
  if ('data1' in v) return FORM.data1;
  if ('data4' in v) return FORM.data4;
  if ('data8' in v) return FORM.data8;
  if ('udata' in v) return FORM.udata;
  if ('ref' in v) return FORM.ref4;
  if ('addr' in v) return FORM.addr;
  if ('expr' in v) return FORM.exprloc;
  return FORM.flag_present;
}

/** Appends `v` as ULEB128. */
export function uleb(out: number[], v: number): void {
  do {
    let byte = v & 0x7f;
    v = Math.floor(v / 128);
    if (v) byte |= 0x80;
    out.push(byte);
  } while (v);
}

function le(out: number[], v: bigint | number, n: number): void {
  const b = BigInt(v);
  for (let i = 0; i < n; i++) out.push(Number((b >> BigInt(8 * i)) & 0xffn));
}

export interface Assembled {
  abbrev: Uint8Array;
  info: Uint8Array;
  /** Section offset of each labelled DIE. */
  offsets: Map<string, number>;
}

/** Assembles one compile unit whose root is `cu` (its tag should be compile_unit). */
export function assemble(cu: DieSpec): Assembled {
  const abbrevCodes = new Map<string, number>();
  const abbrev: number[] = [];
  const codeOf = (d: DieSpec): number => {
    const forms = (d.attrs ?? []).map(([at, v]) => [at, formOf(v)]);
    const key = `${d.tag}:${d.children?.length ? 1 : 0}:${forms.join(';')}`;
    let code = abbrevCodes.get(key);
    if (code === undefined) {
      code = abbrevCodes.size + 1;
      abbrevCodes.set(key, code);
      uleb(abbrev, code);
      uleb(abbrev, d.tag);
      abbrev.push(d.children?.length ? 1 : 0);
      for (const [at, f] of forms) {
        uleb(abbrev, at);
        uleb(abbrev, f);
      }
      abbrev.push(0, 0);
    }
    return code;
  };
  const info: number[] = [];
  le(info, 0, 4); // unit_length, patched below
  le(info, 4, 2); // version
  le(info, 0, 4); // debug_abbrev_offset
  info.push(8); // address_size
  const offsets = new Map<string, number>();
  const patches: Array<{ at: number; label: string }> = [];
  // Iterative, so a chain of 100,000 DIEs does not need 100,000 stack frames here.
  const stack: Array<DieSpec | 'end'> = [cu];
  while (stack.length) {
    const d = stack.pop()!;
    if (d === 'end') {
      info.push(0);
      continue;
    }
    if (d.label) offsets.set(d.label, info.length);
    uleb(info, codeOf(d));
    for (const [, v] of d.attrs ?? []) {
      if ('str' in v) info.push(...Buffer.from(v.str), 0);
      else if ('data1' in v) info.push(v.data1);
      else if ('data4' in v) le(info, v.data4, 4);
      else if ('data8' in v) le(info, v.data8, 8);
      else if ('udata' in v) uleb(info, v.udata);
      else if ('ref' in v) {
        patches.push({ at: info.length, label: v.ref });
        le(info, 0, 4);
      } else if ('addr' in v) le(info, v.addr, 8);
      else if ('expr' in v) {
        uleb(info, v.expr.length);
        info.push(...v.expr);
      }
    }
    if (d.children?.length) {
      stack.push('end');
      for (let i = d.children.length - 1; i >= 0; i--) stack.push(d.children[i]);
    }
  }
  for (const p of patches) {
    const off = offsets.get(p.label);
    if (off === undefined) throw new Error(`dwarfAsm: no DIE labelled ${p.label}`);
    const b: number[] = [];
    le(b, off, 4); // ref4 is relative to the unit, which starts at 0
    info.splice(p.at, 4, ...b);
  }
  const len: number[] = [];
  le(len, info.length - 4, 4);
  info.splice(0, 4, ...len);
  abbrev.push(0);
  return { abbrev: Uint8Array.from(abbrev), info: Uint8Array.from(info), offsets };
}

/** The assembled unit as a SectionSource for openDwarf(). */
export function sectionSource(a: Assembled): SectionSource {
  const m = new Map<string, Uint8Array>([
    ['.debug_abbrev', a.abbrev],
    ['.debug_info', a.info],
  ]);
  return { section: (n) => m.get(n), littleEndian: true, addressSize: 8 };
}

export const int = (label = 'int'): DieSpec => ({
  tag: T.base_type,
  label,
  attrs: [
    [A.name, { str: 'int' }],
    [A.byte_size, { data1: 4 }],
    [A.encoding, { data1: 5 }],
  ],
});

export const cu = (children: DieSpec[]): DieSpec => ({
  tag: T.compile_unit,
  attrs: [
    [A.name, { str: 'hostile.c' }],
    [A.language, { data1: 0x0c }], // C99
  ],
  children,
});

/** `struct S { S a : 1; S b : 1; }`, DWARF 2–4 style (DW_AT_bit_offset: storage size from the member's type). */
export function selfBitfieldStruct(label: string, name = 'S'): DieSpec {
  const bit = (n: string, off: number): DieSpec => ({
    tag: T.member,
    attrs: [
      [A.name, { str: n }],
      [A.type, { ref: label }],
      [A.bit_size, { data1: 1 }],
      [A.bit_offset, { data1: off }],
      [A.data_member_location, { data1: 0 }],
    ],
  });
  return { tag: T.structure_type, label, attrs: [[A.name, { str: name }]], children: [bit('a', 0), bit('b', 1)] };
}

/** A function type whose `n` parameters are pointers back to itself. */
export function selfParamFunctionType(label: string, n = 2): DieSpec[] {
  const ptr = `${label}_ptr`;
  return [
    {
      tag: T.subroutine_type,
      label,
      attrs: [[A.type, { ref: 'int' }]],
      children: Array.from({ length: n }, () => ({ tag: T.formal_parameter, attrs: [[A.type, { ref: ptr }]] as Array<[number, Val]> })),
    },
    {
      tag: T.pointer_type,
      label: ptr,
      attrs: [
        [A.byte_size, { data1: 8 }],
        [A.type, { ref: label }],
      ],
    },
  ];
}

/**
 * `levels` function types, each with two parameters pointing at the next: no cycle, but a rendering that
 * doubles at every level (2^levels without memoisation) unless it is shared and clipped.
 */
export function doublingFunctionTypes(label: string, levels: number): DieSpec[] {
  const out: DieSpec[] = [];
  for (let i = 0; i < levels; i++) {
    const next = i + 1 < levels ? `${label}${i + 1}_ptr` : 'int';
    out.push(
      {
        tag: T.subroutine_type,
        label: `${label}${i}`,
        attrs: [[A.type, { ref: 'int' }]],
        children: [
          { tag: T.formal_parameter, attrs: [[A.type, { ref: next }]] },
          { tag: T.formal_parameter, attrs: [[A.type, { ref: next }]] },
        ],
      },
      {
        tag: T.pointer_type,
        label: `${label}${i}_ptr`,
        attrs: [
          [A.byte_size, { data1: 8 }],
          [A.type, { ref: `${label}${i}` }],
        ],
      },
    );
  }
  return out;
}

/** A chain of `n` pointer types, `${label}0` → `${label}1` → … → int. */
export function pointerChain(label: string, n: number): DieSpec[] {
  return Array.from({ length: n }, (_, i) => ({
    tag: T.pointer_type,
    label: `${label}${i}`,
    attrs: [
      [A.byte_size, { data1: 8 }],
      [A.type, { ref: i + 1 < n ? `${label}${i + 1}` : 'int' }],
    ] as Array<[number, Val]>,
  }));
}

/** typedef A → typedef B → … → A (a cycle of `n` typedefs). */
export function typedefCycle(label: string, n = 2): DieSpec[] {
  return Array.from({ length: n }, (_, i) => ({
    tag: T.typedef,
    label: `${label}${i}`,
    attrs: [
      [A.name, { str: `${label}${i}_t` }],
      [A.type, { ref: `${label}${(i + 1) % n}` }],
    ] as Array<[number, Val]>,
  }));
}

/**
 * A subprogram at `address` (size `size`) with parameters of the given type labels, located in rdi, rsi… —
 * or, marked 'abi', with no location at all, so their places come from the calling convention (which has to
 * describe their types).
 */
export function subprogram(name: string, address: bigint, size: number, params: Array<[string, string, 'abi'?]>): DieSpec {
  const regs = [0x55, 0x54, 0x51, 0x52, 0x58, 0x59]; // DW_OP_reg5 (rdi), reg4 (rsi), reg1 (rdx), reg2 (rcx), reg8, reg9
  return {
    tag: T.subprogram,
    label: name,
    attrs: [
      [A.name, { str: name }],
      [A.external, { flag: true }],
      [A.type, { ref: 'int' }],
      [A.low_pc, { addr: address }],
      [A.high_pc, { data4: size }],
      [A.frame_base, { expr: [0x9c] }], // DW_OP_call_frame_cfa
    ],
    children: params.map(([p, type, abi], i) => ({
      tag: T.formal_parameter,
      attrs: [[A.name, { str: p }], [A.type, { ref: type }], ...(abi ? [] : [[A.location, { expr: [regs[i]] }]])] as Array<[number, Val]>,
    })),
  };
}

/**
 * A real x86-64 executable (gcc, no debug info of its own) with C functions `names` (each `int f(long)`),
 * given the DWARF that `dwarfFor(addresses)` builds: the test decides what those functions' DWARF says.
 */
export function hostileElf(names: string[], dwarfFor: (addr: Map<string, { address: bigint; size: number }>) => Assembled): string {
  const dir = mkdtempSync(join(tmpdir(), 'probelens-hostile-'));
  const src = join(dir, 'hostile.c');
  writeFileSync(
    src,
    `${names.map((n) => `__attribute__((noinline)) int ${n}(long x) { return (int)x + 1; }`).join('\n')}\nint main(void) { return ${names.map((n) => `${n}(1)`).join(' + ') || '0'}; }\n`,
  );
  const plain = join(dir, 'plain');
  execFileSync('gcc', ['-O1', '-g0', '-o', plain, src]);
  const addr = new Map<string, { address: bigint; size: number }>();
  for (const l of execFileSync('nm', ['-S', '--defined-only', plain], { encoding: 'utf8' }).split('\n')) {
    const m = /^([0-9a-f]+) ([0-9a-f]+) [Tt] (\w+)$/.exec(l);
    if (m) addr.set(m[3], { address: BigInt(`0x${m[1]}`), size: parseInt(m[2], 16) });
  }
  const a = dwarfFor(addr);
  writeFileSync(join(dir, 'abbrev'), a.abbrev);
  writeFileSync(join(dir, 'info'), a.info);
  const out = join(dir, 'hostile');
  execFileSync('objcopy', [
    '--add-section',
    `.debug_abbrev=${join(dir, 'abbrev')}`,
    '--add-section',
    `.debug_info=${join(dir, 'info')}`,
    plain,
    out,
  ]);
  return out;
}

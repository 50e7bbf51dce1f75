import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, test, type TestContext } from 'node:test';
import { openDwarf, type Dwarf } from '../../../../src/core/dwarf/index';
import { sectionsOf } from './objcopySections';
import { open, tool } from './oracle';

// A struct exercising bitfields (DW_AT_bit_offset in DWARF 2–4, DW_AT_data_bit_offset in 5), 2-D arrays, an
// anonymous union, typedefs, cv-qualified pointees, a function pointer and an enum.
const SRC = `#include <stdint.h>
typedef struct node node_t;
struct packet { uint8_t kind; unsigned flags:3; unsigned prio:5; signed delta:12; int64_t stamp; char tag[4][3];
  union { int i; float f; } u; node_t *next; const volatile int *cv; int (*cb)(int, const char *);
  enum color { RED, GREEN = 5, BLUE = -1 } color; _Bool ok; };
struct node { struct packet p; struct node *next; };
int use(struct packet *p, node_t *n) { return p->kind + (n != 0); }
int main(void) { struct packet p = {0}; node_t n = {0}; return use(&p, &n); }
`;
const dir = mkdtempSync(join(tmpdir(), 'pl-dwarf-types-'));
after(() => rmSync(dir, { recursive: true, force: true }));

function build(t: TestContext, flags: string[]): string | undefined {
  const out = join(dir, flags.join('').replace(/[^a-z0-9]/gi, ''));
  writeFileSync(join(dir, 'packet.c'), SRC);
  if (tool(t, 'gcc', [...flags, '-O0', '-o', out, join(dir, 'packet.c')]) === undefined) return undefined;
  return out;
}

interface GdbMember {
  offset: number;
  bit?: number;
  decl: string;
}

// Top-level members of `ptype /o`: "/* OFF[: BIT] | SIZE */    DECL;" (nested aggregates close with "} NAME;").
function gdbMembers(out: string): { members: GdbMember[]; size: number } {
  const members: GdbMember[] = [];
  let open: GdbMember | undefined;
  for (const l of out.split('\n')) {
    const m = /^\/\*\s+(\d+)(?::\s*(\d+))?\s+\|\s+\d+ \*\/ {4}(\S.*)$/.exec(l);
    if (m) {
      const g: GdbMember = { offset: Number(m[1]), bit: m[2] === undefined ? undefined : Number(m[2]), decl: m[3] };
      if (m[3].endsWith('{')) open = g;
      else members.push(g);
      continue;
    }
    const close = /^ {31}\} (\w+);$/.exec(l);
    if (close && open) {
      members.push({ ...open, decl: `${open.decl.replace(/ \{$/, '')} ${close[1]};` });
      open = undefined;
    }
  }
  const size = Number(/total size \(bytes\):\s+(\d+) \*\/\s*\n\s*\}\s*$/.exec(out)?.[1]);
  return { members, size };
}

function declOf(type: string, name: string): string {
  if (type.includes('(*)')) return type.replace('(*)', `(*${name})`);
  const br = type.indexOf('[');
  if (br > 0) return `${type.slice(0, br).trimEnd()} ${name}${type.slice(br)}`;
  return type.endsWith('*') ? `${type}${name}` : `${type} ${name}`;
}

function compareWithGdb(t: TestContext, dw: Dwarf, bin: string, struct: string, typeOffset: number): void {
  const out = tool(t, 'gdb', ['-nx', '-batch', '-ex', `ptype /o struct ${struct}`, bin]);
  if (out === undefined) return;
  const theirs = gdbMembers(out);
  const desc = dw.typeOf(typeOffset);
  assert.equal(desc.byteSize, theirs.size, `${struct} size`);
  const ours = desc.members!.map((m) => {
    const anon = m.type === 'union {...}' ? 'union' : m.type;
    const decl = declOf(anon, m.name) + (m.bitSize !== undefined ? ` : ${m.bitSize}` : '');
    return m.bitOffset !== undefined
      ? { offset: Math.floor(m.bitOffset / 8), bit: m.bitOffset % 8, decl: `${decl};` }
      : { offset: m.offset!, bit: undefined, decl: `${decl};` };
  });
  // gdb spells `signed` bitfields and `unsigned` as the full type names, as we do; anonymous unions as "union".
  assert.deepEqual(ours.map(canon), theirs.members.map(canon));
}

// gdb abbreviates base types ("long" for DWARF's "long int", "unsigned short" for "short unsigned int");
// compare integer spellings as a sorted word set with a redundant "int" dropped.
function canon<T extends { decl: string }>(m: T): T {
  const decl = m.decl.replace(/\b(?:(?:unsigned|signed|short|long|int|char)\s+)*(?:unsigned|signed|short|long|int|char)\b/g, (w) => {
    const words = w.split(/\s+/);
    const sized = words.some((x) => x === 'short' || x === 'long' || x === 'char');
    return words
      .filter((x) => !(x === 'int' && sized))
      .sort()
      .join(' ');
  });
  return { ...m, decl };
}

function findStruct(dw: Dwarf, name: string): number {
  // The first parameter of `use` points at the struct; walk the pointer.
  const use = dw.functions().find((f) => f.name === 'use' || f.name === 'account_deposit')!;
  const ptr = dw.typeOf(use.params[0].typeOffset);
  assert.equal(ptr.kind, 'pointer');
  assert.equal(dw.typeOf(ptr.targetOffset).name, `struct ${name}`);
  return ptr.targetOffset!;
}

for (const flags of [['-gdwarf-2'], ['-gdwarf-4'], ['-gdwarf-5'], ['-gdwarf-5', '-gdwarf64'], ['-gdwarf-4', '-gdwarf64']]) {
  test(`${flags.join(' ')}: struct layout (bitfields, arrays, union, pointers) equals gdb ptype /o`, (t) => {
    const bin = build(t, flags);
    if (!bin) return;
    const dw = openDwarf(sectionsOf(bin), 'x86_64');
    const off = findStruct(dw, 'packet');
    compareWithGdb(t, dw, bin, 'packet', off);
    const members = dw.typeOf(off).members!;
    const byName = (n: string) => members.find((m) => m.name === n)!;
    assert.deepEqual(dw.typeOf(byName('tag').typeOffset).dims, [4, 3]);
    assert.equal(dw.typeOf(byName('tag').typeOffset).byteSize, 12);
    const stamp = dw.typeOf(byName('stamp').typeOffset);
    assert.equal(stamp.name, 'int64_t');
    assert.equal(stamp.kind, 'typedef');
    assert.equal(stamp.signed, true);
    assert.equal(stamp.byteSize, 8);
    assert.equal(dw.typeOf(byName('kind').typeOffset).signed, false);
    assert.equal(dw.typeOf(byName('ok').typeOffset).bool, true);
    const color = dw.typeOf(byName('color').typeOffset);
    assert.deepEqual(
      color.enumerators?.map((e) => e.name),
      ['RED', 'GREEN', 'BLUE'],
    );
    assert.equal(color.enumerators?.[1].value, 5);
    assert.equal(dw.typeOf(byName('u').typeOffset).kind, 'union');
    assert.equal(dw.typeName(byName('cv').typeOffset), 'const volatile int *');
    const use = dw.functions().find((f) => f.name === 'use')!;
    assert.deepEqual(
      use.params.map((p) => dw.typeName(p.typeOffset)),
      ['struct packet *', 'node_t *'],
    );
  });
}

test('calls fixture: struct account layout equals gdb ptype /o at -O0 and -O2', async (t) => {
  for (const name of ['calls-O0', 'calls-O2-dwarf2', 'calls-O2-dwarf64'] as const) {
    const o = await open(t, name);
    if (!o) return;
    compareWithGdb(t, o.dw, o.f.path, 'account', findStruct(o.dw, 'account'));
  }
});

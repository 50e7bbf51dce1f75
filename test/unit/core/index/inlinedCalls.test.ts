// Which inlined copies are where a call begins, on DWARF assembled by hand in the two shapes GCC 12 left in redis
// (see inlinedSites): a function's body inlined into itself at its own declaration, and fragments of copies whose
// code was merged into a sibling copy that kept the inline-entry marker (DW_AT_entry_pc).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { openDwarf } from '../../../../src/core/dwarf/index';
import { inlinedSites } from '../../../../src/core/index/sites';
import { assemble, cu, sectionSource, A, T, type DieSpec, type Val } from '../../../helpers/dwarfAsm';

const INLINED = 0x1d;
const AT = { abstract_origin: 0x31, entry_pc: 0x52, call_line: 0x59, call_column: 0x57, decl_line: 0x3b, decl_column: 0x39, inline: 0x20 };

const abstract = (label: string, name: string, line: number): DieSpec => ({
  tag: T.subprogram,
  label,
  attrs: [
    [A.name, { str: name }],
    [AT.decl_line, { data1: line }],
    [AT.decl_column, { data1: 6 }],
    [AT.inline, { data1: 1 }],
  ],
});
/** An inlined copy of `origin` at `lo` (size `size`), called from line:column; `entry` false drops DW_AT_entry_pc. */
function copy(origin: string, lo: number, size: number, line: number, column: number, entry = true, children: DieSpec[] = []): DieSpec {
  const attrs: Array<[number, Val]> = [[AT.abstract_origin, { ref: origin }]];
  if (entry) attrs.push([AT.entry_pc, { addr: BigInt(lo) }]);
  attrs.push(
    [A.low_pc, { addr: BigInt(lo) }],
    [A.high_pc, { data4: size }],
    [AT.call_line, { data1: line }],
    [AT.call_column, { data1: column }],
  );
  return { tag: INLINED, attrs, children };
}
const concrete = (attrs: Array<[number, Val]>, lo: number, size: number, children: DieSpec[]): DieSpec => ({
  tag: T.subprogram,
  attrs: [...attrs, [A.low_pc, { addr: BigInt(lo) }], [A.high_pc, { data4: size }]],
  children,
});

test('inlined sites: a body inlined into its own function and entry-less fragments of merged copies are not calls', () => {
  const a = assemble(
    cu([
      abstract('f', 'f', 10),
      abstract('g', 'g', 20),
      // f out of line: GCC's wrapper shape (its body an inlined copy of f at f's own declaration, 10:6) and a
      // real recursive call (12:9).
      concrete([[AT.abstract_origin, { ref: 'f' }]], 0x1000, 0x100, [copy('f', 0x1010, 0x20, 10, 6), copy('f', 0x1040, 0x10, 12, 9)]),
      // h inlines g twice; each g copy calls f at 22:5. The second copy of that call kept the entry marker; the
      // first is a 5-byte fragment without one (its code merged into the second).
      concrete([[A.name, { str: 'h' }]], 0x2000, 0x200, [
        copy('g', 0x2010, 0x40, 31, 3, true, [copy('f', 0x2018, 0x5, 22, 5, false)]),
        copy('g', 0x2080, 0x40, 32, 3, true, [copy('f', 0x2090, 0x10, 22, 5), copy('f', 0x20a0, 0x8, 10, 6)]),
        // f inlined into h, with its wrapped body inside that copy.
        copy('f', 0x2100, 0x40, 33, 3, true, [copy('f', 0x2110, 0x10, 10, 6)]),
      ]),
      // k: the same call without any marked sibling in its function is still a site (never silently fewer).
      concrete([[A.name, { str: 'k' }]], 0x3000, 0x100, [copy('g', 0x3010, 0x40, 41, 3, true, [copy('f', 0x3020, 0x10, 22, 5, false)])]),
    ]),
  );
  const dw = openDwarf(sectionSource(a), 'x86_64');
  const f = dw.functions().find((x) => x.name === 'f');
  assert.ok(f, 'f is indexed');
  assert.equal(f.inlinedDies.length, 8, 'the DWARF has eight inlined copies of f');
  const sites = inlinedSites(dw, f, () => undefined);
  assert.deepEqual(
    sites.map((s) => `0x${s.address.toString(16)}`),
    // Not calls: 0x1010 and 0x2110 (f's body at f's own declaration, in f out of line and in f inlined into h)
    // and the fragment 0x2018. 0x20a0 is at f's declaration too, but g calls it there: a call.
    ['0x1040', '0x2090', '0x20a0', '0x2100', '0x3020'],
  );
});

// The calls a function's DWARF describes (DW_TAG_call_site, GCC's DW_TAG_GNU_call_site before DWARF 5): by the
// address each returns to, the DIE of the function called (its declaration or definition), and how many integer
// argument registers that callee may read by its prototype.
// Tests: test/unit/core/probes/inlinedEntries.fixture.test.ts
import type { Dwarf } from './index';
import { AT, TAG } from './constants';
import { nextAbbrev, skipAttrs } from './unit';

const AT_PROTOTYPED = 0x27;
const AT_CALL_RETURN_PC = 0x7d;
const AT_CALL_ORIGIN = 0x7f;
/** Integer argument registers of the System V x86-64 ABI. */
const ARG_REGISTERS = 6;

/** The call sites inside the subprogram DIE at `holder`, however deeply nested: return address → callee's DIE. */
export function callSitesIn(dw: Dwarf, holder: number): Map<number, number> {
  const out = new Map<number, number>();
  const u = dw.unitOf(holder);
  const r = u.reader(holder);
  const top = nextAbbrev(u, r);
  if (!top || !top.hasChildren) return out;
  skipAttrs(u, r, top);
  for (let depth = 1; depth > 0 && r.pos < u.end;) {
    const at = r.pos;
    const a = nextAbbrev(u, r);
    if (!a) {
      depth--;
      continue;
    }
    skipAttrs(u, r, a);
    if (a.tag === TAG.call_site || a.tag === TAG.GNU_call_site) {
      const d = u.dieAt(at);
      const ret = a.tag === TAG.call_site ? u.addr(d, AT_CALL_RETURN_PC) : u.addr(d, AT.low_pc);
      const origin = a.tag === TAG.call_site ? u.ref(d, AT_CALL_ORIGIN) : u.ref(d, AT.abstract_origin);
      if (ret !== undefined && origin !== undefined) out.set(ret, origin);
    }
    if (a.hasChildren) depth++;
  }
  return out;
}

/**
 * How many integer argument registers (%rdi, %rsi, %rdx, %rcx, %r8, %r9 in order) a call of the subprogram DIE at
 * `offset` may read: one per parameter, one more for a hidden pointer to an aggregate return value. Undefined
 * unless that is certain from a C prototype: no prototype, `...`, a parameter that is not an integer, enum or
 * pointer of at most 8 bytes (a float goes in a vector register, an aggregate in two registers or on the stack), or
 * more parameters than registers.
 */
export function integerArguments(dw: Dwarf, offset: number): number | undefined {
  let d = dw.dieAt(offset);
  for (let n = 0; n < 4 && d.tag === TAG.subprogram && !d.unit.flag(d, AT_PROTOTYPED); n++) {
    const next = d.unit.ref(d, AT.specification) ?? d.unit.ref(d, AT.abstract_origin);
    if (next === undefined) break;
    d = dw.dieAt(next);
  }
  if (d.tag !== TAG.subprogram || !d.unit.flag(d, AT_PROTOTYPED)) return undefined;
  let count = 0;
  let known = true;
  dw.types.children(d, (c) => {
    if (c.tag === TAG.unspecified_parameters) known = false;
    if (c.tag !== TAG.formal_parameter) return;
    count++;
    if (!scalar(dw, c.unit.ref(c, AT.type))) known = false;
  });
  const ret = strip(dw, d.unit.ref(d, AT.type));
  if (ret !== undefined && !['base', 'pointer', 'reference', 'enum', 'void'].includes(dw.typeOf(ret).kind)) count++;
  return known && count <= ARG_REGISTERS ? count : undefined;
}

/** The type at `offset` without typedefs and qualifiers. */
function strip(dw: Dwarf, offset: number | undefined): number | undefined {
  for (let n = 0; n < 16 && offset !== undefined; n++) {
    const t = dw.typeOf(offset);
    if (!['typedef', 'const', 'volatile', 'restrict', 'atomic'].includes(t.kind)) return offset;
    offset = t.targetOffset;
  }
  return offset;
}

function scalar(dw: Dwarf, offset: number | undefined): boolean {
  const s = strip(dw, offset);
  if (s === undefined) return false;
  const t = dw.typeOf(s);
  if (t.kind === 'pointer' || t.kind === 'reference') return true;
  if (t.kind === 'enum') return (t.byteSize ?? 8) <= 8;
  return t.kind === 'base' && !t.float && t.byteSize !== undefined && t.byteSize <= 8;
}

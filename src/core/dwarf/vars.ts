// Parameters and local variables in scope at an address, with their location reduced at that address.
// Decoded on demand per function: the index pass never touches locals or location lists.
import * as K from './constants';
import { describeLocation, type Arch, type LocDesc } from './expr';
import { rangesOf, locationAtPc, locationOf } from './lists';
import { inherited, type Resolver } from './functions';
import type { Types } from './types';
import { num, readDie, type Die } from './unit';

// Bound once: per-access getters of a transpiled module namespace would sit on the hot path.
const { AT, TAG } = K;

export interface VariableInfo {
  readonly name: string;
  readonly kind: 'param' | 'local';
  readonly typeOffset: number | undefined;
  readonly type: string;
  /** Where the value is at the requested address. */
  readonly location: LocDesc;
  readonly declLine: number;
  readonly dieOffset: number;
}

function inRanges(ranges: number[], pc: number): boolean {
  for (let i = 0; i < ranges.length; i += 2) if (pc >= ranges[i] && pc < ranges[i + 1]) return true;
  return false;
}

/**
 * Variables visible at `pc` (at location view `view`, see locationAtPc) inside the scope DIE `scope` (a subprogram or inlined_subroutine): its parameters,
 * its own locals, and those of nested lexical blocks whose ranges contain `pc`. Inner declarations shadow
 * outer ones of the same name, as a debugger shows them.
 */
export function variablesAt(res: Resolver, types: Types, arch: Arch, scope: Die, pc: number, view?: number): VariableInfo[] {
  const out: VariableInfo[] = [];
  const visit = (d: Die, depth: number) => {
    if (!d.abbrev.hasChildren || depth > 64) return;
    const u = d.unit;
    const r = u.reader(d.end);
    for (let n = 0; n < 1e6; n++) {
      const c = readDie(u, r);
      if (!c) return;
      if (c.tag === TAG.formal_parameter || c.tag === TAG.variable) {
        const isParam = c.tag === TAG.formal_parameter;
        const name = inherited(res, c, (x) => x.unit.str(x, AT.name)) ?? '';
        const typeOffset = inherited(res, c, (x) => x.unit.ref(x, AT.type));
        let location: LocDesc;
        if (c.has(AT.location)) location = describeLocation(u, locationAtPc(locationOf(u, c), pc, view), arch);
        else location = constValueOf(c) ?? { kind: 'optimized-out' };
        // Skip extern declarations of globals inside a function body; they are not locals.
        if (!(c.tag === TAG.variable && u.flag(c, AT.declaration))) {
          out.push({
            name,
            kind: isParam ? 'param' : 'local',
            typeOffset,
            type: types.name(typeOffset),
            location,
            declLine: inherited(res, c, (x) => num(x, AT.decl_line)) ?? 0,
            dieOffset: c.offset,
          });
        }
      } else if (c.tag === TAG.lexical_block) {
        const rg = rangesOf(u, c);
        if (rg.length === 0 || inRanges(rg, pc)) visit(c, depth + 1);
      }
      r.seek(c.end);
      if (c.abbrev.hasChildren) skip(r, c);
    }
  };
  const skip = (r: ReturnType<Die['unit']['reader']>, c: Die) => {
    let depth = 1;
    while (depth > 0) {
      const d = readDie(c.unit, r);
      if (!d) depth--;
      else if (d.abbrev.hasChildren) depth++;
    }
  };
  visit(scope, 0);
  // Innermost wins on shadowing: later (deeper) entries replace earlier ones of the same name.
  const seen = new Map<string, number>();
  const result: VariableInfo[] = [];
  for (const v of out) {
    const prev = seen.get(v.name);
    if (v.name && prev !== undefined && v.kind === 'local') result[prev] = v;
    else {
      seen.set(v.name, result.length);
      result.push(v);
    }
  }
  return result;
}

const INTEGER_FORMS = new Set<number>([
  K.FORM.data1,
  K.FORM.data2,
  K.FORM.data4,
  K.FORM.data8,
  K.FORM.sdata,
  K.FORM.udata,
  K.FORM.implicit_const,
]);

/**
 * DW_AT_const_value as a location: the compiler folded the variable to this constant (DWARF 5 §4.1.10). Integer
 * forms hold the value; block forms hold its bytes in target order. String constants are left out.
 */
export function constValueOf(d: Die): LocDesc | undefined {
  const i = d.index(AT.const_value);
  if (i < 0) return undefined;
  const f = d.forms[i];
  const blk = d.unit.block(d, AT.const_value);
  if (blk) return { kind: 'implicit', bytes: blk.buf.subarray(blk.start, blk.start + blk.len) };
  // data8 values are read as doubles: past 2^53 the constant's low bits are gone, so it is not claimed.
  if (!INTEGER_FORMS.has(f) || !Number.isSafeInteger(d.vals[i])) return { kind: 'implicit', bytes: new Uint8Array(0) };
  return { kind: 'value', value: d.vals[i] };
}

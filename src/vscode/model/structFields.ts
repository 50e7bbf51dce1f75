// "Trace with arguments…" offers, besides the parameters, the fields behind struct pointers (`acct->balance`)
// and of structs passed by value (`p.x`), read from the DWARF types: one level deep, scalars and strings only
// being the useful ones to fetch, nested aggregates left to the user's own spec text.
import type { TypeDesc } from '../../core/dwarf/types';
import { stripQualifiers } from '../../core/fetchargs/fetch';

export interface FieldChoice {
  /** the argument text in perf-probe syntax: `acct->balance`, `p.x` */
  arg: string;
  type: string;
}

const AGGREGATE = new Set(['struct', 'union', 'class']);

export function fieldChoices(
  vars: ReadonlyArray<{ name: string; typeOffset?: number }>,
  describe: (offset: number | undefined) => TypeDesc,
  max = 64,
): FieldChoice[] {
  const out: FieldChoice[] = [];
  for (const v of vars) {
    if (v.typeOffset === undefined) continue;
    let t = stripQualifiers(describe(v.typeOffset), describe);
    let op = '.';
    if (t.kind === 'pointer') {
      t = stripQualifiers(describe(t.targetOffset), describe);
      op = '->';
    }
    if (!AGGREGATE.has(t.kind)) continue;
    for (const m of t.members ?? []) {
      if (!m.name || out.length >= max) continue;
      const mt = stripQualifiers(describe(m.typeOffset), describe);
      if (AGGREGATE.has(mt.kind) || (mt.kind === 'array' && !mt.dims)) continue;
      out.push({ arg: `${v.name}${op}${m.name}`, type: m.type });
    }
  }
  return out;
}

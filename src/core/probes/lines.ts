// Line probes: every place a source line's code runs, each run of it seen once, and which copy of which
// function it ran in. The line table already carries each copy's own lines (an inlined copy's rows name the
// callee's file:line, a clone's or .cold block's rows the function's), so every copy of a line is among its
// is_stmt rows; the sites' code ranges then say whose copy each address is.
import type { BinaryIndex } from '../index/binaryIndex';
import type { CopyAt } from '../index/codeMap';
import type { FunctionSite, IndexedFunction } from '../index/model';

export interface LineAddress {
  address: bigint;
  /** The function the line belongs to there, and the copy of it that runs (undefined: no DWARF function). */
  fn?: IndexedFunction;
  site?: FunctionSite;
}

/**
 * Whose line `file:line` is at `address`: of the copies holding the address, the function declared in that
 * file nearest above the line (an inlined callee declared above its caller still wins for its own lines, the
 * caller for lines below its own declaration), innermost on a tie (a function inlined into itself).
 */
export function ownerAt(index: BinaryIndex, address: bigint, file: string, line: number): CopyAt | undefined {
  const copies = index.copiesAt(address);
  let best: CopyAt | undefined;
  for (const c of copies) {
    const l = c.fn.line;
    if (c.fn.file !== file || l === undefined || l > line) continue;
    if (!best || l > best.fn.line!) best = c;
  }
  return best ?? copies[0];
}

/**
 * The addresses a probe on `file:line` arms: in each copy, the first is_stmt row of each block of the line's
 * code. A block is a run of rows of the line with no other line's row between (GCC repeats rows for columns and
 * views, and may open a block with a non-statement row). A call on the line whose callee was inlined begins at
 * the inlined copy's entry, which the line table gives the callee's line: that entry counts as the line's too
 * (perf probe does the same), unless the line's own code runs straight into it.
 */
export function lineAddresses(index: BinaryIndex, file: string, line: number): LineAddress[] {
  const candidates = new Set(index.addressesForLine(file, line));
  for (const f of index.functions())
    for (const s of f.sites) if (s.kind === 'inlined' && s.line === line && s.file === file) candidates.add(s.address);
  const out: LineAddress[] = [];
  const last = new Map<FunctionSite | undefined, bigint>();
  for (const a of [...candidates].sort((x, y) => (x < y ? -1 : x > y ? 1 : 0))) {
    const owner = ownerAt(index, a, file, line);
    const k = last.get(owner?.site);
    last.set(owner?.site, a);
    if (
      k !== undefined &&
      index.onlyLineBetween(k, a, file, line) &&
      (a === 0n || ownerAt(index, a - 1n, file, line)?.site === owner?.site)
    )
      continue;
    out.push({ address: a, fn: owner?.fn ?? index.functionContaining(a), site: owner?.site });
  }
  return out;
}

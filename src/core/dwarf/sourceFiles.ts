// Which source files a binary was built from, cheaply: each compile unit's root DIE (its DW_AT_name, made
// absolute against DW_AT_comp_dir) and the file table of its line program's header. No DIE below the root
// and no line program is decoded, so this costs a small fraction of a full index: it is what discovery uses
// to tell which of a workspace's binaries holds the file open in the editor.
// Tests: test/unit/core/workspace/scan.test.ts
import { posix } from 'node:path';
import type { SectionSource } from '../binary/sections';
import { parseLineFiles } from './line';
import { Sections } from './sections';
import { isTypeUnit } from './unit';
import { parseUnits } from './unitHeader';

export interface SourceFiles {
  /** The compile units' primary source files (normalised absolute paths). */
  units: string[];
  /** Every file any line table names (primary sources and headers alike), de-duplicated. */
  files: string[];
}

export function sourceFilesOf(src: SectionSource): SourceFiles {
  const dw = new Sections(src);
  if (!dw.get('.debug_info')) return { units: [], files: [] };
  const units = new Set<string>();
  const files = new Set<string>();
  const seenTables = new Set<number>();
  for (const u of parseUnits(dw)) {
    if (isTypeUnit(u)) continue;
    if (u.name) units.add(posix.normalize(posix.isAbsolute(u.name) ? u.name : posix.join(u.compDir || '/', u.name)));
    if (u.stmtList < 0 || seenTables.has(u.stmtList)) continue;
    seenTables.add(u.stmtList);
    for (const f of parseLineFiles(u, u.stmtList)) if (f) files.add(f);
  }
  for (const f of units) files.add(f);
  return { units: [...units], files: [...files] };
}

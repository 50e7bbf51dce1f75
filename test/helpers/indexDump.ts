// A canonical text form of an IndexData: what "the same index" means when two builds are compared (pool sizes,
// open file first then completed, a partly reused cache). Bigints become decimal strings, typed arrays plain
// arrays, absent and undefined optional fields the same thing; key order is fixed by sorting.
import { INDEX_FORMAT, type IndexData } from '../../src/core/index/model';

function canonical(v: unknown): unknown {
  if (typeof v === 'bigint') return `${v}n`;
  if (ArrayBuffer.isView(v)) return Array.from(v as unknown as ArrayLike<number>);
  if (Array.isArray(v)) return v.map(canonical);
  if (v && typeof v === 'object') {
    const out: Record<string, unknown> = {};
    for (const k of Object.keys(v).sort()) {
      const x = (v as Record<string, unknown>)[k];
      if (x !== undefined) out[k] = canonical(x);
    }
    return out;
  }
  return v;
}

/** One line per function, then the files, the line rows and the rest, in the index's own order. */
export function indexDump(data: IndexData): string {
  const { functions, files, lines, ...rest } = data;
  return [
    JSON.stringify(canonical(rest)),
    ...functions.map((f) => JSON.stringify(canonical(f))),
    JSON.stringify(files),
    JSON.stringify(canonical(lines)),
  ].join('\n');
}

/** What indexDump needs around a DWARF part (the merged parts are compared, not the symbol pass). */
const PART_BASE: IndexData = {
  format: INDEX_FORMAT,
  path: '',
  size: 0,
  mtimeMs: 0,
  arch: 'x86_64',
  elfType: 'DYN',
  symbolsOnly: false,
  functions: [],
  files: [],
  lines: { address: new Float64Array(0), line: new Uint32Array(0), file: new Uint32Array(0), flags: new Uint8Array(0) },
  usdt: [],
};

/** indexDump of a merged DWARF part (functions, files, lines) alone. */
export function partDump(part: Pick<IndexData, 'functions' | 'files' | 'lines'>): string {
  return indexDump({ ...PART_BASE, ...part });
}

// Line probes beside `perf probe -D FILE:LINE` (perf 6.1, a dry run): which lines to compare on a corpus binary,
// perf's answer for one line, and every difference with its reason. Shared by the corpus tier (a sample) and
// `npm run bench:parity` (a larger one).
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import type { BinaryIndex } from '../../src/core/index/binaryIndex';
import { LINE_END_SEQUENCE, LINE_IS_STMT } from '../../src/core/index/model';
import { lineAddresses, ownerAt } from '../../src/core/probes/lines';
import { symbolAt, type ElfFacts } from './parity';

const execFileP = promisify(execFile);

export type LineReason =
  /** perf 6.1 refuses a line when another line's row shares one of its addresses ("sharing the address"). */
  | 'perf-refuses-shared-address'
  /** perf refuses the whole line when one of its addresses is in a block it finds no symbol for (`.cold`). */
  | 'perf-refuses-no-symbol'
  /** perf finds no DWARF scope (function) for one of the line's addresses and refuses the line. */
  | 'perf-refuses-no-scope'
  | 'perf-refuses-other'
  /** perf cannot name the event after a C++ function (`~T`, `f<T>`) and refuses the line. */
  | 'perf-refuses-event-name'
  /** perf arms every is_stmt row; ProbeLens one per block, so a row that continues the block is perf's only. */
  | 'perf-per-row'
  /**
   * perf also arms the entry of an inlined call made on the line when the line's own code runs straight into it
   * (two hits per run); ProbeLens arms the block's start only.
   */
  | 'perf-call-entry-in-block'
  /** ProbeLens also arms the entry of an inlined call made on the line, as perf does for a call line it finds. */
  | 'ours-inlined-call-entry'
  /**
   * perf also arms a function's entry for its declaration line (a call begins there); ProbeLens arms the line's
   * own rows only, so a call is not counted twice when the line also has code after the entry.
   */
  | 'perf-declaration-entry'
  | 'ours-only-other'
  | 'perf-only-other';

export interface LineComparison {
  spec: string;
  ours: bigint[];
  perf?: bigint[];
  perfError?: string;
  inlined: boolean;
  differences: Array<{ side: 'ours-only' | 'perf-only' | 'perf-refuses'; address?: bigint; reason: LineReason; symbol?: string }>;
}

/**
 * Lines of the program's own C sources that have code: every `step`-th (file, line) in a sorted order
 * (deterministic), plus as many lines whose code is in an inlined copy, so inlined functions' lines are sampled
 * whatever their share.
 */
export function sampleLines(index: BinaryIndex, srcDir: string, count: number): Array<{ file: string; line: number; inlined: boolean }> {
  const { line, file, flags, address } = index.data.lines;
  const files = index.data.files;
  const seen = new Map<string, { file: string; line: number; address: number }>();
  for (let i = 0; i < line.length; i++) {
    if (!(flags[i] & LINE_IS_STMT) || flags[i] & LINE_END_SEQUENCE || line[i] === 0) continue;
    const f = files[file[i]];
    if (!f.startsWith(`${srcDir}/`) || !/\.(c|h|cc|cpp|hpp|hh)$/.test(f)) continue;
    const key = `${f}:${line[i]}`;
    if (!seen.has(key)) seen.set(key, { file: f, line: line[i], address: address[i] });
  }
  const all = [...seen.values()].sort((a, b) => a.file.localeCompare(b.file) || a.line - b.line);
  const isInlined = (x: { file: string; line: number; address: number }) =>
    ownerAt(index, BigInt(x.address), x.file, x.line)?.site.kind === 'inlined';
  const pick = <T>(list: T[], n: number) => (list.length <= n ? list : list.filter((_, i) => i % Math.ceil(list.length / n) === 0));
  const plain = pick(all, Math.ceil(count / 2));
  const inlined = pick(all.filter(isInlined), Math.floor(count / 2));
  const out = new Map<string, { file: string; line: number; inlined: boolean }>();
  for (const x of [...plain, ...inlined]) out.set(`${x.file}:${x.line}`, { file: x.file, line: x.line, inlined: isInlined(x) });
  return [...out.values()];
}

/** perf probe's file offsets for one line, or its error. */
export async function perfLine(bin: string, spec: string): Promise<{ offsets: bigint[] } | { error: string }> {
  try {
    const { stdout, stderr } = await execFileP('perf', ['probe', '-x', bin, '-D', spec], { maxBuffer: 64 << 20 });
    const offsets = [...`${stdout}\n${stderr}`.matchAll(/^p:\S+ \S+:0x([0-9a-f]+)/gm)].map((m) => BigInt(`0x${m[1]}`));
    return offsets.length ? { offsets } : { error: 'perf probe printed no event' };
  } catch (e) {
    const err = e as { stderr?: string; message: string };
    return { error: (err.stderr ?? err.message).trim().split('\n')[0] || 'perf probe failed' };
  }
}

/**
 * Compares one line. perf is given the path below `srcDir` (it matches a path's tail; a full path holding a `+`,
 * like Debian's version directories, reads to it as an offset).
 */
export async function compareLine(
  bin: string,
  facts: ElfFacts,
  index: BinaryIndex,
  srcDir: string,
  file: string,
  line: number,
  inlined: boolean,
): Promise<LineComparison> {
  const spec = `${file.startsWith(`${srcDir}/`) ? file.slice(srcDir.length + 1) : file}:${line}`;
  const addrs = lineAddresses(index, file, line);
  const ours = addrs.map((a) => a.address);
  const cmp: LineComparison = { spec, ours, inlined, differences: [] };
  const answer = await perfLine(bin, spec);
  if ('error' in answer) {
    cmp.perfError = answer.error;
    const reason: LineReason = /sharing the address/.test(answer.error)
      ? 'perf-refuses-shared-address'
      : /Failed to find symbol/.test(answer.error)
        ? 'perf-refuses-no-symbol'
        : /invalid event name/.test(answer.error)
          ? 'perf-refuses-event-name'
          : /Failed to find scope/.test(answer.error)
            ? 'perf-refuses-no-scope'
            : 'perf-refuses-other';
    cmp.differences.push({ side: 'perf-refuses', reason });
    return cmp;
  }
  cmp.perf = answer.offsets;
  const toAddr = (off: bigint) => {
    const l = facts.loads.find((s) => off >= s.offset && off < s.offset + s.filesz);
    return l ? off - l.offset + l.vaddr : off;
  };
  const perfAddrs = new Set(answer.offsets.map(toAddr));
  const ourSet = new Set(ours);
  const rows = new Set(index.addressesForLine(file, line));
  const sym = (a: bigint) => symbolAt(facts, a)?.name;
  for (const a of ours) {
    if (perfAddrs.has(a)) continue;
    const reason: LineReason = !rows.has(a) ? 'ours-inlined-call-entry' : 'ours-only-other';
    cmp.differences.push({ side: 'ours-only', address: a, reason, symbol: sym(a) });
  }
  for (const a of perfAddrs) {
    if (ourSet.has(a)) continue;
    // An address inside a block ProbeLens arms at its start: nothing but the line's rows since our probe there.
    const owner = ownerAt(index, a, file, line)?.site;
    const start = addrs.filter((x) => x.address < a && x.site === owner).at(-1);
    const continues = start !== undefined && index.onlyLineBetween(start.address, a, file, line);
    const declared = index
      .functions()
      .some((f) => f.file === file && f.line === line && f.sites.some((x) => x.kind !== 'inlined' && x.address === a));
    const reason: LineReason = continues
      ? rows.has(a)
        ? 'perf-per-row'
        : 'perf-call-entry-in-block'
      : declared
        ? 'perf-declaration-entry'
        : 'perf-only-other';
    cmp.differences.push({ side: 'perf-only', address: a, reason, symbol: sym(a) });
  }
  return cmp;
}

// Which code lenses go above which lines of a source file, computed from the binary index's functions for
// that file. Pure: the provider in ../codeLens.ts only turns these into vscode.CodeLens objects.
import type { IndexedFunction } from '../../core/index/model';
import { formatCount, formatDuration } from '../../shared/hitText';
import type { ProbeState } from './stats';

export type LensKind = 'trace' | 'returns' | 'latency' | 'unprobeable';

export interface LensModel {
  /** 1-based line the lens sits above */
  line: number;
  kind: LensKind;
  title: string;
  function: string;
  /** the specs this lens arms (empty for 'unprobeable') */
  specs: string[];
  /** why the function cannot be probed ('unprobeable' only) */
  reason?: string;
}

export interface LensOptions {
  trace: boolean;
  returns: boolean;
  latency: boolean;
  isGo: boolean;
  /** the file's text lines, for Go (its DWARF line is the function's first statement, not the `func` line) */
  lineText?: (line: number) => string | undefined;
  /** true when more than one function in the binary has this name (then specs say @SRC) */
  ambiguous?: (name: string) => boolean;
  /** the SRC to put after @ when ambiguous (the file's name as the binary knows it) */
  src?: string;
}

export interface LiveSpec {
  state: ProbeState;
  hits: number;
  p50Ns?: number;
  calls?: number;
  /** The counts are lower bounds (see SpecStats.lowerBound): shown as "≥ N". */
  lowerBound?: boolean;
  /** A kernel probe's source (SpecStats.kernelSource), said after the state. */
  kernelSource?: 'dwarf' | 'btf';
}

/** How a lens names a kernel probe's source: as the CLI does, shorter. */
export const SOURCE_WORDS = { dwarf: 'vmlinux DWARF', btf: 'BTF + kallsyms, no vmlinux' } as const;

/** Go's DW_AT_decl_line is where the body starts; the lens belongs on the `func` line at or above it. */
export function snapGoLine(line: number, lineText: (line: number) => string | undefined): number {
  for (let l = line; l >= 1 && l > line - 50; l--) {
    const t = lineText(l);
    if (t === undefined) break;
    if (/^func\b/.test(t)) return l;
  }
  return line;
}

export function pointFor(fn: Pick<IndexedFunction, 'name'>, opts: Pick<LensOptions, 'ambiguous' | 'src'>): string {
  return opts.ambiguous?.(fn.name) && opts.src ? `${fn.name}@${opts.src}` : fn.name;
}

/** `onlyInlined`: every site is an inlined copy, where no return value can be fetched (only that the call returned). */
export function specsFor(kind: Exclude<LensKind, 'unprobeable'>, point: string, onlyInlined = false): string[] {
  if (kind === 'trace') return [`${point} $params`];
  if (kind === 'returns') return [onlyInlined ? `${point}%return` : `${point}%return $retval`];
  return [point, `${point}%return`];
}

function stateWord(s: ProbeState): string {
  return s === 'armed' ? 'armed' : s;
}

export function liveTitle(kind: Exclude<LensKind, 'unprobeable'>, live: LiveSpec): string {
  const atLeast = live.lowerBound ? '≥ ' : '';
  if (kind === 'latency') {
    const p =
      live.p50Ns !== undefined && (live.calls ?? 0) > 0
        ? `p50 ${formatDuration(live.p50Ns)} · ${atLeast}${formatCount(live.calls ?? 0)} calls`
        : `${atLeast}${formatCount(live.hits)} hits`;
    return `$(watch) Latency: ${p} · ${stateWord(live.state)}${sourceWords(live)}`;
  }
  const icon = kind === 'trace' ? '$(pulse)' : '$(reply)';
  const what = kind === 'trace' ? 'Trace' : 'Returns';
  const n = `${atLeast}${formatCount(live.hits)} ${live.hits === 1 && !live.lowerBound ? 'hit' : 'hits'}`;
  return `${icon} ${what}: ${n} · ${stateWord(live.state)}${sourceWords(live)}`;
}

function sourceWords(live: LiveSpec): string {
  return live.kernelSource ? ` · ${SOURCE_WORDS[live.kernelSource]}` : '';
}

export const IDLE_TITLE: Record<Exclude<LensKind, 'unprobeable'>, string> = {
  trace: 'Trace',
  returns: 'Trace returns',
  latency: 'Latency',
};

/**
 * Lenses for `functions` (those the index declares in this file, sorted by line). One set per line and name:
 * C++ constructors and clones share a declaration line and would otherwise stack up.
 */
export function lensesForFunctions(
  functions: readonly IndexedFunction[],
  opts: LensOptions,
  live: (specs: string[]) => LiveSpec | undefined = () => undefined,
): LensModel[] {
  const out: LensModel[] = [];
  const seen = new Set<string>();
  for (const fn of functions) {
    if (fn.line === undefined || fn.line < 1) continue;
    const line = opts.isGo && opts.lineText ? snapGoLine(fn.line, opts.lineText) : fn.line;
    const key = `${line}\0${fn.name}`;
    if (seen.has(key)) continue;
    // A probe-able function of the same name (an out-of-line copy) wins over its inlined twin.
    if (!fn.probeable && functions.some((g) => g !== fn && g.name === fn.name && g.probeable)) continue;
    seen.add(key);
    if (!fn.probeable) {
      const reason = fn.reason ?? 'no code of its own';
      out.push({
        line,
        kind: 'unprobeable',
        title: `$(circle-slash) ${fn.name}: not probe-able (${reason})`,
        function: fn.name,
        specs: [],
        reason,
      });
      continue;
    }
    const point = pointFor(fn, opts);
    const onlyInlined = fn.sites.every((s) => s.kind === 'inlined');
    for (const kind of ['trace', 'returns', 'latency'] as const) {
      if (!opts[kind]) continue;
      const specs = specsFor(kind, point, onlyInlined);
      const l = live(specs);
      out.push({ line, kind, title: l ? liveTitle(kind, l) : IDLE_TITLE[kind], function: fn.name, specs });
    }
  }
  return out;
}

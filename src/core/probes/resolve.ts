// From a parsed probe point to concrete addresses in one binary, with errors a user can act on.
// Tests: test/unit/core/probes/lines.test.ts, test/unit/core/index/sites.test.ts, test/unit/vscode/model/structFields.test.ts
import type { BinaryIndex } from '../index/binaryIndex';
import type { FunctionSite, IndexedFunction, IndexedUsdt } from '../index/model';
import { lineAddresses } from './lines';
import type { ProbePoint } from './spec';
import type { ProbeKind } from '../../shared/hit';

export class ResolveError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'ResolveError';
  }
}

export interface ResolvedSite {
  kind: ProbeKind;
  /** The function the site is in (line probes: the one containing the address). */
  fn?: IndexedFunction;
  usdt?: IndexedUsdt;
  address: bigint;
  /** Source position of the site, when known (function: its declaration; line: the line). */
  file?: string;
  line?: number;
  /** Which of the function's sites this is (function entry and return probes), or the copy a line's address is in. */
  site?: FunctionSite;
}

/**
 * The sites where a call of `f` begins, each call at exactly one of them: the out-of-line entry, each clone
 * (a call goes to the entry or to one clone) and each inlined copy. A `.part` is not one of them: GCC's partial
 * inlining leaves the head (up to the split point) in the function's entry and inlines it into callers, and
 * the part is only reached from there, so the call was already seen. Only when the function has no other site
 * (the head's inlined copies left no DWARF) is the part where its calls can be seen, and then only the calls
 * that got past the head.
 */
export function callSites(f: IndexedFunction): FunctionSite[] {
  const calls = f.sites.filter((s) => s.kind !== 'part');
  return calls.length > 0 ? calls : f.sites;
}

/**
 * Where a return probe sees each return of a call: every call site. Out-of-line ones get a uretprobe; an
 * inlined copy has no return instruction, so the compiler probes the exits it finds by decoding (inlinedExits.ts).
 */
export function returnSites(f: IndexedFunction): FunctionSite[] {
  return callSites(f);
}

/** The index's source file that `src` names: the same absolute path, or a unique path suffix (`calls.c`, `src/a.c`). */
export function resolveSourceFile(index: BinaryIndex, src: string): string {
  const files = index.sourceFiles();
  if (src.startsWith('/') && files.includes(src)) return src;
  const tail = `/${src.replace(/^\.\//, '')}`;
  const hits = files.filter((f) => f.endsWith(tail) || f === src);
  if (hits.length === 1) return hits[0];
  if (hits.length === 0)
    throw new ResolveError(
      `${index.path} has no line information for source file '${src}': check the name, or that this binary was built from it with -g`,
    );
  throw new ResolveError(
    `source file '${src}' is ambiguous in ${index.path}: ${hits.slice(0, 5).join(', ')}${hits.length > 5 ? ', …' : ''}; give more of the path`,
  );
}

function suggest(index: BinaryIndex, name: string): string {
  const lower = name.toLowerCase();
  const close = index
    .functions()
    .filter((f) => f.name.toLowerCase().includes(lower) || lower.includes(f.name.toLowerCase()))
    .slice(0, 3);
  return close.length ? ` (did you mean ${close.map((f) => `'${f.name}'`).join(', ')}?)` : '';
}

function lineSites(index: BinaryIndex, file: string, line: number, within?: IndexedFunction): ResolvedSite[] {
  // FUNC:REL is the line wherever FUNC's code is: its entry, .cold blocks, clones, parts and inlined copies.
  const addrs = lineAddresses(index, file, line).filter((a) => !within || a.fn === within);
  return addrs.map((a): ResolvedSite => ({ kind: 'line', address: a.address, fn: a.fn, file, line, site: a.site }));
}

/**
 * Every site a point names. Globs may name many functions (only probe-able ones are kept, and it is an error
 * when none is); an exact name that matches several functions (statics in different files) is ambiguous
 * unless @SRC picks one.
 */
export function resolvePoint(point: ProbePoint, index: BinaryIndex): ResolvedSite[] {
  if (point.kind === 'usdt') {
    const hits = index.usdtProbes().filter((p) => p.provider === point.provider && p.name === point.name);
    if (hits.length === 0)
      throw new ResolveError(`${index.path} has no USDT probe ${point.provider}:${point.name} (list them with 'probelens usdt')`);
    return hits.map((u) => ({ kind: 'usdt', usdt: u, address: u.address }));
  }
  if (point.kind === 'line') {
    const file = resolveSourceFile(index, point.src);
    const sites = lineSites(index, file, point.line);
    if (sites.length === 0) {
      const near = index.probeableLines(file).filter((l) => Math.abs(l - point.line) <= 5);
      throw new ResolveError(
        `line ${point.line} of ${file} has no code in ${index.path}${near.length ? ` (lines with code nearby: ${near.join(', ')})` : ''}`,
      );
    }
    return sites;
  }
  let fns = index.findFunctions(point.func, point.src);
  if (fns.length === 0) {
    const where = point.src ? ` in ${point.src}` : '';
    throw new ResolveError(
      `${index.path} has no function ${point.glob ? 'matching ' : ''}'${point.func}'${where}${point.glob ? '' : suggest(index, point.func)}`,
    );
  }
  if (point.glob) {
    fns = fns.filter((f) => f.probeable);
    if (fns.length === 0) throw new ResolveError(`no probe-able function matches '${point.func}' in ${index.path}`);
  } else {
    // Every function of that name (statics of different files, as perf probe does); NAME@FILE narrows.
    const withCode = fns.filter((f) => f.probeable);
    if (withCode.length === 0) {
      const f = fns[0];
      throw new ResolveError(`'${f.name}' cannot be probed: ${f.reason ?? 'it has no code'}`);
    }
    fns = withCode;
  }
  return fns.flatMap((f): ResolvedSite[] => {
    if (point.relLine !== undefined) {
      if (!f.file || f.line === undefined)
        throw new ResolveError(`'${f.name}' has no source position, so :${point.relLine} cannot be resolved`);
      const line = f.line + point.relLine;
      const sites = lineSites(index, f.file, line, f);
      if (sites.length === 0) throw new ResolveError(`line ${line} (${f.name}:${point.relLine}) has no code inside ${f.name}`);
      return sites;
    }
    if (point.offset !== undefined) {
      if (f.address === undefined)
        throw new ResolveError(`${f.name} has no out-of-line code, so +${point.offset} has nothing to be relative to`);
      if (point.offset >= f.size && f.size > 0)
        throw new ResolveError(`${f.name}+${point.offset} is past the end of the function (${f.size} bytes)`);
      return [{ kind: 'entry', fn: f, address: f.address + BigInt(point.offset), file: f.file, line: f.line }];
    }
    const sites = point.ret ? returnSites(f) : callSites(f);
    if (sites.length === 0) throw new ResolveError(`'${f.name}' has no site to probe`);
    return sites.map((s): ResolvedSite => ({
      kind: point.ret ? 'return' : 'entry',
      fn: f,
      address: s.address,
      file: f.file,
      line: f.line,
      site: s,
    }));
  });
}

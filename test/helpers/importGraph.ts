// The import graph of the source tree, read with TypeScript's own pre-processor (static imports, `import type`,
// re-exports, dynamic `import()` and `require()` alike), and its cycles: between files, and between modules
// (module A imports module B when one of A's files imports one of B's).
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import ts from 'typescript';

export type Graph = Map<string, Set<string>>;

function sourceFiles(dir: string): string[] {
  const out: string[] = [];
  for (const name of readdirSync(dir).sort()) {
    const p = join(dir, name);
    if (statSync(p).isDirectory()) out.push(...sourceFiles(p));
    else if (name.endsWith('.ts')) out.push(p);
  }
  return out;
}

function resolveLocal(from: string, spec: string): string | undefined {
  const base = resolve(dirname(from), spec);
  for (const c of [`${base}.ts`, join(base, 'index.ts'), base]) if (existsSync(c) && statSync(c).isFile() && c.endsWith('.ts')) return c;
  return undefined;
}

/** File → the files it imports, as paths relative to `root`, for every `.ts` file under `dirs`. */
export function fileGraph(root: string, dirs: readonly string[]): Graph {
  const g: Graph = new Map();
  for (const dir of dirs) {
    for (const f of sourceFiles(join(root, dir))) {
      const info = ts.preProcessFile(readFileSync(f, 'utf8'), true, true);
      const deps = new Set<string>();
      for (const imp of info.importedFiles) {
        if (!imp.fileName.startsWith('.')) continue;
        const target = resolveLocal(f, imp.fileName);
        if (target) deps.add(relative(root, target));
      }
      g.set(relative(root, f), deps);
    }
  }
  return g;
}

/**
 * The module a file belongs to, as docs/architecture.md draws them: each folder of `src/core` (with its
 * subfolders: `src/core/index/worker` is the index's), `src/cli`, `src/vscode`, `src/shared`, `webview`, each with
 * its subfolders, and `src` itself for the entry points.
 */
export function moduleOf(file: string): string {
  const parts = dirname(file).split('/');
  if (parts[0] === 'src' && parts[1] === 'core') return parts.slice(0, 3).join('/');
  if (parts[0] === 'src') return parts.slice(0, 2).join('/');
  return parts[0];
}

/** Module → the other modules its files import. */
export function moduleGraph(files: Graph): Graph {
  const g: Graph = new Map();
  for (const [f, deps] of files) {
    const a = moduleOf(f);
    if (!g.has(a)) g.set(a, new Set());
    for (const d of deps) if (moduleOf(d) !== a) g.get(a)!.add(moduleOf(d));
  }
  return g;
}

/** The graph's cycles: its strongly connected components of more than one node (Tarjan), each sorted. */
export function cycles(g: Graph): string[][] {
  let next = 0;
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const onStack = new Set<string>();
  const out: string[][] = [];
  const visit = (v: string): void => {
    index.set(v, next);
    low.set(v, next++);
    stack.push(v);
    onStack.add(v);
    for (const w of g.get(v) ?? []) {
      if (!index.has(w)) {
        visit(w);
        low.set(v, Math.min(low.get(v)!, low.get(w)!));
      } else if (onStack.has(w)) low.set(v, Math.min(low.get(v)!, index.get(w)!));
    }
    if (low.get(v) === index.get(v)) {
      const scc: string[] = [];
      let w: string;
      do {
        w = stack.pop()!;
        onStack.delete(w);
        scc.push(w);
      } while (w !== v);
      if (scc.length > 1) out.push(scc.sort());
    }
  };
  const nodes = new Set([...g.keys(), ...[...g.values()].flatMap((s) => [...s])]);
  for (const v of [...nodes].sort()) if (!index.has(v)) visit(v);
  return out;
}

/**
 * docs/architecture.md's "module | imports" table of the core as data: module → the core modules it imports. A row
 * may name several modules (`dwarf`, `unwind`); a dash is none.
 */
export function documentedCoreImports(markdown: string): Map<string, Set<string>> {
  const out = new Map<string, Set<string>>();
  const start = markdown.indexOf('| module | imports |');
  if (start < 0) throw new Error('no "| module | imports |" table');
  for (const line of markdown.slice(start).split('\n').slice(2)) {
    if (!line.startsWith('|')) break;
    const [, who, what] = line.split('|').map((c) => c.trim());
    const names = (cell: string): string[] => [...cell.replace(/\(.*\)/, '').matchAll(/`([a-z]+)`/g)].map((m) => `src/core/${m[1]}`);
    for (const m of names(who)) out.set(m, new Set(names(what)));
  }
  return out;
}

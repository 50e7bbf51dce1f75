// A generated program whose header helper `hot` is inlined into N functions, each called once by main: one probe of
// N sites, one tracefs event with N probe points, as a real header helper (a min, a refcount get) makes them. Built
// with the system gcc at -O2 -g into the given directory; the e2e Stop test and bench:attach trace it.
import { execFileSync } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

/** hot.h: `hot` (line 2), a header helper inlined at each of its call sites. */
export const HOT_H = `/* A header helper, inlined at each of its call sites. */
static inline __attribute__((always_inline)) int hot(int x) { return x * 3 + (x >> 2); }
`;

/** The line of `hot`'s definition in hot.h. */
export const HOT_LINE = 2;

/** many.c: f0 … f(n-1), each inlining `hot`, each called once by main. */
export function inlinedSource(n: number): string {
  const lines = ['#include <stdio.h>', '#include "hot.h"'];
  for (let i = 0; i < n; i++) lines.push(`__attribute__((noinline)) int f${i}(int x) { return hot(x + ${i}); }`);
  lines.push('int (*const table[])(int) = {');
  for (let i = 0; i < n; i++) lines.push(`  f${i},`);
  lines.push('};');
  lines.push('int main(int argc, char **argv) {');
  lines.push('  long acc = 0;');
  lines.push(`  for (int i = 0; i < ${n}; i++) acc += table[i](argc + i);`);
  lines.push('  printf("%ld\\n", acc);');
  lines.push('  return 0;');
  lines.push('}');
  return `${lines.join('\n')}\n`;
}

/** Writes hot.h and many.c into `dir` and builds `dir/build/many`; returns the binary's path. */
export function buildInlinedProgram(dir: string, n: number): string {
  writeFileSync(join(dir, 'hot.h'), HOT_H);
  writeFileSync(join(dir, 'many.c'), inlinedSource(n));
  mkdirSync(join(dir, 'build'), { recursive: true });
  const binary = join(dir, 'build', 'many');
  execFileSync('gcc', ['-g', '-O2', '-o', binary, join(dir, 'many.c')], { cwd: dir });
  return binary;
}

// Lines a fixture source marks for line probes with a `/* line: NAME */` comment.
import { readFileSync } from 'node:fs';

/** Line numbers (1-based) of each `/* line: NAME *\/` mark of a source file. */
export function markedLines(source: string): Map<string, number> {
  const m = new Map<string, number>();
  readFileSync(source, 'utf8')
    .split('\n')
    .forEach((text, i) => {
      const x = /\/\* line: (\w+) \*\//.exec(text);
      if (x) m.set(x[1], i + 1);
    });
  return m;
}

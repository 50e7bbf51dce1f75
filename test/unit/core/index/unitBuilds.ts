// What the unit-cache tests share: a program compiled file by file and linked as make does, its index through the
// unit cache (with what was reused), and its cold index, each as a canonical dump.
import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { buildIndex } from '../../../../src/core/index/build';
import type { UnitReuseStats } from '../../../../src/core/index/unitReuse';
import { indexDump } from '../../../helpers/indexDump';
import { run } from '../binary/build';

/** Compiles each file to an object (gcc -g -O2) and links them in the order given; returns the binary. */
export function build(dir: string, files: Record<string, string> | Array<[string, string]>): string {
  const list = Array.isArray(files) ? files : Object.entries(files);
  for (const [name, src] of list) {
    writeFileSync(join(dir, name), src);
    run('gcc', ['-g', '-O2', '-c', name, '-o', name.replace(/\.c$/, '.o')], { cwd: dir });
  }
  run('gcc', ['-o', 'prog', ...list.map(([n]) => n.replace(/\.c$/, '.o'))], { cwd: dir });
  return join(dir, 'prog');
}

/** The index of `bin` built through the unit cache in `cacheDir`, as a dump, and what the cache gave. */
export async function reusing(bin: string, cacheDir: string): Promise<{ dump: string; stats: UnitReuseStats }> {
  let stats: UnitReuseStats | undefined;
  const data = await buildIndex(bin, { unitCacheDir: cacheDir, onUnitReuse: (s) => (stats = s) });
  assert.ok(stats, 'the unit cache was used');
  return { dump: indexDump(data), stats };
}

/** The cold index of `bin` (one thread, no cache), as a dump. */
export const cold = async (bin: string): Promise<string> => indexDump(await buildIndex(bin, { workers: 1 }));

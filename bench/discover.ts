// npm run bench:discover -- [TREE SRC]
// The editor's first step on a project: walk the tree for ELF binaries (discoverWorkspace), scan each one's
// source-file list (CU names and line-table headers), choose the build for SRC — beside `find` walking the same
// tree (the floor for the walk) and a full index of the chosen binary (what the scan saves doing for the rest).
// Without arguments: the PostgreSQL tree of the test corpus (src/backend/tcop/postgres.c).
import { spawnSync } from 'node:child_process';
import { resolve } from 'node:path';
import { buildIndex } from '../src/core/index/build';
import { chooseBinaries } from '../src/core/workspace/choose';
import { discoverWorkspace } from '../src/core/workspace/discover';
import { scanBinary, type BinaryScan } from '../src/core/workspace/scan';
import { corpusProject } from '../test/helpers/corpus';

async function main(): Promise<void> {
  let [tree, src] = process.argv.slice(2);
  if (!tree) {
    tree = (await corpusProject('postgres')).srcDir;
    src = 'src/backend/tcop/postgres.c';
  }
  tree = resolve(tree);
  const file = resolve(tree, src ?? '');
  const t0 = process.hrtime.bigint();
  spawnSync('find', [tree, '-type', 'f', '-perm', '/111'], { stdio: 'ignore' });
  const findMs = Number(process.hrtime.bigint() - t0) / 1e6;

  const d = await discoverWorkspace(tree);
  const t1 = process.hrtime.bigint();
  const scans: BinaryScan[] = [];
  let bytes = 0;
  for (const b of d.binaries) {
    const s = await scanBinary(b.path);
    if (s) scans.push(s);
    bytes += b.size;
  }
  const scanMs = Number(process.hrtime.bigint() - t1) / 1e6;
  const choice = chooseBinaries(scans, file);
  const chosen = choice.builds[0]?.primary.path;
  const t2 = process.hrtime.bigint();
  if (chosen) await buildIndex(chosen);
  const indexMs = Number(process.hrtime.bigint() - t2) / 1e6;

  const f = (ms: number) => `${ms.toFixed(0)} ms`;
  console.log(
    `tree ${tree}: ${d.entries} entries, ${d.binaries.length} binaries (${(bytes / 2 ** 20).toFixed(0)} MiB)${d.truncated ? `, cut by the ${d.truncated} budget` : ''}`,
  );
  console.log(`walk (discoverWorkspace)          ${f(d.elapsedMs)}   baseline find -perm /111: ${f(findMs)}`);
  console.log(`scan source files of all binaries ${f(scanMs)}   baseline full index of the chosen one: ${f(indexMs)}`);
  console.log(
    `chosen for ${src}: ${chosen ?? 'none'} (${choice.builds.length} distinct build(s) name it; ${choice.unreadable.length} without debug info)`,
  );
}

void main().catch((e: unknown) => {
  console.error((e as Error).message);
  process.exit(1);
});

#!/usr/bin/env node
// Runs test tiers on node's built-in test runner. Node 20 expands no globs and runs no TypeScript by itself,
// so this lists the files of each tier and runs them through the tsx loader.
// usage: node test/run.mjs unit [integration] [e2e] [-- extra node --test args]
import { spawnSync } from 'node:child_process';
import { readdirSync, statSync } from 'node:fs';
import { join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = fileURLToPath(new URL('..', import.meta.url));
const argv = process.argv.slice(2);
const dash = argv.indexOf('--');
const tiers = dash < 0 ? argv : argv.slice(0, dash);
const extra = dash < 0 ? [] : argv.slice(dash + 1);
const known = ['unit', 'integration', 'corpus', 'e2e'];
if (tiers.length === 0 || tiers.some((t) => !known.includes(t))) {
  console.error(`usage: node test/run.mjs ${known.join('|')}… [-- node-test-args]`);
  process.exit(2);
}

function listTests(dir) {
  const out = [];
  for (const name of readdirSync(dir).sort()) {
    const p = join(dir, name);
    if (statSync(p).isDirectory()) out.push(...listTests(p));
    else if (name.endsWith('.test.ts')) out.push(p);
  }
  return out;
}

// Tiers that touch global kernel state (tracefs), build real programs or drive one code-server run serially.
const concurrency = { unit: String(Math.max(2, (await import('node:os')).cpus().length)), integration: '1', corpus: '1', e2e: '1' };
let status = 0;
for (const tier of tiers) {
  const files = listTests(join(root, 'test', tier)).map((f) => relative(root, f));
  if (files.length === 0) {
    console.error(`no tests found in test/${tier}`);
    status = 1;
    continue;
  }
  console.log(`# tier ${tier}: ${files.length} file(s)`);
  const r = spawnSync(process.execPath, ['--import', 'tsx', '--test', `--test-concurrency=${concurrency[tier]}`, ...extra, ...files], {
    cwd: root,
    stdio: 'inherit',
    env: { ...process.env, PROBELENS_TEST_TIER: tier },
  });
  if (r.status !== 0) status = r.status ?? 1;
}
process.exit(status);

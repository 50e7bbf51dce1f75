#!/usr/bin/env node
// Runs test tiers on node's built-in test runner. Node 20 expands no globs and runs no TypeScript by itself,
// so this lists the files of each tier and runs them through the tsx loader.
// usage: node test/run.mjs unit [integration] [vm] [e2e] [-- extra node --test args]
import { spawn, spawnSync } from 'node:child_process';
import { mkdtempSync, readdirSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = fileURLToPath(new URL('..', import.meta.url));
const argv = process.argv.slice(2);
const dash = argv.indexOf('--');
const tiers = dash < 0 ? argv : argv.slice(0, dash);
const extra = dash < 0 ? [] : argv.slice(dash + 1);
const known = ['unit', 'integration', 'vm', 'corpus', 'e2e'];
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
const concurrency = {
  unit: String(Math.max(2, (await import('node:os')).cpus().length)),
  integration: '1',
  vm: '1',
  corpus: '1',
  e2e: '1',
};
let status = 0;

/** Starts the VM server; resolves once it has written the connection (or why there is none) to the file it names. */
function startVmServer(env) {
  const dir = mkdtempSync(join(tmpdir(), 'probelens-vm-tier-'));
  const file = join(dir, 'vm.json');
  const child = spawn(process.execPath, ['--import', 'tsx', join(root, 'test', 'helpers', 'vm.ts'), '--serve', file], {
    cwd: root,
    env,
    stdio: ['pipe', 'pipe', 'inherit'],
  });
  let out = '';
  return new Promise((resolve) => {
    const done = () => {
      env.PROBELENS_TEST_VM = file;
      resolve({
        stop: () =>
          new Promise((r) => {
            child.once('exit', () => (rmSync(dir, { recursive: true, force: true }), r()));
            if (child.exitCode !== null || child.signalCode !== null) child.emit('exit');
            // Closing its stdin stops the VM; it also closes if this runner dies.
            else child.stdin.end();
          }),
      });
    };
    child.stdout.setEncoding('utf8').on('data', (d) => {
      process.stdout.write(d);
      out += d;
      if (/^vm: ready$/m.test(out)) done();
    });
    child.once('exit', (code) => {
      if (!/^vm: ready$/m.test(out)) {
        console.error(`the VM server exited (${code}) before it was ready`);
        process.exit(1);
      }
    });
  });
}
for (const tier of tiers) {
  const files = listTests(join(root, 'test', tier)).map((f) => relative(root, f));
  if (files.length === 0) {
    console.error(`no tests found in test/${tier}`);
    status = 1;
    continue;
  }
  console.log(`# tier ${tier}: ${files.length} file(s)`);
  const env = { ...process.env, PROBELENS_TEST_TIER: tier };
  // The vm tier's tests share one VM, booted before them and stopped after them (test/helpers/vm.ts).
  const vm = tier === 'vm' ? await startVmServer(env) : undefined;
  const r = spawnSync(process.execPath, ['--import', 'tsx', '--test', `--test-concurrency=${concurrency[tier]}`, ...extra, ...files], {
    cwd: root,
    stdio: 'inherit',
    env,
  });
  if (r.status !== 0) status = r.status ?? 1;
  await vm?.stop();
}
process.exit(status);

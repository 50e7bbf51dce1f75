#!/usr/bin/env node
// `npm start`: ProbeLens on an embedded default. Packages the extension, compiles the demo program (the C fixture
// calls.c) into the demo workspace's build/ folder, starts code-server on 127.0.0.1 with the extension installed
// and the local machine as the target, prints the URL and opens it when there is a display. Runs until Ctrl-C,
// then stops code-server and deletes its throwaway folders.
// env: PROBELENS_PORT (default: a free port), PROBELENS_NO_OPEN=1 (never open a browser).
import { spawn, spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { require as tsxRequire } from 'tsx/cjs/api';

// The harness is TypeScript compiled as CommonJS (it locates the repo from __dirname): load it the same way.
const harness = (file) => tsxRequire(`../test/e2e/harness/${file}`, import.meta.url);
const { ensureE2eSetup } = harness('setup.ts');
const { packageVsix } = harness('vsix.ts');
const { prepareWorkspace } = harness('workspaces.ts');
const { startCodeServer } = harness('codeServer.ts');

const t0 = Date.now();
const step = async (what, fn) => {
  const t = Date.now();
  console.log(`[demo] ${what}…`);
  const r = await fn();
  console.log(`[demo] ${what}: done in ${((Date.now() - t) / 1000).toFixed(1)} s`);
  return r;
};

const demoRoot = mkdtempSync(join(tmpdir(), 'probelens-demo-'));
let server;
let stopping = false;
async function shutdown(code) {
  if (stopping) return;
  stopping = true;
  console.log('\n[demo] stopping code-server and removing the demo folders');
  await server?.stop().catch((e) => console.error(`[demo] stop: ${e.message}`));
  rmSync(demoRoot, { recursive: true, force: true });
  process.exit(code);
}
process.on('SIGINT', () => void shutdown(0));
process.on('SIGTERM', () => void shutdown(0));

try {
  await step('preparing Node 24, code-server and Chromium in the test cache', () => ensureE2eSetup());
  const vsix = await step('building and packaging the extension (npm run package)', () => packageVsix());
  const workspace = prepareWorkspace('c', demoRoot);
  await step('compiling the demo program build/calls (gcc -g -O0)', () => {
    mkdirSync(join(workspace, 'build'), { recursive: true });
    const r = spawnSync('gcc', ['-g', '-O0', '-o', 'build/calls', 'calls.c'], { cwd: workspace, stdio: 'inherit' });
    if (r.status !== 0) throw new Error('gcc failed (apt-get install -y gcc)');
  });
  server = await step('starting code-server', () =>
    startCodeServer({ workspace, vsix, browser: false, port: Number(process.env.PROBELENS_PORT ?? 0) }),
  );
  console.log(`
[demo] ready in ${((Date.now() - t0) / 1000).toFixed(1)} s

  ProbeLens demo:  ${server.url}
  workspace:       ${workspace}
  demo program:    ${join(workspace, 'build', 'calls')}  (run it in the editor's terminal: ./build/calls)
  code-server log: ${server.logPath}

  Press Ctrl-C to stop.
`);
  openBrowser(server.url);
  const code = await server.exited;
  if (!stopping) {
    console.error(`[demo] code-server exited (${code}); see ${server.logPath}`);
    await shutdown(1);
  }
} catch (e) {
  console.error(`[demo] ${e.message ?? e}`);
  await shutdown(1);
}

function openBrowser(url) {
  if (process.env.PROBELENS_NO_OPEN === '1') return;
  if (!process.env.DISPLAY && !process.env.WAYLAND_DISPLAY) {
    const port = new URL(url).port;
    console.log(`[demo] no display: open the URL above in a browser (from another machine: ssh -L ${port}:127.0.0.1:${port} …)`);
    return;
  }
  const opener = spawnSync('sh', ['-c', 'command -v xdg-open'], { encoding: 'utf8' }).stdout.trim() || '/usr/bin/chromium';
  const child = spawn(opener, [url], { stdio: 'ignore', detached: true });
  child.on('error', () => console.log(`[demo] could not start ${opener}: open the URL yourself`));
  child.unref();
}

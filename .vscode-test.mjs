// @vscode/test-cli configuration for developers with VS Code desktop: `PROBELENS_VSCODE_PATH=/path/to/code
// npm run test:vscode`. Using an installed VS Code (never a download) keeps the run offline-friendly. Loading this
// file builds the extension and compiles the suite in test/vscode-suite to out/vscode-suite, so the command is
// self-contained. CI does not run it (no desktop VS Code here); `npm run typecheck` covers the suite's types.
import { execFileSync } from 'node:child_process';
import { defineConfig } from '@vscode/test-cli';
import * as esbuild from 'esbuild';
import { readdirSync } from 'node:fs';

const vscodePath = process.env.PROBELENS_VSCODE_PATH;
if (!vscodePath) {
  throw new Error(
    'PROBELENS_VSCODE_PATH is not set: point it at a VS Code executable (e.g. /usr/share/code/code), ' +
      'or run the e2e tier instead: npm run test:e2e',
  );
}

execFileSync(process.execPath, ['esbuild.mjs'], { stdio: 'inherit' });
esbuild.buildSync({
  entryPoints: readdirSync('test/vscode-suite')
    .filter((f) => f.endsWith('.test.ts'))
    .map((f) => `test/vscode-suite/${f}`),
  outdir: 'out/vscode-suite',
  bundle: true,
  platform: 'node',
  format: 'cjs',
  target: 'node20',
  // The runner's own mocha instance must be the one the suite registers with.
  external: ['vscode', 'mocha'],
  sourcemap: 'inline',
  logLevel: 'warning',
});

export default defineConfig({
  label: 'vscode-suite',
  files: 'out/vscode-suite/**/*.test.js',
  useInstallation: { fromPath: vscodePath },
  workspaceFolder: 'test/fixtures/workspaces/c',
  mocha: { ui: 'tdd', timeout: 20_000 },
  launchArgs: ['--disable-extensions', '--disable-workspace-trust', '--skip-welcome', '--skip-release-notes'],
});

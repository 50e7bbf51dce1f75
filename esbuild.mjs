// One build for every artefact: the extension host bundle, the CLI, the indexer worker and the webview.
// ssh2 tries to load optional native crypto (cpu-features, sshcrypto.node); keeping those external makes
// ssh2 fall back to its pure-JS implementation, so the bundle has no native parts to rebuild per Node ABI.
import * as esbuild from 'esbuild';

const watch = process.argv.includes('--watch');
const production = process.argv.includes('--production');

const common = {
  bundle: true,
  sourcemap: production ? false : 'linked',
  minify: production,
  logLevel: 'info',
  legalComments: 'none',
};
const nodeCommon = {
  ...common,
  platform: 'node',
  target: 'node20',
  format: 'cjs',
  external: ['vscode', 'cpu-features', '*.node'],
  loader: { '.wasm': 'binary' },
};

const builds = [
  { ...nodeCommon, entryPoints: { extension: 'src/extension.ts' }, outdir: 'dist' },
  { ...nodeCommon, entryPoints: { cli: 'src/cli/main.ts' }, outdir: 'dist', banner: { js: '#!/usr/bin/env node' } },
  { ...nodeCommon, entryPoints: { worker: 'src/core/worker/indexWorker.ts' }, outdir: 'dist' },
  {
    ...common,
    platform: 'browser',
    target: 'es2022',
    format: 'iife',
    entryPoints: { webview: 'webview/main.ts' },
    outdir: 'dist',
  },
];

if (watch) {
  const contexts = await Promise.all(builds.map((b) => esbuild.context(b)));
  await Promise.all(contexts.map((c) => c.watch()));
} else {
  await Promise.all(builds.map((b) => esbuild.build(b)));
}

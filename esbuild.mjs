// One build for every artefact: the extension host bundle, the CLI, the indexer worker and the webview.
// ssh2 tries to load optional native crypto (cpu-features, sshcrypto.node); keeping those external makes
// ssh2 fall back to its pure-JS implementation, so the bundle has no native parts to rebuild per Node ABI.
import * as esbuild from 'esbuild';
import { readFile } from 'node:fs/promises';
import { dirname } from 'node:path';

const watch = process.argv.includes('--watch');
const production = process.argv.includes('--production');

// src/core/demangle/wasmBytes.ts reads the demangler's WASM from node_modules; a packaged extension has no
// node_modules, so the bundles get a stand-in module with the bytes embedded.
const embedDemanglerWasm = {
  name: 'embed-demangler-wasm',
  setup(build) {
    build.onResolve({ filter: /[\\/]wasmBytes$/ }, (args) =>
      args.importer.includes('demangle') ? { path: 'demangler-wasm', namespace: 'probelens-embed' } : undefined,
    );
    build.onLoad({ filter: /.*/, namespace: 'probelens-embed' }, () => ({
      contents: "import bytes from 'gecko-profiler-demangle/index_bg.wasm'; export function demanglerWasm() { return bytes; }",
      loader: 'js',
      resolveDir: process.cwd(),
    }));
  },
};

// iced-x86's Node glue reads iced_x86_bg.wasm from its own directory when loaded; inside a bundle that is dist/,
// which has no such file, so the bundles embed the bytes (the '.wasm' binary loader) in place of the read.
const embedIcedWasm = {
  name: 'embed-iced-wasm',
  setup(build) {
    build.onLoad({ filter: /[\\/]iced-x86[\\/]iced_x86\.js$/ }, async (args) => {
      const src = await readFile(args.path, 'utf8');
      const read = "require('fs').readFileSync(path)";
      if (!src.includes(read)) throw new Error(`${args.path} no longer loads its WASM with ${read}; update embed-iced-wasm in esbuild.mjs`);
      return { contents: src.replace(read, "require('./iced_x86_bg.wasm')"), loader: 'js', resolveDir: dirname(args.path) };
    });
  },
};

// src/core/binary/fzstdSource.ts reads fzstd's source text from node_modules (zstd.ts loads it with a guard
// patched into one loop); the bundles embed that text instead.
const embedFzstdSource = {
  name: 'embed-fzstd-source',
  setup(build) {
    build.onResolve({ filter: /[\\/]fzstdSource$/ }, () => ({ path: 'fzstd-source', namespace: 'probelens-embed-fzstd' }));
    build.onLoad({ filter: /.*/, namespace: 'probelens-embed-fzstd' }, async () => {
      const text = await readFile(new URL('./node_modules/fzstd/lib/index.js', import.meta.url), 'utf8');
      return { contents: `export function fzstdSource() { return ${JSON.stringify(text)}; }`, loader: 'js' };
    });
  },
};

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
  plugins: [embedDemanglerWasm, embedIcedWasm, embedFzstdSource],
};

const builds = [
  { ...nodeCommon, entryPoints: { extension: 'src/extension.ts' }, outdir: 'dist' },
  { ...nodeCommon, entryPoints: { cli: 'src/cli/main.ts' }, outdir: 'dist', banner: { js: '#!/usr/bin/env node' } },
  { ...nodeCommon, entryPoints: { worker: 'src/core/index/worker/indexWorker.ts' }, outdir: 'dist' },
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

// One build for every artefact: the extension host bundle, the CLI, the indexer worker and the webview.
// ssh2 tries to load optional native crypto (cpu-features, sshcrypto.node); keeping those external makes
// ssh2 fall back to its pure-JS implementation, so the bundles have no native parts to rebuild per Node ABI.
//
// What only some runs use stays out of the bundles, so that every start does not read, compile and run it
// (`probelens --version` took 0.32 s with them, 4.3 MB of script): ssh2 and iced-x86 are bundles of their own,
// dist/ssh2.js and dist/iced-x86.js, required on first use (src/core/ssh/ssh2.ts on the first SSH connection,
// src/core/probes/x86decoder.ts by Go return probes on x86-64); the two WebAssembly modules (the demangler's and
// iced-x86's, 1.3 MB, which a bundle would carry as 1.75 MB of base64) are files in dist/ read on first use.
// `--outdir DIR` writes the artefacts elsewhere (test/integration/bundles.test.ts builds into a temporary one).
import * as esbuild from 'esbuild';
import { copyFile, mkdir, readdir, readFile } from 'node:fs/promises';
import { createRequire } from 'node:module';

const require = createRequire(import.meta.url);
const watch = process.argv.includes('--watch');
const production = process.argv.includes('--production');
const outdirAt = process.argv.indexOf('--outdir');
const outdir = outdirAt >= 0 ? process.argv[outdirAt + 1] : 'dist';

// src/core/demangle/wasmBytes.ts reads the demangler's WASM from node_modules; a packaged extension has no
// node_modules, so the bundles get a stand-in module that reads the copy beside the bundle (dist/demangle.wasm).
const demanglerWasmBesideBundle = {
  name: 'demangler-wasm-beside-bundle',
  setup(build) {
    build.onResolve({ filter: /[\\/]wasmBytes$/ }, (args) =>
      args.importer.includes('demangle') ? { path: 'demangler-wasm', namespace: 'probelens-wasm' } : undefined,
    );
    build.onLoad({ filter: /.*/, namespace: 'probelens-wasm' }, () => ({
      contents:
        "import { readFileSync } from 'node:fs'; import { join } from 'node:path';" +
        " export function demanglerWasm() { return new Uint8Array(readFileSync(join(__dirname, 'demangle.wasm'))); }",
      loader: 'js',
    }));
  },
};

// The other bundles require those two packages as the files beside them.
const OWN_BUNDLES = ['ssh2', 'iced-x86'];
const ownBundlesBeside = {
  name: 'own-bundles-beside',
  setup(build) {
    build.onResolve({ filter: new RegExp(`^(${OWN_BUNDLES.join('|')})$`) }, (args) => ({ path: `./${args.path}.js`, external: true }));
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

// src/core/tracefs/agentSources.ts reads the agent's files (src/core/tracefs/agent/) from the source tree; the
// bundles embed their text.
const embedAgentSources = {
  name: 'embed-agent-sources',
  setup(build) {
    build.onResolve({ filter: /[\\/]agentSources$/ }, () => ({ path: 'agent-sources', namespace: 'probelens-embed-agent' }));
    build.onLoad({ filter: /.*/, namespace: 'probelens-embed-agent' }, async () => {
      const dir = new URL('./src/core/tracefs/agent/', import.meta.url);
      const files = (await readdir(dir)).filter((f) => /\.(sh|pl|py)$/.test(f)).sort();
      const texts = await Promise.all(files.map(async (f) => [f, await readFile(new URL(f, dir), 'utf8')]));
      return {
        contents:
          `const texts = new Map(${JSON.stringify(texts)});` +
          ' export function agentSource(name) { const t = texts.get(name); if (t === undefined) throw new Error(`no agent file ${name}`); return t; }',
        loader: 'js',
        watchDirs: [dir.pathname],
      };
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
  plugins: [demanglerWasmBesideBundle, ownBundlesBeside, embedFzstdSource, embedAgentSources],
};

const builds = [
  // ssh2 and iced-x86 themselves: each package's CommonJS entry as its bundle's module.exports.
  ...OWN_BUNDLES.map((name) => ({ ...nodeCommon, plugins: [], entryPoints: { [name]: require.resolve(name) }, outdir })),
  { ...nodeCommon, entryPoints: { extension: 'src/extension.ts' }, outdir },
  { ...nodeCommon, entryPoints: { cli: 'src/cli/main.ts' }, outdir, banner: { js: '#!/usr/bin/env node' } },
  { ...nodeCommon, entryPoints: { worker: 'src/core/index/worker/indexWorker.ts' }, outdir },
  {
    ...common,
    platform: 'browser',
    target: 'es2022',
    format: 'iife',
    entryPoints: { webview: 'webview/main.ts' },
    outdir,
  },
];

// iced-x86's Node glue reads iced_x86_bg.wasm from its own directory, which inside a bundle is the bundle's.
await mkdir(outdir, { recursive: true });
await copyFile(require.resolve('iced-x86/iced_x86_bg.wasm'), `${outdir}/iced_x86_bg.wasm`);
await copyFile(require.resolve('gecko-profiler-demangle/index_bg.wasm'), `${outdir}/demangle.wasm`);

if (watch) {
  const contexts = await Promise.all(builds.map((b) => esbuild.context(b)));
  await Promise.all(contexts.map((c) => c.watch()));
} else {
  await Promise.all(builds.map((b) => esbuild.build(b)));
}

// The demangler's WebAssembly bytes. In tests and the CLI run from source they are read from node_modules;
// the esbuild bundles replace this module with the bytes embedded (see esbuild.mjs), since a packaged
// extension ships no node_modules.
// Tests: test/unit/core/demangle/index.test.ts
import { readFileSync } from 'node:fs';

export function demanglerWasm(): Uint8Array<ArrayBuffer> {
  return new Uint8Array(readFileSync(require.resolve('gecko-profiler-demangle/index_bg.wasm')));
}

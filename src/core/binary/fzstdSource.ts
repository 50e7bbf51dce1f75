// fzstd's CommonJS source text. Read from node_modules when running from source; the esbuild bundles replace
// this module with the text embedded (see esbuild.mjs), since a packaged extension ships no node_modules.
// Tests: test/unit/core/binary/compressed.test.ts
import { readFileSync } from 'node:fs';

export function fzstdSource(): string {
  // The package's CommonJS entry ("require" in its exports map) is lib/index.js.
  return readFileSync(require.resolve('fzstd'), 'utf8');
}

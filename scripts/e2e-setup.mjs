#!/usr/bin/env node
// Installs the e2e tier's tools into the test cache (Node 24, code-server with its native modules, a Chromium
// check); idempotent and quick when the cache is complete. The logic lives with the harness that uses it.
// usage: node scripts/e2e-setup.mjs [--json]   (--json prints the resulting paths as the last line)
import { require as tsxRequire } from 'tsx/cjs/api';

const { ensureE2eSetup, E2eSetupError } = tsxRequire('../test/e2e/harness/setup.ts', import.meta.url);
try {
  const paths = ensureE2eSetup();
  if (process.argv.includes('--json')) console.log(JSON.stringify(paths));
} catch (e) {
  console.error(e instanceof E2eSetupError ? e.message : e);
  process.exit(1);
}

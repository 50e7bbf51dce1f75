// The agent's program text, the files under agent/ (.sh, and the lease guards' .pl and .py). Read from the source
// tree when running from source; the esbuild bundles replace this module with the files' text embedded (esbuild.mjs).
// Tests: test/unit/core/tracefs/agentScript.test.ts, test/integration/bundles.test.ts
import { readFileSync } from 'node:fs';
import { join } from 'node:path';

export function agentSource(name: string): string {
  return readFileSync(join(__dirname, 'agent', name), 'utf8');
}

// `npm ci && npm start` on a fresh machine must either work or name, in one sentence, the command that installs
// what it lacks: the e2e setup checks code-server's native build tools before it downloads anything.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { missingBuildTools } from '../../e2e/harness/setup';
import { missing } from '../../helpers/require';

test('missing build tools are named by their Debian package', () => {
  const absent = new Set(['/usr/include/krb5.h', '/usr/include/libsecret-1/libsecret/secret.h']);
  assert.deepEqual(
    missingBuildTools((f) => !absent.has(f)),
    ['libkrb5-dev', 'libsecret-1-dev'],
  );
  assert.deepEqual(
    missingBuildTools(() => true),
    [],
  );
});

test('the check passes where the tools are installed (.ci/run installs them)', (t) => {
  const lacking = missingBuildTools(existsSync);
  if (lacking.length > 0) return missing(t, `code-server build tools: ${lacking.join(' ')}`);
  assert.deepEqual(lacking, []);
});

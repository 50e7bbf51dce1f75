import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';

// The skip-or-fail helper is what keeps CI honest: prove both halves in a child process.
const script = join(mkdtempSync(join(tmpdir(), 'probelens-require-')), 'needs.test.mjs');
writeFileSync(
  script,
  `
import { test } from 'node:test';
import { missing } from ${JSON.stringify(resolve('test/helpers/require.ts'))};
test('needs a thing', (t) => { missing(t, 'the thing'); });
`,
);

for (const ci of ['true', '']) {
  test(`missing() ${ci ? 'fails' : 'skips'} when CI=${ci || '(unset)'}`, () => {
    const r = spawnSync(process.execPath, ['--import', 'tsx', '--test', script], {
      // NODE_TEST_CONTEXT would make the child think it is a subtest of ours and run nothing.
      env: { ...process.env, CI: ci, NODE_TEST_CONTEXT: undefined },
      encoding: 'utf8',
    });
    const out = r.stdout + r.stderr;
    if (ci) {
      assert.notEqual(r.status, 0, out);
      assert.match(out, /prerequisite missing: the thing/);
    } else {
      assert.equal(r.status, 0, out);
      assert.match(out, /# skipped 1/);
    }
  });
}

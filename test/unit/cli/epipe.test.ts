// A closed pipe ends output quietly: `probelens functions BIN | head -1` exits 0 with nothing on stderr. The Go
// fixture's function list is megabytes, more than any pipe holds, so the writer meets EPIPE whatever the timing.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { fixtureOrSkip } from '../../helpers/fixtures';

const MAIN = resolve(__dirname, '../../../src/cli/main.ts');
const cache = mkdtempSync(join(tmpdir(), 'probelens-cli-cache-'));

for (const json of [false, true]) {
  test(`functions${json ? ' --json' : ''} into a pipe whose reader has gone: exit 0, no stack trace`, async (t) => {
    const f = await fixtureOrSkip(t, 'go');
    if (!f) return;
    // The reader (`true`) reads nothing and exits; the status of probelens itself is reported on stderr.
    const r = spawnSync(
      'sh',
      [
        '-c',
        '{ "$0" --import tsx "$1" functions "$2" $3; echo "status $?" >&2; } | true',
        process.execPath,
        MAIN,
        f.path,
        json ? '--json' : '',
      ],
      { encoding: 'utf8', env: { ...process.env, XDG_CACHE_HOME: cache } },
    );
    assert.equal(r.status, 0);
    assert.equal(r.stderr, 'status 0\n');
  });
}

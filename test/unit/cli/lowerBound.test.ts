// define names what it cannot prove: a function some of whose inlined calls may go uncounted is marked a lower
// bound (define --json `lowerBound`, and a warning on stderr); one whose entries are all proved is not.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { fixtureOrSkip } from '../../helpers/fixtures';

const MAIN = resolve(__dirname, '../../../src/cli/main.ts');
const cache = mkdtempSync(join(tmpdir(), 'probelens-cli-cache-'));

test('define --json: merged (a call GCC merged away) is a lower bound, duplicated (both paths proved) is not', async (t) => {
  const f = await fixtureOrSkip(t, 'entries');
  if (!f) return;
  const r = spawnSync(process.execPath, ['--import', 'tsx', MAIN, 'define', f.path, 'merged', 'duplicated', '--json'], {
    encoding: 'utf8',
    env: { ...process.env, XDG_CACHE_HOME: cache },
  });
  assert.equal(r.status, 0, r.stderr);
  const out = JSON.parse(r.stdout) as Array<{ event: string; lowerBound?: boolean }>;
  const merged = out.filter((p) => p.event.startsWith('merged'));
  const duplicated = out.filter((p) => p.event.startsWith('duplicated'));
  assert.ok(merged.length > 0 && merged.every((p) => p.lowerBound === true), JSON.stringify(out));
  assert.equal(duplicated.length, 2, 'one event per duplicated path');
  assert.ok(duplicated.every((p) => p.lowerBound === undefined));
  assert.match(r.stderr, /merged: its count is a lower bound/);
});

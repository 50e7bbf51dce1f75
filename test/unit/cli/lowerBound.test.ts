// define names what it cannot prove: a function some of whose inlined calls may go uncounted is marked a lower
// bound (define --json `lowerBound`, and a warning on stderr); one whose entries are all proved is not.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { warningLines } from '../../../src/cli/commands/trace';
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
  // A function's notes are said once, not once per site it arms.
  const lines = r.stderr.split('\n').filter((l) => l.startsWith('probelens: '));
  assert.deepEqual(lines, [...new Set(lines)], r.stderr);
  assert.equal(lines.filter((l) => /its count is a lower bound/.test(l)).length, 1, r.stderr);
});

test('warnings: each probe says a warning once, named by its first point; other probes say their own', () => {
  const note = 'f: its count is a lower bound';
  const lines = warningLines([
    { event: 'f', spec: 'f', warnings: [note] },
    { event: 'f_inlined_1234', spec: 'f', warnings: [note, 'argument x is unavailable here'] },
    { event: 'g', spec: 'g', warnings: [note] },
  ]);
  assert.deepEqual(lines, [`f: ${note}`, 'f_inlined_1234: argument x is unavailable here', `g: ${note}`]);
});

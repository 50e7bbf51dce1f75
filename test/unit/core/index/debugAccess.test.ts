// A session's DebugAccess (src/core/index/debugAccess.ts) reads its binary range by range, as the index does: what
// it is asked for, never the whole file (a kernel's image is 590 MB).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { statSync } from 'node:fs';
import { bytesReadIn } from '../../../../src/core/binary/fileBytes';
import { NoDebugInfoError, openDebugAccess } from '../../../../src/core/index/debugAccess';
import { fixtureOrSkip } from '../../../helpers/fixtures';

test('a DebugAccess reads its binary range by range: opening it reads the headers, a question what it needs', async (t) => {
  const f = await fixtureOrSkip(t, 'rust-O2');
  if (!f) return;
  const access = await openDebugAccess(f.path);
  try {
    const read = () => access.image.readMaps().reduce((n, m) => n + bytesReadIn(m, 0, m.size), 0);
    const size = statSync(f.path).size;
    const opened = read();
    assert.ok(opened < size / 20, `opening read ${opened} of ${size} bytes`);
    const fns = access.dwarf.functions();
    const main = fns.find((fn) => fn.name.startsWith('main::') && fn.ranges.length >= 2);
    assert.ok(main, `its DWARF is read as asked: ${fns.length} functions`);
    const code = access.image.functionBytes({ address: BigInt(main.ranges[0]), size: BigInt(main.ranges[1] - main.ranges[0]) });
    assert.equal(code.length, main.ranges[1] - main.ranges[0], 'and its code');
    assert.ok(read() < size, `${read()} of ${size} bytes read`);
  } finally {
    access.image.close();
  }
});

test('a binary without DWARF is refused', async (t) => {
  const f = await fixtureOrSkip(t, 'calls-O0-stripped-buildid');
  if (!f) return;
  await assert.rejects(openDebugAccess(f.path, ['/nonexistent']), NoDebugInfoError);
});

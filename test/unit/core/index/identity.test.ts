import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { readBinaryIdentity } from '../../../../src/core/index/identity';
import { miniModule } from '../../../helpers/miniKernel';

test('build-id read from the program headers equals readelf -n', () => {
  for (const bin of ['/bin/true', '/bin/sh']) {
    const notes = execFileSync('readelf', ['-n', bin], { encoding: 'utf8' });
    const expected = /Build ID: ([0-9a-f]+)/.exec(notes)?.[1];
    assert.ok(expected, `${bin} has a build-id`);
    assert.equal(readBinaryIdentity(bin).buildId, expected);
  }
});

test('files without a build-id, and non-ELF files, still get size and mtime', () => {
  const dir = mkdtempSync(join(tmpdir(), 'probelens-id-'));
  const src = join(dir, 'a.c');
  writeFileSync(src, 'int main(void){return 0;}\n');
  const bin = join(dir, 'a.out');
  execFileSync('gcc', ['-Wl,--build-id=none', '-o', bin, src]);
  const id = readBinaryIdentity(bin);
  assert.equal(id.buildId, undefined);
  assert.ok(id.size > 0 && id.mtimeMs > 0);
  assert.equal(readBinaryIdentity(src).buildId, undefined);
});

test("a relocatable object's build-id (a module's .ko: no program headers) is read from its note section, at its offset there", (t) => {
  const ko = miniModule(t);
  if (!ko) return;
  const expected = /Build ID: ([0-9a-f]+)/.exec(execFileSync('readelf', ['-n', ko], { encoding: 'utf8' }))?.[1];
  assert.ok(expected);
  const id = readBinaryIdentity(ko);
  assert.equal(id.buildId, expected);
  // /sys/module/NAME/notes/.note.gnu.build-id holds the section: the id follows the 12-byte header and "GNU\0".
  assert.equal(id.buildIdNoteOffset, 16);
  const bytes = readFileSync(ko);
  assert.equal(bytes.toString('hex', id.buildIdOffset!, id.buildIdOffset! + id.buildIdLength!), expected);
});

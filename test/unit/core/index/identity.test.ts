import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { readBinaryIdentity } from '../../../../src/core/index/identity';

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

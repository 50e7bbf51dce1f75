import assert from 'node:assert/strict';
import { test } from 'node:test';
import { buildToLocal, localToBuild, remoteBinaryPath } from '../../../../src/vscode/model/pathMapping';

const maps = { '/build/src': '${workspaceFolder}', '/build/src/vendor': '/opt/vendor' };

test('a DWARF path under a mapped build prefix becomes the local file, and back', () => {
  assert.equal(buildToLocal('/build/src/app/main.c', maps, '/home/me/proj'), '/home/me/proj/app/main.c');
  assert.equal(localToBuild('/home/me/proj/app/main.c', maps, '/home/me/proj'), '/build/src/app/main.c');
});

test('the longest matching prefix wins', () => {
  assert.equal(buildToLocal('/build/src/vendor/z/z.c', maps, '/home/me/proj'), '/opt/vendor/z/z.c');
  assert.equal(localToBuild('/opt/vendor/z/z.c', maps, '/home/me/proj'), '/build/src/vendor/z/z.c');
});

test('prefixes match whole path components only; unmapped paths are unchanged', () => {
  assert.equal(buildToLocal('/build/srcfoo/a.c', maps, '/w'), '/build/srcfoo/a.c');
  assert.equal(localToBuild('/elsewhere/a.c', maps, '/w'), '/elsewhere/a.c');
});

test('${workspaceFolder} mappings are ignored without a workspace folder', () => {
  assert.equal(buildToLocal('/build/src/a.c', { '/build/src': '${workspaceFolder}' }), '/build/src/a.c');
});

test('a remote target maps the binary path by its prefix pair', () => {
  assert.equal(
    remoteBinaryPath('/home/me/proj/build/app', { localPrefix: '/home/me/proj/build', remotePrefix: '/srv/app' }),
    '/srv/app/app',
  );
  assert.equal(remoteBinaryPath('/other/app', { localPrefix: '/home/me/proj/build', remotePrefix: '/srv/app' }), '/other/app');
  assert.equal(remoteBinaryPath('/x/app', {}), '/x/app');
});

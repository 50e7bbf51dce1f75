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

test("a relative build prefix (Debian's kernel: a relative comp_dir) maps the DWARF's relative paths", () => {
  const k = {
    'debian/build/build_amd64_none_cloud-amd64/': '${workspaceFolder}',
    '/build/reproducible-path/linux-6.1.192': '${workspaceFolder}',
  };
  assert.equal(buildToLocal('debian/build/build_amd64_none_cloud-amd64/fs/open.c', k, '/src/linux'), '/src/linux/fs/open.c');
  assert.equal(localToBuild('/src/linux/fs/open.c', k, '/src/linux'), 'debian/build/build_amd64_none_cloud-amd64/fs/open.c');
  assert.equal(
    buildToLocal('/build/reproducible-path/linux-6.1.192/arch/x86/entry/entry_64.S', k, '/src/linux'),
    '/src/linux/arch/x86/entry/entry_64.S',
  );
  // `./x` is `x`; `.` and a prefix climbing out of the compilation directory map nothing.
  assert.equal(buildToLocal('debian/x.c', { './debian': '/w' }), '/w/x.c');
  assert.equal(buildToLocal('x.c', { '.': '/w' }), 'x.c');
  assert.equal(buildToLocal('../x.c', { '..': '/w' }), '../x.c');
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

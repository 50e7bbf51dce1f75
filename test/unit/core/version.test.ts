// The version a user reads (`probelens --version`, the extension's "Show Version" command) is the one the
// package is published under.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { PROBELENS_VERSION } from '../../../src/core/version';

test('the version shown is package.json’s', () => {
  const pkg = JSON.parse(readFileSync(resolve(__dirname, '../../../package.json'), 'utf8')) as { version: string };
  assert.match(PROBELENS_VERSION, /^\d+\.\d+\.\d+(-[0-9A-Za-z.-]+)?$/);
  assert.equal(PROBELENS_VERSION, pkg.version);
});

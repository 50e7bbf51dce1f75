import assert from 'node:assert/strict';
import { test } from 'node:test';
import { sshConfigHosts } from '../../../../src/vscode/model/sshHosts';

test('concrete Host names are offered; patterns, negations and comments are not', () => {
  const text = [
    'Host db1 db2 # databases',
    '  HostName 10.0.0.1',
    'Host *.internal !skip',
    'host=bastion',
    'Match host x',
    'Host db1',
  ].join('\n');
  assert.deepEqual(sshConfigHosts(text), ['db1', 'db2', 'bastion']);
});

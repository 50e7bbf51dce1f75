import { test } from 'node:test';
import assert from 'node:assert/strict';
import { bucketLabel, formatCount, formatDuration, formatTs } from '../../../webview/format';

test('durations are the one formatter the CLI and the editor use: two significant digits', () => {
  assert.equal(formatDuration(950), '950ns');
  assert.equal(formatDuration(2100), '2.1µs');
  assert.equal(formatDuration(25_000), '25µs');
  assert.equal(formatDuration(3.2e6), '3.2ms');
  assert.equal(formatDuration(4e9), '4s');
  assert.equal(formatDuration(1.2e9), '1.2s');
  assert.equal(formatDuration(-1), '');
  assert.equal(bucketLabel(10), '1µs');
});

test('counts get thousands separators and timestamps microseconds', () => {
  assert.equal(formatCount(1204), '1,204');
  assert.equal(formatCount(999), '999');
  assert.equal(formatCount(1_000_000), '1,000,000');
  assert.equal(formatTs(12.5), '12.500000');
});

// The CLI's index limits come from the environment; a bad value is a usage error naming the variable.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { UsageError } from '../../../src/cli/args';
import { indexOptions } from '../../../src/cli/limits';
import { CLI_LIMIT_NAMES } from '../../../src/core/index/worker/limits';

test('PROBELENS_INDEX_WORKERS fixes the CLI index pool size; unset it is sized to the machine; anything else is a usage error', () => {
  const saved = process.env.PROBELENS_INDEX_WORKERS;
  try {
    delete process.env.PROBELENS_INDEX_WORKERS;
    assert.equal(indexOptions().workers, undefined);
    process.env.PROBELENS_INDEX_WORKERS = '3';
    assert.equal(indexOptions().workers, 3);
    for (const bad of ['0', '-1', '1.5', 'two']) {
      process.env.PROBELENS_INDEX_WORKERS = bad;
      assert.throws(
        () => indexOptions(),
        (e: unknown) => e instanceof UsageError && /PROBELENS_INDEX_WORKERS/.test(e.message),
        bad,
      );
    }
  } finally {
    if (saved === undefined) delete process.env.PROBELENS_INDEX_WORKERS;
    else process.env.PROBELENS_INDEX_WORKERS = saved;
  }
});

test('PROBELENS_INDEX_TIME_LIMIT and PROBELENS_INDEX_MEMORY_LIMIT_MB fix the limits, and an error at a limit names them', () => {
  const names = ['PROBELENS_INDEX_TIME_LIMIT', 'PROBELENS_INDEX_MEMORY_LIMIT_MB'];
  const saved = names.map((n) => process.env[n]);
  try {
    for (const n of names) delete process.env[n];
    const unset = indexOptions();
    assert.deepEqual(unset.limits, { timeLimitSeconds: undefined, memoryLimitMb: undefined }, 'unset: scaled to the binary');
    assert.equal(unset.inWorker, true);
    assert.deepEqual(unset.limitNames, CLI_LIMIT_NAMES);
    assert.deepEqual(names, [CLI_LIMIT_NAMES.time, CLI_LIMIT_NAMES.memory]);
    process.env.PROBELENS_INDEX_TIME_LIMIT = '2.5';
    process.env.PROBELENS_INDEX_MEMORY_LIMIT_MB = ' ';
    assert.deepEqual(indexOptions().limits, { timeLimitSeconds: 2.5, memoryLimitMb: undefined });
    process.env.PROBELENS_INDEX_MEMORY_LIMIT_MB = '4096';
    assert.equal(indexOptions().limits?.memoryLimitMb, 4096);
    for (const bad of ['0', '-1', 'lots', 'Infinity']) {
      process.env.PROBELENS_INDEX_TIME_LIMIT = bad;
      assert.throws(
        () => indexOptions(),
        (e: unknown) => e instanceof UsageError && e.message === `PROBELENS_INDEX_TIME_LIMIT must be a positive number, got '${bad}'`,
        bad,
      );
    }
  } finally {
    names.forEach((n, i) => (saved[i] === undefined ? delete process.env[n] : (process.env[n] = saved[i])));
  }
});

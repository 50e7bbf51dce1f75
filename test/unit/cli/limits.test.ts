import { test } from 'node:test';
import assert from 'node:assert/strict';
import { UsageError } from '../../../src/cli/args';
import { indexOptions } from '../../../src/cli/limits';

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

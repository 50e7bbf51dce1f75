import { test } from 'node:test';
import assert from 'node:assert/strict';
import { runWorkerJob } from '../../../../src/core/worker/client';

test('jobs run in a worker thread and answer', async () => {
  assert.equal(await runWorkerJob({ kind: 'ping', text: 'hi' }), 'pong hi');
});

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mergeSummaries } from '../../../../src/core/session/fanout';
import type { SessionSummary } from '../../../../src/core/session/traceSession';
import { describeMismatch } from '../../../../src/cli/commands/trace';

const summary = (host: string, hits: number, mismatch: number): SessionSummary => ({
  host,
  hits: { f: hits },
  lost: 1,
  mismatch,
  kernelHits: { f: hits + 1 + mismatch },
  latency: {},
});

test("merged summaries: a host whose received + lost differs from the kernel's count says by how much", () => {
  const m = mergeSummaries([
    { host: 'a', summary: summary('a', 10, 0) },
    { host: 'b', summary: summary('b', 5, 3) },
    { host: 'c', error: new Error('unreachable') },
  ]);
  assert.equal(m.mismatch, 3);
  assert.deepEqual(m.hosts, { a: { ok: true }, b: { ok: true, mismatch: 3 }, c: { ok: false, error: 'unreachable' } });
  assert.deepEqual(m.kernelHits, { f: 20 });
  assert.equal(describeMismatch(3), 'mismatch: 3 events the kernel counted were neither received nor reported lost');
  assert.equal(describeMismatch(1), 'mismatch: 1 event the kernel counted was neither received nor reported lost');
  assert.equal(describeMismatch(-2), 'mismatch: 2 more records received than the kernel counted');
});

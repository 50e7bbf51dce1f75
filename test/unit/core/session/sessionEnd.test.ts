// How a session that ended early is told: one sentence naming the cause, from how the agent exited, and a merged
// summary that keeps the counts of what arrived and says why in `error`.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mergeSummaries } from '../../../../src/core/session/fanout';
import { describeEnd, type SessionSummary } from '../../../../src/core/session/traceSession';
import { plainData } from '../../../helpers/plain';

test('each way the agent ends has its own sentence', () => {
  assert.match(
    describeEnd('h', { code: 142, signal: null }, 3),
    /^the agent on h heard nothing from ProbeLens for 3 s \(was it stopped, e\.g\. by Ctrl-Z/,
  );
  assert.equal(describeEnd('h', { code: null, signal: null }, 3), 'the connection to h was lost');
  assert.equal(describeEnd('h', { code: null, signal: 'KILL' }, 3), 'the agent on h was killed (SIGKILL)');
  assert.equal(describeEnd('h', { code: 143, signal: null }, 3), 'the agent on h was ended by signal 15 and removed its probes');
  assert.equal(
    describeEnd('h', { code: 2, signal: null }, 3, ['a', 'sh: 1: oops']),
    'the agent on h exited unexpectedly (code 2): a | sh: 1: oops',
  );
});

test('a host that ended early keeps its counts in the merged summary, and its cause is the summary’s error', () => {
  const partial: SessionSummary = {
    host: 'a',
    hits: { f: 3 },
    lost: 2,
    mismatch: 0,
    kernelHits: {},
    latency: {},
    timings: {},
    sites: {},
    error: 'the connection to a was lost',
  };
  const whole: SessionSummary = {
    host: 'b',
    hits: { f: 4 },
    lost: 0,
    mismatch: 0,
    kernelHits: { f: 4 },
    latency: {},
    timings: {},
    sites: {},
  };
  const m = mergeSummaries([
    { host: 'a', summary: partial, error: new Error(partial.error) },
    { host: 'b', summary: whole },
  ]);
  assert.deepEqual(plainData(m.hits), { f: 7 });
  assert.equal(m.lost, 2);
  assert.deepEqual(plainData(m.hosts), { a: { ok: false, error: 'the connection to a was lost' }, b: { ok: true } });
  assert.equal(m.error, 'a: the connection to a was lost');
  assert.equal(mergeSummaries([{ host: 'b', summary: whole }]).error, undefined);
});

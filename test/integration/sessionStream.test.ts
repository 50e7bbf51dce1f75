// Which stream a session reads, on this machine's real tracefs: ring-buffer pages by default, with exact counts when
// the buffer overflows; trace_pipe text on a target whose raw check fails (a fake target, see FakeRawlessTarget), said
// in the session and its summary; and a session that insists on pages there is refused.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { loadIndex } from '../../src/core/index/load';
import { TraceSession } from '../../src/core/session/traceSession';
import { LocalTarget } from '../../src/core/target/local';
import type { Hit } from '../../src/core/tracefs/hitParser';
import { requireTracefs } from '../helpers/tracefs';
import { FakeRawlessTarget, buildWorkload, leftovers, runWorkloadAsync, runWorkloadPid, type Workload } from './agentHarness';
import { plainData } from '../helpers/plain';

let workload: Workload | undefined;
const getWorkload = () => (workload ??= buildWorkload());

test('by default a session reads ring-buffer pages: hits exact, and received + lost = kernelHits when the buffer overflows', async (t) => {
  if (!requireTracefs(t)) return;
  const w = getWorkload();
  const { index } = await loadIndex(w.path, { noCache: true });
  const hits: Hit[] = [];
  const small = await TraceSession.start({ target: new LocalTarget(), index, specs: ['pl_add a s'], onHit: (h) => hits.push(h) });
  assert.equal(small.stream, 'raw');
  const run = runWorkloadPid(w, 3, 'x\ny');
  const s1 = await small.stop();
  assert.equal(s1.stream, 'raw');
  assert.deepEqual(
    plainData(hits.map((h) => [h.args.a, h.args.s, h.pid, h.tid, h.comm])),
    [-1, -2, -3].map((a) => [a, 'x\ny', run.pid, run.pid, 'workload']),
  );
  assert.deepEqual(plainData([s1.hits.pl_add, s1.lost, s1.kernelHits.pl_add, s1.mismatch]), [3, 0, 3, 0]);

  let received = 0;
  const N = 100_000;
  const flood = await TraceSession.start({ target: new LocalTarget(), index, specs: ['pl_add a'], bufferKb: 8, onHit: () => received++ });
  await runWorkloadAsync(w, N);
  const s2 = await flood.stop();
  t.diagnostic(`received ${received}, lost ${s2.lost}, kernelHits ${s2.kernelHits.pl_add}`);
  assert.equal(s2.kernelHits.pl_add, N);
  assert.ok(s2.lost > 0, 'the 8 KiB buffer must overflow, else this proves nothing');
  assert.equal(received + s2.lost, N);
  assert.equal(s2.hits.pl_add, received);
  assert.equal(s2.mismatch, 0);
  await flood.exited;
  await small.exited;
});

test('a target whose raw check fails (fake) streams text, says why, and gets the same hits; raw insisted on is refused', async (t) => {
  if (!requireTracefs(t)) return;
  const w = getWorkload();
  const { index } = await loadIndex(w.path, { noCache: true });
  const hits: Hit[] = [];
  const session = await TraceSession.start({
    target: new FakeRawlessTarget('noRawFile'),
    index,
    specs: ['pl_add a s'],
    onHit: (h) => hits.push(h),
  });
  assert.equal(session.stream, 'text');
  assert.match(session.streamNote ?? '', /ring-buffer pages cannot be read there .*ENOTSUP.*trace_pipe_raw/);
  const run = runWorkloadPid(w, 2, 'x\ny');
  const sum = await session.stop();
  assert.equal(sum.stream, 'text');
  assert.deepEqual(plainData(hits.map((h) => [h.args.a, h.args.s, h.pid])), [
    [-1, 'x\ny', run.pid],
    [-2, 'x\ny', run.pid],
  ]);
  assert.deepEqual(plainData([sum.hits.pl_add, sum.lost, sum.kernelHits.pl_add, sum.mismatch]), [2, 0, 2, 0]);
  await assert.rejects(
    TraceSession.start({ target: new FakeRawlessTarget('noRawFile'), index, specs: ['pl_add a'], stream: 'raw' }),
    /RAW failed \(ENOTSUP\)/,
  );
  await session.exited;
  assert.deepEqual(leftovers(session.probes[0].group!), []);
});

test("a burst of hits whose handling outlasts the agent's heartbeat timeout does not end the session: the stream's consumer keeps it alive", async (t) => {
  if (!requireTracefs(t)) return;
  const w = getWorkload();
  const { index } = await loadIndex(w.path, { noCache: true });
  let handled = 0;
  // Each hit holds the event loop 250 ms (as printing a buffer's worth of hits does on a loaded machine): the 16
  // calls' hits, released together, keep it busy 4 s, twice the agent's 2 s timeout, with no turn for the timer.
  const busy = (): void => {
    const until = Date.now() + 250;
    while (Date.now() < until) {
      /* the handler's own work */
    }
    handled++;
  };
  const session = await TraceSession.start({ target: new LocalTarget(), index, specs: ['pl_add a'], heartbeatSeconds: 2, onHit: busy });
  runWorkloadPid(w, 16);
  const until = Date.now() + 120_000;
  while (handled < 16 && Date.now() < until) await new Promise((r) => setTimeout(r, 100));
  // Quiet again: a few more timer heartbeats, then a normal stop.
  await new Promise((r) => setTimeout(r, 3000));
  const sum = await session.stop();
  assert.equal(sum.error, undefined, `the session ended as asked: ${sum.error}`);
  assert.deepEqual(plainData([handled, sum.hits.pl_add, sum.kernelHits.pl_add, sum.lost]), [16, 16, 16, 0]);
  await session.exited;
  assert.deepEqual(leftovers(session.probes[0].group!), []);
});

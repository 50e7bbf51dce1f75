// Each hit's process id from the target: the first hit of a thread waits for its answer, each thread keeps its order.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { Hit } from '../../../../src/shared/hit';
import { HitProcesses } from '../../../../src/core/tracefs/hitProcesses';
import { HitParser, type EventSchema } from '../../../../src/core/tracefs/hitParser';

const hit = (tid: number, pid: number, n: number): Hit => ({
  host: 'h',
  probe: 'f',
  kind: 'entry',
  pid,
  tid,
  comm: '<...>',
  cpu: 0,
  ts: n,
  args: { n },
  event: 'pl_f',
});

/** A lookup the test answers by hand, recording what was asked. */
function manualLookup() {
  const asked: number[][] = [];
  const answers: Array<(m: ReadonlyMap<number, number>) => void> = [];
  const lookup = (tids: number[]) => {
    asked.push(tids);
    return new Promise<ReadonlyMap<number, number>>((res) => answers.push(res));
  };
  return { asked, answers, lookup };
}

const tick = () => new Promise((r) => setImmediate(r));

test("a thread's first hit waits for the target's process id; its later hits wait behind it; one ask per batch", async () => {
  const out: Hit[] = [];
  const { asked, answers, lookup } = manualLookup();
  const p = new HitProcesses((h) => out.push(h), lookup);
  // The printed process id 2145 is an earlier thread's (a stale saved_tgids entry): the target says 2148.
  p.deliver(hit(2148, 2145, 1));
  p.deliver(hit(2148, 2145, 2));
  p.deliver(hit(9, 9, 3));
  assert.equal(out.length, 0);
  assert.equal(p.waiting, 3);
  await tick();
  assert.deepEqual(asked, [[2148, 9]]);
  answers[0](new Map([[2148, 2148]]));
  await tick();
  // 9 is not named (gone, never saved): it keeps the id it came with.
  assert.deepEqual(
    out.map((h) => [h.tid, h.pid, h.args.n]),
    [
      [2148, 2148, 1],
      [2148, 2148, 2],
      [9, 9, 3],
    ],
  );
  // Known threads pass at once, with the target's id.
  p.deliver(hit(2148, 2145, 4));
  assert.deepEqual([out.at(-1)!.pid, out.at(-1)!.args.n], [2148, 4]);
  assert.equal(asked.length, 1);
});

test("end() delivers what is held with STOP's ids, else the id each hit came with; a late answer adds nothing", async () => {
  const out: Hit[] = [];
  const { answers, lookup } = manualLookup();
  const p = new HitProcesses((h) => out.push(h), lookup);
  p.deliver(hit(5, 50, 1));
  p.deliver(hit(6, 60, 2));
  await tick();
  p.end(new Map([[5, 500]]));
  assert.deepEqual(
    out.map((h) => [h.tid, h.pid]),
    [
      [5, 500],
      [6, 60],
    ],
  );
  answers[0](
    new Map([
      [5, 5],
      [6, 6],
    ]),
  );
  await tick();
  assert.equal(out.length, 2);
  // After the end nothing is held or asked.
  p.deliver(hit(7, 70, 3));
  assert.deepEqual([out.length, out.at(-1)!.pid], [3, 70]);
});

test('without a lookup every hit passes at once with the id it came with', () => {
  const out: Hit[] = [];
  const p = new HitProcesses((h) => out.push(h));
  p.deliver(hit(3, 30, 1));
  assert.deepEqual([out.length, out[0].pid], [1, 30]);
});

test("the text stream: trace_pipe's printed (tgid) gives way to the target's, as CI once saw it stale", async () => {
  const events: EventSchema[] = [{ event: 'pl_add', probe: 'add', kind: 'entry', args: [{ name: 'a', type: 's32' }] }];
  const out: Hit[] = [];
  const parser = new HitParser({
    host: 'h',
    events,
    onHit: (h) => out.push(h),
    lookupTgids: async (tids) => new Map(tids.map((t) => [t, t])),
  });
  parser.push('           <...>-2148    (   2145) [001] DBZff  2488.667250: pl_add: (0x5646a543f16a) a=-1');
  parser.push('           <...>-2148    (   2145) [001] DBZff  2488.667251: pl_add: (0x5646a543f16a) a=-2');
  assert.equal(out.length, 0, 'held until the target answers');
  await tick();
  assert.deepEqual(
    out.map((h) => [h.pid, h.tid, h.args.a]),
    [
      [2148, 2148, -1],
      [2148, 2148, -2],
    ],
  );
  assert.equal(parser.stats.hits, 2);
});

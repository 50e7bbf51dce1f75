import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Pacer } from '../../../../src/vscode/model/pacer';
import { fakeClock } from '../../../helpers/fakeClock';

test('a change after a quiet spell is drawn at once; a stream of changes at most once per gap, none waiting longer', () => {
  const clock = fakeClock();
  const runs: number[] = [];
  const p = new Pacer(50, () => runs.push(clock.now()), clock);
  p.poke();
  clock.advance(0);
  assert.deepEqual(runs, [0], 'the first change is drawn without waiting');
  // A hit every millisecond for 200 ms: one redraw per 50 ms, each hit drawn within 50 ms of its arrival.
  for (let t = 1; t <= 200; t++) {
    clock.advance(1);
    p.poke();
  }
  clock.advance(100);
  assert.deepEqual(runs, [0, 50, 100, 150, 200, 250], 'the hit of t=200 came just after the redraw at 200');
  // Quiet, then one change: at once again.
  clock.advance(1000);
  p.poke();
  clock.advance(0);
  assert.equal(runs.at(-1), clock.now());
});

test('disposed, nothing more is drawn', () => {
  const clock = fakeClock();
  let runs = 0;
  const p = new Pacer(50, () => runs++, clock);
  p.poke();
  p.dispose();
  clock.advance(100);
  assert.equal(runs, 0);
});

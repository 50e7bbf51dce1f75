import assert from 'node:assert/strict';
import { test } from 'node:test';
import { OfferedOnce, offerText, pressure, STREAM_RATE_LIMIT } from '../../../../src/vscode/model/aggregateOffer';

test('lost events are put on the probe that fired most, at its rate with the loss included', () => {
  const prev = { t: 0, lost: 0, hits: { hot: 1000, cold: 10 } };
  const now = { t: 2000, lost: 3000, hits: { hot: 9000, cold: 12 } };
  assert.deepEqual(pressure(prev, now), [{ spec: 'hot', rate: (8000 + 3000) / 2, losing: true }]);
});

test('a probe over the limit is named before anything is lost; one under it is not', () => {
  const prev = { t: 1000, lost: 5, hits: { a: 0, b: 0 } };
  const now = { t: 2000, lost: 5, hits: { a: STREAM_RATE_LIMIT + 1, b: STREAM_RATE_LIMIT } };
  assert.deepEqual(pressure(prev, now), [{ spec: 'a', rate: STREAM_RATE_LIMIT + 1, losing: false }]);
  assert.deepEqual(pressure(prev, now, 100_000), []);
});

test('no earlier look, or one less than half a second ago, says nothing', () => {
  const now = { t: 1000, lost: 100, hits: { a: 100 } };
  assert.deepEqual(pressure(undefined, now), []);
  assert.deepEqual(pressure({ t: 700, lost: 0, hits: { a: 0 } }, now), []);
});

test('the offer names the probe and its rate; a target without hist triggers is told of loss and narrowing, no offer', () => {
  const p = { spec: 'add_ints $params', rate: 123456.4, losing: true };
  assert.deepEqual(offerText(p, 'vm', true), {
    message: 'add_ints $params loses hits at 123,456/s on vm: aggregate it in the kernel?',
    offer: true,
  });
  const no = offerText(p, 'local', false)!;
  assert.equal(no.offer, false);
  assert.match(no.message, /^add_ints \$params loses hits at 123,456\/s on local, whose kernel has no hist triggers .*narrow the probe/);
  // Fast but losing nothing, where the kernel cannot count: nothing to say.
  assert.equal(offerText({ spec: 's', rate: 30000, losing: false }, 'local', false), undefined);
  assert.match(
    offerText({ spec: 's', rate: 30000, losing: false }, 'vm', true)!.message,
    /^s fires at 30,000\/s, more than the stream carries \(20,000\/s\) on vm: aggregate/,
  );
});

test('each probe is offered once', () => {
  const o = new OfferedOnce();
  assert.equal(o.first('bin', 'f'), true);
  assert.equal(o.first('bin', 'f'), false);
  assert.equal(o.first('bin', 'g'), true);
  assert.equal(o.first('other', 'f'), true);
});

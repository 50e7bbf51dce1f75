import { test } from 'node:test';
import assert from 'node:assert/strict';
import { chooseStream, streamChoiceFrom } from '../../../../src/core/session/streamChoice';
import { AgentError, type RawSetup, type TracefsAgent } from '../../../../src/core/tracefs/agentClient';

const SETUP: RawSetup = { headerPage: 'p', headerEvent: 'e', pageSize: 4096, cpus: [0, 1] };

/** A FAKE agent: only useRawStream, answering as a target that can (or cannot) ship pages. */
function fakeAgent(answer: RawSetup | Error): { agent: TracefsAgent; asked: () => number } {
  let n = 0;
  const agent = {
    useRawStream: () => {
      n++;
      return answer instanceof Error ? Promise.reject(answer) : Promise.resolve(answer);
    },
  } as unknown as TracefsAgent;
  return { agent, asked: () => n };
}

test('PROBELENS_STREAM: unset or empty is auto; raw, text and auto are taken; anything else is refused in one sentence', () => {
  assert.equal(streamChoiceFrom(undefined), 'auto');
  assert.equal(streamChoiceFrom(''), 'auto');
  for (const v of ['auto', 'raw', 'text']) assert.equal(streamChoiceFrom(v), v);
  assert.throws(() => streamChoiceFrom('binary'), /PROBELENS_STREAM is 'binary': it takes raw, text or auto/);
});

test('auto takes the pages where RAW is accepted and falls back to text, saying why, where the target refuses', async () => {
  const ok = fakeAgent(SETUP);
  assert.deepEqual(await chooseStream(ok.agent, 'auto'), { kind: 'raw', setup: SETUP });
  const no = fakeAgent(new AgentError('RAW', 'ENOTSUP', 'RAW failed (ENOTSUP): no trace_pipe_raw'));
  const chosen = await chooseStream(no.agent, 'auto');
  assert.equal(chosen.kind, 'text');
  assert.match(chosen.note!, /ring-buffer pages cannot be read there \(RAW failed \(ENOTSUP\): no trace_pipe_raw\)/);
  // raw insists; text does not even ask.
  await assert.rejects(chooseStream(no.agent, 'raw'), /ENOTSUP/);
  const text = fakeAgent(SETUP);
  assert.equal((await chooseStream(text.agent, 'text')).kind, 'text');
  assert.equal(text.asked(), 0);
  // An agent that died is not a refusal: it is not hidden behind a fallback.
  await assert.rejects(chooseStream(fakeAgent(new Error('gone')).agent, 'auto'), /gone/);
});

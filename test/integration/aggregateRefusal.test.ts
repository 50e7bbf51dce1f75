// In-kernel aggregation where the kernel cannot: this machine's kernel has uprobes but no hist triggers (its tracefs
// README offers no `hist:`, and there is no synthetic_events). `probelens trace --aggregate` is refused in one
// sentence that says why and what to do, with nothing left on the target; and the agent, asked directly, refuses
// triggers and synthetic events that are not the ones ProbeLens makes before it ever writes them.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { requireTracefs } from '../helpers/tracefs';
import { fixtureOrSkip } from '../helpers/fixtures';
import { LocalTarget } from '../../src/core/target/local';
import { AgentError, TracefsAgent } from '../../src/core/tracefs/agentClient';
import { leftovers } from './agentHarness';
import { groupsProbing, isolatedEnv, privateCopy, runCli, waitNoGroups } from './engine-harness';

const TIMEOUT = { timeout: 240_000 };

/** Whether this machine's kernel has hist triggers (then the refusal cannot be shown here). */
function hasHist(tracefs: string): boolean {
  return readFileSync(join(tracefs, 'README'), 'utf8').includes('hist:');
}

test('trace --aggregate on a kernel without hist triggers is refused in one sentence, leaving nothing armed', TIMEOUT, async (t) => {
  const tracefs = requireTracefs(t);
  if (!tracefs) return;
  // A kernel with hist triggers aggregates (test/vm/aggregate.test.ts): the refusal is shown where it has none.
  if (hasHist(tracefs)) return t.skip('this kernel has hist triggers');
  const f = await fixtureOrSkip(t, 'calls-O2');
  if (!f) return;
  const bin = privateCopy(t, f.path);
  const r = await runCli(t, ['trace', bin, 'tick seq', 'tick%return', '--aggregate', '--duration', '30'], isolatedEnv(t));
  assert.equal(r.code, 1, r.stderr);
  assert.match(
    r.stderr,
    /^probelens: local: the kernel on local has no hist triggers \(its tracefs README offers no 'hist:'; CONFIG_HIST_TRIGGERS is off\): it cannot aggregate in the kernel; trace without --aggregate$/m,
  );
  assert.doesNotMatch(r.stderr, /tracing \d+ probe/, 'nothing was armed');
  assert.deepEqual(await waitNoGroups(bin, 10_000), [], 'no definitions left for the binary');
  assert.deepEqual(groupsProbing(bin), []);
});

test('the CLI refuses --aggregate with --count, --pid or --filter as bad usage', TIMEOUT, async (t) => {
  const f = await fixtureOrSkip(t, 'calls-O2');
  if (!f) return;
  for (const extra of [
    ['--count', '5'],
    ['--pid', '1'],
    ['--filter', 'seq > 1'],
  ]) {
    const r = await runCli(t, ['trace', f.path, 'tick seq', '--aggregate', ...extra], isolatedEnv(t));
    assert.equal(r.code, 2, r.stderr);
    assert.match(r.stderr, new RegExp(`${extra[0]} cannot be combined with --aggregate`));
  }
});

test('the agent takes only its own hist triggers and synthetic events, by pattern, before tracefs sees them', TIMEOUT, async (t) => {
  const tracefs = requireTracefs(t);
  if (!tracefs) return;
  const agent = await TracefsAgent.start(new LocalTarget());
  t.after(() => agent.stop().catch(() => undefined));
  const g = agent.group;
  const code = async (p: Promise<unknown>): Promise<string> => {
    try {
      await p;
      return 'OK';
    } catch (e) {
      assert.ok(e instanceof AgentError, String(e));
      return e.code;
    }
  };
  // Not a name of this session's synthetic events.
  assert.equal(await code(agent.defineSynthetic('probelens_1_other_l0')), 'EINVAL');
  assert.equal(await code(agent.defineSynthetic(`${g}_l0; rm`)), 'EINVAL');
  if (!existsSync(join(tracefs, 'synthetic_events'))) assert.equal(await code(agent.defineSynthetic(`${g}_l0`)), 'ENOHIST');
  for (const trigger of [
    'traceoff',
    'hist:keys=common_pid:name=shared',
    'hist:keys=common_pid:vals=hitcount if common_pid > 0',
    `hist:keys=common_pid:lat=common_timestamp-$ts0:onmatch(sched.sched_waking).trace(${g}_l0,$lat)`,
    `hist:keys=common_pid:lat=common_timestamp-$ts0:onmatch(${g}.f).trace(probelens_1_other_l0,$lat)`,
    'hist:keys=common_pid:vals=hitcount`id`',
  ])
    assert.equal(await code(agent.addTriggers([{ event: 'f', trigger }])), 'EINVAL', trigger);
  // A trigger of the right shape on an event this session does not have.
  assert.equal(await code(agent.addTriggers([{ event: 'f', trigger: 'hist:keys=common_pid:vals=hitcount' }])), 'ENOENT');
  assert.equal(await code(agent.readHist(['f'])), 'ENOENT');
  await agent.stop();
  await agent.exit;
  assert.deepEqual(leftovers(g), []);
});

// A trace edited while it runs, through the whole engine on the real tracefs: probes added to an armed session
// (one refused by the compiler, one by the kernel) while the first keeps counting, one removed alone, one
// disabled and re-enabled; the summary keeps the removed probe's kernel count and nothing is lost against
// uprobe_profile.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { copyFileSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { loadIndex } from '../../src/core/index/load';
import { CompileError } from '../../src/core/probes/compiler';
import { DefinitionRejectedError, TraceSession } from '../../src/core/session/traceSession';
import { knownCaps } from '../../src/core/session/targetCaps';
import { LocalTarget } from '../../src/core/target/local';
import type { Hit } from '../../src/core/tracefs/hitParser';
import { fixtureOrSkip, runFixture } from '../helpers/fixtures';
import { requireTracefs } from '../helpers/tracefs';
import { leftovers } from './agentHarness';

const definitions = (group: string) =>
  readFileSync('/sys/kernel/tracing/uprobe_events', 'utf8')
    .split('\n')
    .filter((l) => /^[pr]:/.test(l) && l.slice(2).startsWith(`${group}/`));

/** Polls (bounded) until `cond` holds; the stream lags the program by a few milliseconds. */
async function until(cond: () => boolean, what: () => string): Promise<void> {
  for (let i = 0; i < 200 && !cond(); i++) await new Promise((r) => setTimeout(r, 50));
  assert.ok(cond(), what());
}

test('edits apply in place: add (refusals touch nothing), remove one, disable/enable one; the first probe never resets', async (t) => {
  if (!requireTracefs(t)) return;
  const f = await fixtureOrSkip(t, 'calls-O0');
  if (!f) return;
  const dir = mkdtempSync(join(tmpdir(), 'pl-liveedit-session-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  const bin = join(dir, 'calls');
  copyFileSync(f.path, bin);
  const { index } = await loadIndex(bin, { noCache: true, debugDirs: f.debugDirs });
  const target = new LocalTarget();
  const hits: Hit[] = [];
  const session = await TraceSession.start({ target, index, specs: ['add_ints a b'], keepGoing: true, onHit: (h) => hits.push(h) });
  const group = session.probes[0].group;
  const count = (probe: string, kind = 'entry') => hits.filter((h) => h.probe === probe && h.kind === kind).length;
  try {
    // The target's kernel is known now: later sessions and edits compile without asking an agent.
    assert.ok(knownCaps(target)?.has('uprobe_events'));
    await runFixture({ ...f, path: bin }, ['3']);
    await until(
      () => count('add_ints') === 3,
      () => `add_ints hits ${count('add_ints')}`,
    );
    const first = definitions(group);
    assert.equal(first.length, 1);

    const r = await session.add(['mix_unsigned u', 'no_such_function x', 'add_ints%return $retval', 'sum_array bad=%zzz']);
    assert.deepEqual(
      r.added.map((p) => p.spec),
      ['mix_unsigned u', 'add_ints%return $retval'],
    );
    assert.deepEqual(
      r.refused.map((x) => [x.spec, x.error.constructor]),
      [
        ['no_such_function x', CompileError],
        ['sum_array bad=%zzz', DefinitionRejectedError],
      ],
    );
    assert.match(r.refused[1].error.message, /rejected probe sum_array at 'bad=%zzz:x64'.*Invalid register/);
    // Nothing else was touched: the first definition is still there as it was, the refused ones are absent.
    const now = definitions(group);
    assert.equal(now[0], first[0]);
    assert.equal(now.length, 3);
    assert.ok(!now.some((l) => /\/sum_array /.test(l)));

    await runFixture({ ...f, path: bin }, ['2']);
    await until(
      () => count('add_ints') === 5 && count('mix_unsigned') === 2 && count('add_ints_return', 'return') === 2,
      () => JSON.stringify(session.aggregates.snapshot().hits),
    );
    // The return added later pairs with the entry armed before it.
    assert.equal(session.aggregates.snapshot().latency.add_ints?.count, 2);

    await session.remove('mix_unsigned u');
    assert.ok(!definitions(group).some((l) => /\/mix_unsigned /.test(l)), 'the removed event is gone from uprobe_events');
    assert.equal(definitions(group).length, 2);
    await runFixture({ ...f, path: bin }, ['1']);
    await until(
      () => count('add_ints') === 6,
      () => `add_ints hits ${count('add_ints')}`,
    );
    assert.equal(count('mix_unsigned'), 2);

    await session.setEnabled('add_ints a b', false);
    assert.equal(session.isEnabled('add_ints a b'), false);
    await runFixture({ ...f, path: bin }, ['1']);
    await until(
      () => count('add_ints_return', 'return') === 4,
      () => `returns ${count('add_ints_return', 'return')}`,
    );
    await session.setEnabled('add_ints a b', true);
    await runFixture({ ...f, path: bin }, ['1']);
    await until(
      () => count('add_ints') === 7,
      () => `add_ints hits ${count('add_ints')}`,
    );
  } catch (e) {
    await session.stop();
    throw e;
  }
  {
    const sum = await session.stop();
    assert.equal(sum.hits.add_ints, 7, 'counts went on through every edit (no reset)');
    assert.equal(sum.kernelHits.add_ints, 7);
    assert.equal(sum.kernelHits.mix_unsigned, 2, "the removed probe's kernel count, read before its removal");
    assert.equal(sum.kernelHits.add_ints_return, 5);
    assert.equal(sum.lost, 0);
    assert.equal(sum.loss?.unaccounted, 0, 'received + lost = the kernel count');
    await session.exited;
    assert.deepEqual(leftovers(group), []);
  }
});

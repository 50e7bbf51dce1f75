// Code whose first instruction carries a LOCK prefix (an atomic increment: a reference count, Arc::clone, a profile
// counter) is refused a uprobe by Linux's x86 uprobes — silently, when the probe is installed in the process, so a
// probe defined there never fires. Such an entry, out of line or inlined, is armed at the next instruction only it
// leads to, and counts every call there: traced for real, the hits equal the program's own counts, and an argument
// read there is the one the caller passed. A line probe there moves the same way; `FUNC+OFFS` is refused.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { basename } from 'node:path';
import { loadIndex } from '../../src/core/index/load';
import { compileProbes } from '../../src/core/probes/compiler';
import { TraceSession } from '../../src/core/session/traceSession';
import { LocalTarget } from '../../src/core/target/local';
import type { Hit } from '../../src/shared/hit';
import { fixtureOrSkip, markerLine, parseFixtureOutput } from '../helpers/fixtures';
import { requireTracefs } from '../helpers/tracefs';
import { privateCopy, sleep } from './engine-harness';

test('entries that begin with a LOCK-prefixed instruction, out of line and inlined, count every call', async (t) => {
  if (!requireTracefs(t)) return;
  const f = await fixtureOrSkip(t, 'lockfirst');
  if (!f) return;
  const bin = privateCopy(t, f.path);
  const { index } = await loadIndex(bin, { noCache: true });
  const received: Hit[] = [];
  const line = markerLine(f, 'hold');
  const lineSpec = `${basename(line.file)}:${line.line}`;
  // A point that names the refused instruction itself is refused, with the reason and the place that would do.
  await assert.rejects(
    compileProbes(['take+0'], index, {}),
    /refuses a uprobe on the instruction at 0x[0-9a-f]+ \(a LOCK or segment prefix\); 0x[0-9a-f]+ after it/,
  );
  const session = await TraceSession.start({
    target: new LocalTarget(),
    index,
    specs: ['bump', 'take x', 'hold', lineSpec],
    onHit: (h) => received.push(h),
  });
  let out: ReturnType<typeof parseFixtureOutput>;
  try {
    // Each probe sits after the locked instruction it stands for, and none is a lower bound: each counts exactly.
    assert.deepEqual(
      session.probes.filter((p) => p.lowerBound).map((p) => p.spec),
      [],
    );
    // The line probe says where it went instead.
    assert.match(session.probes.find((p) => p.spec === lineSpec)!.warnings.join('\n'), /armed at 0x[0-9a-f]+, after the instruction at/);
    out = parseFixtureOutput(execFileSync(bin, ['40'], { encoding: 'utf8' }));
    for (let last = -1; received.length !== last;) {
      last = received.length;
      await sleep(300);
    }
  } finally {
    await session.stop();
  }
  const by = new Map<string, Hit[]>();
  for (const h of received) by.set(h.probe, [...(by.get(h.probe) ?? []), h]);
  assert.equal(received.filter((h) => h.kind === 'line').length, out.counts.get('hold'), 'the line ran once per take');
  for (const fn of ['bump', 'take', 'hold'])
    assert.equal(by.get(fn)?.length ?? 0, out.counts.get(fn), `${fn}: hits equal the program's calls (${out.counts.get(fn)})`);
  assert.deepEqual(
    (by.get('take') ?? []).map((h) => Number(h.args.x)),
    Array.from({ length: 40 }, (_, i) => i),
    "take's argument, read after the lock, is each call's",
  );
});

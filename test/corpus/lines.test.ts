// Line probes on real programs: for a sample of source lines of each corpus binary (half of them lines whose
// code is in an inlined copy), the addresses ProbeLens arms are compared with `perf probe -D FILE:LINE`; every
// difference must fall in a category docs/real-programs.md explains (perf refusing a line, perf arming every row of a
// block), and the lines perf places must mostly agree exactly.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { loadIndex } from '../../src/core/index/load';
import { corpusProjectOrSkip, type CorpusName } from '../helpers/corpus';
import { compareLine, sampleLines, type LineReason } from '../helpers/lineParity';
import { elfFacts } from '../helpers/parity';

const BINARIES: Array<[CorpusName, string]> = [
  ['redis', 'redis-server'],
  ['postgres', 'postgres'],
  ['ninja', 'ninja'],
];

/** Differences perf probe 6.1's own behaviour explains (see docs/real-programs.md's line-probe table). */
const EXPLAINED = new Set<LineReason>([
  'perf-refuses-shared-address',
  'perf-refuses-no-symbol',
  'perf-refuses-event-name',
  'perf-refuses-no-scope',
  'perf-declaration-entry',
  'perf-per-row',
  'perf-call-entry-in-block',
]);

for (const [project, name] of BINARIES) {
  test(`${project} ${name}: a sample of line probes is placed as perf probe -D places them, differences categorised`, async (t) => {
    const p = await corpusProjectOrSkip(t, project);
    if (!p) return;
    const bin = p.binaries[name];
    const [{ index }, facts] = await Promise.all([loadIndex(bin), elfFacts(bin)]);
    const sample = sampleLines(index, p.srcDir, 60);
    assert.ok(sample.length >= 50, `sampled ${sample.length} lines`);
    assert.ok(sample.filter((s) => s.inlined).length >= 20, 'lines inside inlined functions are sampled');
    const unexplained: string[] = [];
    const tally: Record<string, number> = {};
    let compared = 0;
    let agree = 0;
    let inlinedAgree = 0;
    for (const s of sample) {
      const c = await compareLine(bin, facts, index, p.srcDir, s.file, s.line, s.inlined);
      assert.ok(c.ours.length > 0, `${c.spec}: a sampled line has code`);
      if (c.perf) compared++;
      if (c.differences.length === 0) {
        agree++;
        if (s.inlined) inlinedAgree++;
      }
      for (const d of c.differences) {
        tally[d.reason] = (tally[d.reason] ?? 0) + 1;
        if (!EXPLAINED.has(d.reason))
          unexplained.push(
            `${c.spec}: ${d.side} ${d.address === undefined ? c.perfError : `0x${d.address.toString(16)} in ${d.symbol}`} (${d.reason})`,
          );
      }
    }
    t.diagnostic(
      `${name}: ${sample.length} lines, perf placed ${compared}, ${agree} exactly alike (${inlinedAgree} of them inlined lines); ${JSON.stringify(tally)}`,
    );
    assert.deepEqual(unexplained, [], 'every difference has a known reason');
    assert.ok(compared >= 20, `perf placed ${compared} lines`);
    assert.ok(agree >= compared * 0.8, `${agree} of ${compared} lines placed exactly as perf does`);
    assert.ok(inlinedAgree > 0, 'a line of an inlined function is placed exactly as perf places it');
  });
}

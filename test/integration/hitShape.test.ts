// One hit, one shape: the hits of one real session, written by the CLI's NDJSON path (`trace --json`) and by the
// live panel's JSON export path (feed → column batches → history → export), are the same objects, byte for byte.
import { test, type TestContext } from 'node:test';
import assert from 'node:assert/strict';
import { copyFileSync, mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { loadIndex } from '../../src/core/index/load';
import { TraceSession } from '../../src/core/session/traceSession';
import { LocalTarget } from '../../src/core/target/local';
import type { Hit } from '../../src/shared/hit';
import { hitToJsonLine } from '../../src/shared/hitJson';
import type { PanelStats } from '../../src/shared/protocol';
import { PanelFeed } from '../../src/vscode/panel/panelFeed';
import { fixtureOrSkip, runFixture, type FixtureName, type FixtureOutput } from '../helpers/fixtures';
import { requireTracefs } from '../helpers/tracefs';
import { plainData } from '../helpers/plain';

interface Both {
  /** what `probelens trace --json` printed per hit */
  ndjson: string[];
  /** the panel's JSON export of the same hits */
  exported: string;
  /** the panel's statistics as a freshly opened panel receives them */
  stats: PanelStats;
  hits: Hit[];
  out: FixtureOutput;
}

/**
 * Arms `specs` on a private copy of the fixture, runs it once, hands every hit to both writers, and stops once
 * `arrived(hits, out)` says every hit the program's own report implies has come in (bounded).
 */
async function traceBoth(
  t: TestContext,
  name: FixtureName,
  specs: string[],
  arrived: (hits: Hit[], out: FixtureOutput) => boolean,
  args: string[] = [],
): Promise<Both | undefined> {
  if (!requireTracefs(t)) return undefined;
  const f = await fixtureOrSkip(t, name);
  if (!f) return undefined;
  const bin = join(mkdtempSync(join(tmpdir(), 'probelens-hitshape-')), f.path.replace(/^.*\//, ''));
  copyFileSync(f.path, bin);
  const { index } = await loadIndex(bin, { noCache: true, debugDirs: f.debugDirs });
  const ndjson: string[] = [];
  const hits: Hit[] = [];
  // The extension's panel host posts each session hit to the feed as it arrives; the CLI writes each as a line.
  const feed = new PanelFeed({ version: 'test', flushIntervalMs: 1 });
  const session = await TraceSession.start({
    target: new LocalTarget(),
    index,
    specs,
    onHit: (h) => {
      hits.push(h);
      ndjson.push(hitToJsonLine(h));
      feed.post([h]);
    },
  });
  // The panel's figures are the session's aggregates (no hit fires before the fixture runs).
  feed.watch(session.aggregates);
  let out: FixtureOutput;
  try {
    out = await runFixture({ ...f, path: bin }, args);
    // The stream lags the program (more so on a loaded machine): wait for the hits, not for a time.
    const deadline = Date.now() + 60_000;
    while (!arrived(hits, out) && Date.now() < deadline) await new Promise((r) => setTimeout(r, 100));
  } finally {
    await session.stop();
  }
  const exported = feed.exportText('json').text;
  let stats: PanelStats | undefined;
  feed.attach((m) => {
    if (m.type === 'init') stats = m.stats;
  });
  feed.dispose();
  return { ndjson, exported, stats: stats!, hits, out: out! };
}

function assertSameHits(run: Both): { cli: Record<string, unknown>[]; panel: Record<string, unknown>[] } {
  for (const line of run.ndjson) assert.equal(line.indexOf('\n'), line.length - 1, 'one NDJSON line per hit');
  const cli = run.ndjson.map((l) => JSON.parse(l) as Record<string, unknown>);
  const panel = JSON.parse(run.exported) as Record<string, unknown>[];
  assert.ok(cli.length > 0, 'the session produced hits');
  assert.equal(panel.length, cli.length, 'the export holds every hit the CLI printed');
  cli.forEach((o, i) => assert.deepEqual(panel[i], o, `hit ${i}: the same object`));
  // Not only equal after parsing: the export writes each hit as the very line the CLI printed.
  const exportedLines = run.exported.split('\n').slice(1, -2);
  exportedLines.forEach((l, i) => assert.equal(l.replace(/,$/, ''), run.ndjson[i].trimEnd(), `hit ${i}: the same text`));
  return { cli, panel };
}

test('C: each hit in the CLI NDJSON and in the panel JSON export of one session is identical', async (t) => {
  const run = await traceBoth(
    t,
    'calls-O0',
    [
      'add_ints a b',
      'add_ints%return $retval',
      'mix_unsigned u h c',
      'greet name greeting',
      'account_deposit acct acct->id acct->balance acct->owner acct->flags amount',
      // `a` read as an address faults (null); four bytes of the stack are an array value.
      'add_ints fault=+0(%di):string top=+0(%sp):u8[4]',
    ],
    (hits, out) => {
      const calls = (fn: string) => out.calls.filter((c) => c.func === fn).length;
      const got = (probe: string) => hits.filter((h) => h.probe === probe).length;
      const addInts = hits.filter((h) => h.event.startsWith('add_ints') && h.kind === 'entry').length;
      return (
        addInts >= 2 * calls('add_ints') &&
        got('add_ints_return') >= calls('add_ints') &&
        got('mix_unsigned') >= calls('mix_unsigned') &&
        got('greet') >= calls('greet') &&
        got('account_deposit') >= calls('account_deposit')
      );
    },
    ['2'],
  );
  if (!run) return;
  const { cli } = assertSameHits(run);
  const calls = run.out.calls.filter((c) => c.func === 'add_ints');
  const entries = cli.filter((o) => o.probe === 'add_ints');
  const returns = cli.filter((o) => o.probe === 'add_ints_return');
  assert.equal(entries.length, calls.length, 'one entry hit per call');
  assert.equal(returns.length, calls.length, 'one return hit per call');
  for (const r of returns) assert.equal(typeof r.latencyNs, 'number', 'a paired return carries its latency in both');
  const raw = cli.filter((o) => 'fault' in (o.args as Record<string, unknown>));
  assert.equal(raw.length, calls.length, 'the raw-fetch probe hit once per call');
  for (const o of raw) {
    const args = o.args as Record<string, unknown>;
    assert.equal(args.fault, null, 'a faulted fetch is null in both, not the text "null"');
    assert.ok(Array.isArray(args.top) && args.top.length === 4, 'an array fetch is an array in both, not its text');
  }
  assert.ok(
    cli.some((o) => o.probe === 'greet' && typeof (o.args as Record<string, unknown>).name === 'string'),
    'string arguments are in the comparison',
  );
  for (const o of cli) {
    assert.deepEqual(plainData(Object.keys(o).slice(0, 9)), ['host', 'probe', 'kind', 'pid', 'tid', 'comm', 'cpu', 'ts', 'args']);
    assert.equal(o.pid, run.out.pid, 'hits of the fixture process only');
  }
});

test('Go: returns paired per goroutine carry their latency to the panel as to the CLI', async (t) => {
  const run = await traceBoth(t, 'go', ['main.work worker value', 'main.work%return $retval'], (hits, out) => {
    const works = out.calls.filter((c) => c.func === 'main.work').length;
    return hits.filter((h) => h.probe.startsWith('main_work_return')).length >= works;
  });
  if (!run) return;
  const { cli } = assertSameHits(run);
  const works = run.out.calls.filter((c) => c.func === 'main.work');
  const returns = cli.filter((o) => String(o.probe).startsWith('main_work_return'));
  assert.ok(works.length > 0, 'the program called main.work');
  assert.equal(returns.length, works.length, 'one return hit per call');
  for (const r of returns) assert.equal(typeof r.latencyNs, 'number', `${String(r.probe)} at ${String(r.ts)} has its latency`);
  // The panel's latency histograms count the same pairs (under the entry's probe, as the CLI summary does).
  const counted = run.stats.latency.main_work?.count ?? 0;
  assert.equal(counted, works.length, "the panel's histogram has every goroutine's latency");
});

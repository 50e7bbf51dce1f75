// Names from a binary and a target are data: functions named `__proto__`, `constructor`, `toString`, `valueOf` and
// `hasOwnProperty`, an argument named `__proto__` and the comm `__proto__`, traced for real on this machine's
// tracefs, then read by every surface: the CLI's text and JSON summaries (with `--by` on the comm and on the
// argument), the editor's lens and hover, the live panel's figures and the exports.
import { test, type TestContext } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { loadIndex } from '../../src/core/index/load';
import { TraceSession } from '../../src/core/session/traceSession';
import { hitsToCsv, hitsToJson } from '../../src/core/session/export';
import { LocalTarget } from '../../src/core/target/local';
import type { Hit } from '../../src/shared/hit';
import type { PanelStats } from '../../src/shared/protocol';
import { statsForSpec, type SessionView } from '../../src/vscode/model/stats';
import { decorationText, hoverMarkdown } from '../../src/vscode/model/format';
import { PanelFeed } from '../../src/vscode/panel/panelFeed';
import { fixtureOrSkip, runFixture } from '../helpers/fixtures';
import { requireTracefs } from '../helpers/tracefs';
import { isolatedEnv, parseJsonOutput, privateCopy, sleep, startCli, waitForGroups } from './engine-harness';

const NAMES = ['constructor', 'toString', '__proto__', 'valueOf', 'hasOwnProperty'] as const;
/** The k-th function runs k times an iteration (protonames.c). */
const callsOf = (name: (typeof NAMES)[number], iterations: number) => (NAMES.indexOf(name) + 1) * iterations;
const SPECS = ['constructor __proto__', 'toString', '__proto__ __proto__', 'valueOf', 'hasOwnProperty', 'constructor%return'];

async function protonames(t: TestContext) {
  const tracefs = requireTracefs(t);
  if (!tracefs) return undefined;
  const f = await fixtureOrSkip(t, 'protonames');
  return f && { f, bin: privateCopy(t, f.path), tracefs };
}

/** Resolves once a session's events on `bin` are all enabled in its instance (`--json` prints no "tracing" line). */
async function armed(tracefs: string, bin: string, ms: number): Promise<void> {
  const until = Date.now() + ms;
  for (;;) {
    const [g] = await waitForGroups(bin, Math.max(0, until - Date.now()));
    const enable = g && join(tracefs, 'instances', g, 'events', g, 'enable');
    if (enable && existsSync(enable) && readFileSync(enable, 'utf8').trim() === '1') return;
    if (Date.now() > until) throw new Error(`${bin}'s probes not enabled within ${ms} ms`);
    await sleep(50);
  }
}

test('the CLI traces functions, an argument and a comm named as JavaScript members: text and JSON, --by both', async (t) => {
  const got = await protonames(t);
  if (!got) return;
  const { bin, tracefs } = got;
  const iterations = 3;
  for (const json of [false, true]) {
    const cli = startCli(t, ['trace', bin, ...SPECS, '--by', 'comm', '--by', '__proto__', ...(json ? ['--json'] : [])], isolatedEnv(t));
    await armed(tracefs, bin, 120_000);
    execFileSync(bin, [String(iterations)], { stdio: 'ignore' });
    await sleep(500);
    cli.child.kill('SIGINT');
    const { code } = await cli.exit;
    assert.equal(code, 0, cli.stderr());
    assert.doesNotMatch(cli.stderr(), /is not a function|TypeError/);
    if (!json) {
      const out = cli.stdout() + cli.stderr();
      for (const n of NAMES)
        assert.match(out, new RegExp(`^${n}: ${callsOf(n, iterations)} hits \\(kernel counted ${callsOf(n, iterations)}\\)`, 'm'), out);
      assert.match(out, /^constructor_return: 3 hits/m);
      assert.match(out, /^__proto__: 9 hits.*\n {2}by comm:\n {4}__proto__ 9 hits$/m, 'the comm is a key value like any other');
      continue;
    }
    const { hits, summary } = parseJsonOutput(cli.stdout());
    assert.ok(summary);
    const s = summary as unknown as {
      hits: Record<string, number>;
      kernelHits: Record<string, number>;
      sites: Record<string, unknown[]>;
      keys: Record<string, Record<string, Array<{ value: string; hits: number }>>>;
    };
    const expected = Object.fromEntries([
      ...NAMES.map((n) => [n, callsOf(n, iterations)] as const),
      ['constructor_return', iterations] as const,
    ]);
    assert.deepEqual(Object.entries(s.hits).sort(), Object.entries(expected).sort());
    assert.deepEqual(Object.entries(s.kernelHits).sort(), Object.entries(expected).sort());
    assert.deepEqual(Object.keys(s.sites).sort(), Object.keys(expected).sort());
    // JSON.parse makes every key an own property, `__proto__` too: read them as entries.
    const rows = (probe: string, key: string) => new Map(Object.entries(new Map(Object.entries(s.keys)).get(probe) ?? {})).get(key);
    assert.deepEqual(rows('__proto__', 'comm'), [{ value: '__proto__', hits: 9 }]);
    // Each iteration calls __proto__ three times with the iteration as its argument.
    assert.deepEqual(
      rows('__proto__', '__proto__'),
      [0, 1, 2].map((value) => ({ value, hits: 3 })),
    );
    assert.deepEqual(
      rows('constructor', '__proto__'),
      [0, 1, 2].map((value) => ({ value, hits: 1 })),
    );
    const protoHits = hits.filter((h) => h.probe === '__proto__');
    assert.equal(protoHits.length, 9);
    for (const h of protoHits) {
      assert.equal(h.comm, '__proto__');
      assert.deepEqual(Object.keys(h.args as object), ['__proto__']);
    }
  }
});

test('the editor, the panel and the exports show the same names and counts as the session counted', async (t) => {
  const got = await protonames(t);
  if (!got) return;
  const { f, bin } = got;
  const { index } = await loadIndex(bin, { noCache: true });
  const hits: Hit[] = [];
  const feed = new PanelFeed({ version: 't', flushIntervalMs: 60_000 });
  const session = await TraceSession.start({
    target: new LocalTarget(),
    index,
    specs: SPECS,
    onHit: (h) => (hits.push(h), feed.post([h])),
  });
  feed.watch(session.aggregates);
  const iterations = 2;
  try {
    const out = await runFixture({ ...f, path: bin }, [String(iterations)]);
    for (const n of NAMES) assert.equal(out.counts.get(n), callsOf(n, iterations), `the program's own count of ${n}`);
  } finally {
    await session.stop();
  }
  // The editor reads the run's view as src/vscode/run.ts builds it.
  const view: SessionView = {
    host: 'local',
    events: session.probes.map((p) => ({ event: p.event, probe: session.probeName(p), spec: p.spec, site: p.site })),
    snapshot: session.aggregates.snapshot(),
  };
  for (const n of NAMES) {
    const spec = SPECS.find((s) => s === n || s.startsWith(`${n} `))!;
    const st = statsForSpec(spec, [view]);
    assert.equal(st.hits, callsOf(n, iterations), `lens count of ${spec}`);
    assert.match(decorationText(st, 'armed'), new RegExp(`\\b${callsOf(n, iterations)} hits\\b`));
    assert.match(hoverMarkdown(spec, st, 'armed'), new RegExp(`\\b${callsOf(n, iterations)}\\b`));
  }
  const proto = statsForSpec('__proto__ __proto__', [view]);
  assert.deepEqual(Object.keys(proto.lastHits.at(-1)!.values), ['__proto__']);
  assert.equal(proto.lastHits.at(-1)!.values.__proto__, iterations - 1, 'the last value of the argument named __proto__');

  let panel: PanelStats | undefined;
  feed.attach((m) => {
    if (m.type === 'init') panel = m.stats;
  });
  feed.dispose();
  assert.ok(panel);
  for (const n of NAMES) assert.equal(panel.counts[n], callsOf(n, iterations), `panel count of ${n}`);
  assert.equal(panel.counts.constructor_return, iterations);
  assert.deepEqual(Object.keys(panel.sites).sort(), [...NAMES, 'constructor_return'].sort());

  const own = hits.filter((h) => h.probe === '__proto__');
  const json = JSON.parse(hitsToJson(own)) as Array<{ probe: string; comm: string; args: Record<string, number> }>;
  assert.deepEqual(
    json.map((h) => [h.probe, h.comm, Object.keys(h.args)]),
    own.map(() => ['__proto__', '__proto__', ['__proto__']]),
  );
  const csv = hitsToCsv(own).split('\r\n');
  assert.match(csv[0], /,args\.__proto__$/);
  assert.equal(csv.filter((l) => /,__proto__,.*,__proto__,/.test(l)).length, own.length, csv.join('\n'));
});

// The live panel's webview in real Chromium: the real bundle, the real page and CSP, a fake VS Code host.
import { describe, test, type TestContext } from 'node:test';
import assert from 'node:assert/strict';
import type { PanelPage } from '../../../bench/panelPage';
import { usePanelBrowser } from '../../helpers/panelBrowser';
import { Aggregates } from '../../../src/core/session/aggregates';
import { PanelFeed } from '../../../src/vscode/panel/panelFeed';
import type { Hit } from '../../../src/shared/hit';
import { emptyStats, encodeHits, type PanelStats, type ToWebview } from '../../../src/shared/protocol';

function hits(from: number, count: number): Hit[] {
  return Array.from({ length: count }, (_, k): Hit => {
    const i = from + k;
    const ret = i % 4 === 3;
    const args: Record<string, number> = ret ? {} : { a: i, b: -i };
    return {
      host: i % 2 ? 'web2' : 'web1',
      probe: ret ? 'sub' : 'add',
      kind: ret ? 'return' : 'entry',
      pid: 500,
      tid: 500 + (i % 3),
      comm: 'calc',
      cpu: i % 2,
      ts: 1000 + i / 1000,
      args,
      event: ret ? 'sub' : 'add',
      ...(ret ? { retval: '18446744073709551615', latencyNs: 1500 } : {}),
    };
  });
}

function init(over: Partial<Extract<ToWebview, { type: 'init' }>> = {}): ToWebview {
  return {
    type: 'init',
    version: '0.1.0',
    protocol: 1,
    historyCapacity: 100_000,
    snapshotRows: 0,
    probes: [
      { name: 'add', file: '/src/calc.c', line: 12 },
      { name: 'sub', file: '/src/calc.c', line: 20 },
    ],
    stats: emptyStats(),
    session: { state: 'tracing' },
    ...over,
  };
}

const stats = (over: Partial<PanelStats>): ToWebview => ({ type: 'stats', stats: { ...emptyStats(), ...over } });

/** Lets the webview draw: while following the tail it redraws the table at most every 30 ms (waits 120). */
async function frames(p: PanelPage): Promise<void> {
  await p.page.evaluate(() => new Promise((r) => setTimeout(() => requestAnimationFrame(() => requestAnimationFrame(r)), 120)));
}

/** The rows in the DOM that are displayed, top to bottom, as their cell texts. */
async function domRows(p: PanelPage): Promise<string[][]> {
  return p.page.evaluate(() =>
    [...document.querySelectorAll<HTMLElement>('.pl-spacer > .pl-row')]
      .filter((r) => r.style.display !== 'none')
      .sort((a, b) => Number(a.getAttribute('aria-rowindex')) - Number(b.getAttribute('aria-rowindex')))
      .map((r) => [...r.children].map((c) => c.textContent ?? '')),
  );
}

async function visibleRows(p: PanelPage): Promise<string[][]> {
  return p.page.evaluate(() => {
    const vp = document.querySelector('.pl-viewport') as HTMLElement;
    const box = vp.getBoundingClientRect();
    return [...document.querySelectorAll<HTMLElement>('.pl-spacer > .pl-row')]
      .filter((r) => r.style.display !== 'none')
      .filter((r) => {
        const b = r.getBoundingClientRect();
        return b.top >= box.top - 1 && b.bottom <= box.bottom + 1;
      })
      .sort((a, b) => a.getBoundingClientRect().top - b.getBoundingClientRect().top)
      .map((r) => [...r.children].map((c) => c.textContent ?? ''));
  });
}

const selectedRow = (p: PanelPage): Promise<string[] | null> =>
  p.page.evaluate(() => {
    const r = document.querySelector('.pl-row.pl-selected');
    return r ? [...r.children].map((c) => c.textContent ?? '') : null;
  });

const text = (p: PanelPage, sel: string): Promise<string> =>
  p.page.evaluate((s) => (document.querySelector(s) as HTMLElement).textContent ?? '', sel);
const hidden = (p: PanelPage, sel: string): Promise<boolean> =>
  p.page.evaluate((s) => (document.querySelector(s) as HTMLElement).hidden, sel);

describe('live panel webview in Chromium', () => {
  const panel = usePanelBrowser();
  const open = (t: TestContext, state?: unknown): Promise<PanelPage | null> => panel.open(t, { state });

  test('loads under the nonce CSP with no violations, says ready, and registers the toolkit controls', async (t) => {
    const p = await open(t);
    if (!p) return;
    await p.page.waitForFunction(() => customElements.get('vscode-button') !== undefined);
    assert.deepEqual(await p.posted(), [{ type: 'ready' }]);
    await p.send(init());
    await frames(p);
    const ui = await p.page.evaluate(() => ({
      buttons: [...document.querySelectorAll('vscode-button')].map((b) => [b.textContent, b.shadowRoot !== null]),
      field: document.querySelector('vscode-text-field')?.shadowRoot?.querySelector('input') !== null,
      version: document.body.dataset.version,
    }));
    assert.deepEqual(ui.buttons, [
      ['Pause', true],
      ['Clear', true],
      ['Export JSON', true],
      ['Export CSV', true],
    ]);
    assert.equal(ui.field, true);
    assert.equal(ui.version, '0.1.0');
    assert.deepEqual(await p.cspViolations(), []);
    assert.deepEqual(p.errors, []);
  });

  test('says how many hits batches it drew once a frame has run with them, and nothing while none came (flow control)', async (t) => {
    const p = await open(t);
    if (!p) return;
    await p.send(init());
    await frames(p);
    const drawn = async () => (await p.posted()).filter((m) => (m as { type: string }).type === 'drawn');
    assert.deepEqual(await drawn(), [], 'no hits, nothing drawn');
    await p.send({ type: 'hits', batch: encodeHits(hits(0, 10)) }, { type: 'hits', batch: encodeHits(hits(10, 10)) });
    await frames(p);
    const one = await drawn();
    assert.equal(
      one.reduce((n, m) => n + (m as { batches: number }).batches, 0),
      2,
      'both batches said drawn',
    );
    await p.send(stats({ lost: 3 }));
    await frames(p);
    assert.equal((await drawn()).length, one.length, 'a stats message is not a batch');
    await p.send({ type: 'hits', batch: encodeHits(hits(20, 5)) });
    await frames(p);
    assert.deepEqual((await drawn()).at(-1), { type: 'drawn', batches: 1 });
  });

  test('10,000 hits: only a window of rows is in the DOM, the tail is followed, values are shown as sent', async (t) => {
    const p = await open(t);
    if (!p) return;
    await p.send(init(), { type: 'hits', batch: encodeHits(hits(0, 5000)) }, { type: 'hits', batch: encodeHits(hits(5000, 5000)) });
    await frames(p);
    const dom = await domRows(p);
    assert.ok(dom.length > 10 && dom.length < 80, `DOM holds ${dom.length} rows`);
    const shown = await visibleRows(p);
    const last = shown.at(-1) as string[];
    assert.deepEqual(last, ['1009.999000', 'web2', '500/500', 'calc', 'sub', '', '18446744073709551615', '1.5µs']);
    const entry = shown.at(-2) as string[];
    assert.deepEqual(entry.slice(4, 6), ['add', 'a=9998 b=-9998']);
    assert.match(await text(p, '#pl-status'), /tracing · 10,000 rows/);
    assert.equal(await hidden(p, '#pl-lost'), true);
    assert.equal(await hidden(p, '#pl-dropped'), true);
    assert.deepEqual(await p.cspViolations(), []);
    assert.deepEqual(p.errors, []);
  });

  test('a probe counted in the kernel is marked "in the kernel" in Probes, and the table says it has no hit rows', async (t) => {
    const p = await open(t);
    if (!p) return;
    const probes = [
      { name: 'add', file: '/src/calc.c', line: 12 },
      { name: 'hot', file: '/src/calc.c', line: 30, aggregated: true as const },
    ];
    await p.send(init({ probes }), stats({ counts: { add: 3, hot: 250_000 } }), { type: 'hits', batch: encodeHits(hits(0, 3)) });
    await frames(p);
    const rows = await p.page.evaluate(() =>
      [...document.querySelectorAll<HTMLElement>('.pl-counts li')].map((li) => [
        li.dataset.probe,
        li.querySelector('.pl-probe-path')?.textContent ?? '',
        li.textContent,
      ]),
    );
    assert.deepEqual(rows, [
      ['add', '', 'add3'],
      ['hot', 'in the kernel', 'hotin the kernel250,000'],
    ]);
    assert.equal(await hidden(p, '#pl-aggregated'), false);
    assert.equal(await text(p, '#pl-aggregated'), 'hot is aggregated in the kernel: counts and latency are in Probes, no per-hit rows');
    // Streamed again: the mark and the note go.
    await p.send({ type: 'probes', probes: [probes[0], { name: 'hot', file: '/src/calc.c', line: 30 }] });
    await frames(p);
    assert.equal(await hidden(p, '#pl-aggregated'), true);
    assert.equal(await p.page.evaluate(() => document.querySelectorAll('.pl-probe-path').length), 0);
    assert.deepEqual(p.errors, []);
  });

  test('following the tail, a new row is drawn within 60 ms of its batch, however fast batches come', async (t) => {
    const p = await panel.open(t, { fakeClock: true });
    if (!p) return;
    // Page time stands still but for runFor.
    await p.page.clock.pauseAt(Date.now() + 1000);
    const last = async () => Number((await visibleRows(p)).at(-1)?.[0]);
    await p.send(init(), { type: 'hits', batch: encodeHits(hits(0, 1000)) });
    await p.page.clock.runFor(200);
    assert.equal(await last(), 1000.999);
    // A batch every 10 ms (page time, frames every 16 ms): by each batch, the one of 60 ms before it is drawn.
    for (let i = 1; i <= 20; i++) {
      await p.send({ type: 'hits', batch: encodeHits(hits(1000 + i, 1)) });
      await p.page.clock.runFor(10);
      if (i > 6) assert.ok((await last()) >= 1000 + (1000 + i - 6) / 1000 - 1e-9, `after batch ${i}: ${await last()} drawn`);
    }
    assert.deepEqual(p.errors, []);
  });

  test('following a tail of thousands of rows a redraw, the table redraws at most every 100 ms', async (t) => {
    const p = await panel.open(t, { fakeClock: true });
    if (!p) return;
    await p.page.clock.pauseAt(Date.now() + 1000);
    const last = async () => Number((await visibleRows(p)).at(-1)?.[0]);
    await p.send(init(), { type: 'hits', batch: encodeHits(hits(0, 1000)) });
    await p.page.clock.runFor(200);
    // After a quiet spell a batch is drawn at once.
    await p.send({ type: 'hits', batch: encodeHits(hits(1000, 3000)) });
    await p.page.clock.runFor(20);
    assert.equal(await last(), 1003.999);
    // 3,000 rows every 10 ms: not drawn 60 ms on, drawn by 120 ms.
    for (let i = 1; i <= 5; i++) {
      await p.send({ type: 'hits', batch: encodeHits(hits(1000 + 3000 * (i + 1), 3000)) });
      await p.page.clock.runFor(10);
    }
    await p.page.clock.runFor(10);
    assert.equal(await last(), 1003.999, 'still the redraw of 60 ms ago');
    await p.page.clock.runFor(60);
    assert.equal(await last(), 1021.999);
    assert.deepEqual(p.errors, []);
  });

  test('keyboard: Home, arrows, PageDown, End move the selection; Enter and click open the source', async (t) => {
    const p = await open(t);
    if (!p) return;
    await p.send(init(), { type: 'hits', batch: encodeHits(hits(0, 1000)) });
    await frames(p);
    await p.page.focus('.pl-viewport');
    await p.page.keyboard.press('Home');
    await frames(p);
    assert.equal((await selectedRow(p))?.[0], '1000.000000');
    assert.equal((await visibleRows(p))[0][0], '1000.000000', 'Home scrolled to the top');
    await p.page.keyboard.press('ArrowDown');
    await p.page.keyboard.press('ArrowDown');
    await p.page.keyboard.press('ArrowUp');
    await frames(p);
    assert.equal((await selectedRow(p))?.[0], '1000.001000');
    await p.page.keyboard.press('PageDown');
    await frames(p);
    const page = (await visibleRows(p)).length;
    assert.equal((await selectedRow(p))?.[0], (1000 + (1 + page) / 1000).toFixed(6));
    await p.page.keyboard.press('End');
    await frames(p);
    assert.equal((await selectedRow(p))?.[0], '1000.999000');
    await p.page.keyboard.press('ArrowUp');
    await p.page.keyboard.press('Enter');
    await frames(p);
    assert.deepEqual((await p.posted()).at(-1), { type: 'openSource', probe: 'add', file: '/src/calc.c', line: 12 });
    // rows 0..: entry, entry, entry, return(sub) → the 4th visible row from the top after Home is a 'sub'
    await p.page.keyboard.press('Home');
    await frames(p);
    await p.page.click('.pl-spacer > .pl-row[aria-rowindex="5"]');
    await frames(p);
    assert.deepEqual((await p.posted()).at(-1), { type: 'openSource', probe: 'sub', file: '/src/calc.c', line: 20 });
    assert.equal((await selectedRow(p))?.[4], 'sub');
  });

  test('the filter box narrows rows, tells the host, and is saved for restore', async (t) => {
    const p = await open(t);
    if (!p) return;
    await p.send(init(), { type: 'hits', batch: encodeHits(hits(0, 400)) });
    await p.page.locator('#pl-filter input').fill('probe:sub host:web2');
    await frames(p);
    const rows = await domRows(p);
    assert.ok(rows.length > 0);
    assert.ok(
      rows.every((r) => r[4] === 'sub' && r[1] === 'web2'),
      JSON.stringify(rows.slice(0, 3)),
    );
    assert.match(await text(p, '#pl-status'), / 100 rows/);
    assert.ok(!(await p.posted()).some((m) => (m as { type: string }).type === 'filter'), 'the filter stays in the webview');
    assert.equal(((await p.savedState()) as { filter: string }).filter, 'probe:sub host:web2');
    // New hits are filtered as they arrive.
    await p.send({ type: 'hits', batch: encodeHits(hits(400, 8)) });
    await frames(p);
    assert.match(await text(p, '#pl-status'), / 102 rows/);
    await p.page.locator('#pl-filter input').fill('a=398');
    await frames(p);
    assert.deepEqual(
      (await domRows(p)).map((r) => r[5]),
      ['a=398 b=-398'],
    );
  });

  test('a restored panel gets its filter back from the saved state', async (t) => {
    const p = await open(t, { filter: 'kind:return', follow: true, scrollRow: 0, histogramProbe: null });
    if (!p) return;
    await p.send(init({ snapshotRows: 40 }), { type: 'hits', batch: encodeHits(hits(0, 40)) });
    await frames(p);
    assert.equal(await p.page.locator('#pl-filter input').inputValue(), 'kind:return');
    const rows = await domRows(p);
    assert.equal(rows.length, 10);
    assert.ok(rows.every((r) => r[4] === 'sub'));
  });

  test('pause keeps the rows still while hits keep arriving; resume catches up', async (t) => {
    const p = await open(t);
    if (!p) return;
    await p.send(init(), { type: 'hits', batch: encodeHits(hits(0, 100)) });
    await frames(p);
    await p.page.click('#pl-pause');
    await p.send({ type: 'hits', batch: encodeHits(hits(100, 50)) });
    await frames(p);
    assert.equal((await visibleRows(p)).at(-1)?.[0], '1000.099000');
    assert.match(await text(p, '#pl-status'), /100 rows · paused, 50 new hits waiting/);
    assert.equal(await text(p, '#pl-pause'), 'Resume');
    assert.ok(!(await p.posted()).some((m) => (m as { type: string }).type === 'pause'), 'pausing is the webview’s alone');
    await p.page.click('#pl-pause');
    await frames(p);
    assert.equal((await visibleRows(p)).at(-1)?.[0], '1000.149000');
    assert.match(await text(p, '#pl-status'), /150 rows/);
  });

  test('loss shows a banner; a bounded history says how many older hits left the view', async (t) => {
    const p = await open(t);
    if (!p) return;
    await p.send(init({ historyCapacity: 1000 }), { type: 'hits', batch: encodeHits(hits(0, 1500)) });
    await frames(p);
    assert.equal(await hidden(p, '#pl-lost'), true);
    assert.equal(await text(p, '#pl-dropped'), '500 older hits dropped from view');
    assert.match(await text(p, '#pl-status'), /1,000 rows/);
    await p.send(stats({ lost: 1234, historyDropped: 10, counts: { add: 1125, sub: 375 } }));
    await frames(p);
    assert.equal(await hidden(p, '#pl-lost'), false);
    assert.equal(await text(p, '#pl-lost'), '1,234 events lost — the kernel buffer overflowed; raise buffer size or add a filter');
    assert.equal(await text(p, '#pl-dropped'), '510 older hits dropped from view');
  });

  test("the banner says by how much received + lost differs from the kernel's count", async (t) => {
    const p = await open(t);
    if (!p) return;
    await p.send(init(), stats({ mismatch: 3 }));
    await frames(p);
    assert.equal(await hidden(p, '#pl-lost'), false);
    assert.equal(await text(p, '#pl-lost'), '3 events the kernel counted were neither received nor reported lost');
    await p.send(stats({ lost: 5, mismatch: -2 }));
    await frames(p);
    assert.equal(
      await text(p, '#pl-lost'),
      '5 events lost — the kernel buffer overflowed; raise buffer size or add a filter · 2 more records received than the kernel counted',
    );
    await p.send(stats({}));
    await frames(p);
    assert.equal(await hidden(p, '#pl-lost'), true);
  });

  test('per-probe counts and the latency histogram follow the stats; a probe can be picked', async (t) => {
    const p = await open(t);
    if (!p) return;
    await p.send(
      init(),
      stats({
        counts: { add: 1204, sub: 7 },
        latency: {
          sub: { buckets: [0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 3, 4], count: 7, maxNs: 4000, p50Ns: 2100, p99Ns: 3900 },
          add: { buckets: [0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1], count: 1, maxNs: 1_500_000 },
        },
      }),
    );
    await frames(p);
    const counts = await p.page.evaluate(() =>
      [...document.querySelectorAll('.pl-counts li')].map((li) => [
        li.querySelector('.pl-probe-name')?.textContent,
        li.querySelector('.pl-badge')?.textContent,
      ]),
    );
    assert.deepEqual(counts, [
      ['add', '1,204'],
      ['sub', '7'],
    ]);
    const bars = () =>
      p.page.evaluate(() => [...document.querySelectorAll('.pl-bar')].map((b) => Number((b as HTMLElement).dataset.count)));
    assert.equal((await bars()).length, 11, 'buckets 10..20 across all probes');
    assert.match(await text(p, '.pl-histogram h3'), /all probes · 8 calls · max 1\.5ms/, 'no percentiles over several probes');
    await p.page.click('.pl-counts li[data-probe="sub"]');
    await frames(p);
    assert.deepEqual(await bars(), [3, 4]);
    assert.match(await text(p, '.pl-histogram h3'), /sub · 7 calls · p50 2\.1µs · p99 3\.9µs · max 4µs/);
    assert.equal(((await p.savedState()) as { histogramProbe: string }).histogramProbe, 'sub');
    assert.deepEqual(await p.cspViolations(), []);
    assert.deepEqual(p.errors, []);
  });

  test('export asks the host with the current filter and shows its answer; clear empties the table', async (t) => {
    const p = await open(t);
    if (!p) return;
    await p.send(init(), { type: 'hits', batch: encodeHits(hits(0, 20)) });
    await p.page.locator('#pl-filter input').fill('probe:add');
    await p.page.click('#pl-export-csv');
    await frames(p);
    const req = (await p.posted()).at(-1);
    assert.ok(req && req.type === 'export');
    assert.equal(req.format, 'csv');
    assert.equal(req.filter, 'probe:add');
    await p.send({ type: 'response', requestId: req.requestId, ok: true, result: 'exported 15 hits to /tmp/h.csv' });
    await frames(p);
    assert.match(await text(p, '#pl-status'), /exported 15 hits to \/tmp\/h\.csv/);
    await p.page.click('#pl-export-json');
    const req2 = (await p.posted()).at(-1);
    assert.ok(req2 && req2.type === 'export' && req2.format === 'json');
    await p.send({ type: 'response', requestId: req2.requestId, ok: false, error: 'EACCES: permission denied' });
    await frames(p);
    assert.match(await text(p, '#pl-status'), /export failed: EACCES/);
    await p.page.click('#pl-clear');
    await frames(p);
    assert.deepEqual((await p.posted()).at(-1), { type: 'clear' });
    assert.equal((await domRows(p)).length, 0);
  });

  test("a row shows a traced program's text escaped, null and arrays as values, and its site on the probe", async (t) => {
    const p = await open(t);
    if (!p) return;
    const site = { kind: 'inlined' as const, address: '0x401136', caller: 'main', file: 'calc.c', line: 30 };
    const hostile: Hit = {
      ...hits(0, 1)[0],
      comm: 'a\rb\u2028',
      args: { s: 'x\n\u001b[2Jy', p: null, v: [1, 2] },
      site,
    };
    await p.send(init(), { type: 'hits', batch: encodeHits([hostile]) });
    await frames(p);
    const row = await p.page.evaluate(() => {
      // No helper functions in here: the bundler's name helper does not exist in the page.
      const r = document.querySelector('.pl-spacer > .pl-row') as HTMLElement;
      return {
        comm: (r.querySelector('.pl-col-comm') as HTMLElement).textContent,
        args: (r.querySelector('.pl-col-args') as HTMLElement).textContent,
        probeTitle: (r.querySelector('.pl-col-probe') as HTMLElement).title,
      };
    });
    assert.deepEqual(row, {
      comm: 'a\\rb\\u2028',
      args: 's="x\\n\\x1b[2Jy" p=null v=[1,2]',
      probeTitle: 'inlined into main at calc.c:30 (0x401136)',
    });
  });

  test('a probe picked in the counts shows its hits per site; picking a site narrows the rows to it and back', async (t) => {
    const p = await open(t);
    if (!p) return;
    const entry = { kind: 'entry' as const, address: '0x128ea0', file: '/src/acl.c', line: 2050 };
    const inlined = { kind: 'inlined' as const, address: '0x12a4c0', caller: 'ACLLoadFromFile', file: '/src/acl.c', line: 2310 };
    const part = { kind: 'part' as const, address: '0x5e8f4', caller: 'ACLAppendUserForLoading' };
    // Hits 0..8 round-robin over three sites; each call through the entry site returns there (its latency).
    const all = hits(0, 9).flatMap((h, i): Hit[] => {
      const site = [entry, inlined, part][i % 3];
      const { retval: _r, latencyNs: _l, ...rest } = h;
      const hit: Hit = { ...rest, probe: 'acl', kind: 'entry', event: 'acl', args: { n: i }, site };
      if (site !== entry) return [hit];
      return [hit, { ...hit, probe: 'acl__return', kind: 'return', event: 'acl__return', args: {}, ts: hit.ts + (i + 1) / 1e6 }];
    });
    // The real host half shows what a session's aggregates counted, as the extension does.
    const feed = new PanelFeed({ version: '0.1.0', flushIntervalMs: 60_000 });
    const agg = new Aggregates(new Map(), [{ entry: 'acl', exit: 'acl__return' }]);
    feed.watch(agg);
    feed.setProbes([{ name: 'acl', file: '/src/acl.c', line: 2050 }]);
    for (const h of all) {
      const latencyNs = agg.add(h);
      if (latencyNs !== undefined) h.latencyNs = latencyNs;
    }
    feed.post(all);
    const msgs: ToWebview[] = [];
    feed.attach((m) => msgs.push(m));
    feed.dispose();
    await p.send(...msgs);
    await frames(p);
    await p.page.click('.pl-counts li[data-probe="acl"]');
    await frames(p);
    const siteView = () =>
      p.page.evaluate(() => ({
        title: document.querySelector('.pl-sites h3')?.textContent,
        rows: [...document.querySelectorAll<HTMLElement>('.pl-sites li')].map((li) => ({
          site: li.dataset.site,
          selected: li.getAttribute('aria-selected'),
          text: [...li.querySelectorAll('.pl-site-name, .pl-badge, .pl-site-detail')].map((e) => e.textContent),
        })),
      }));
    assert.deepEqual(await siteView(), {
      title: 'acl · 3 sites · 9 hits',
      rows: [
        {
          site: '0x128ea0',
          selected: 'false',
          text: ['entry 0x128ea0', '3', 'at acl.c:2050', 'last: n=6', 'latency: mean 4µs, max 7µs (3)'],
        },
        { site: '0x12a4c0', selected: 'false', text: ['inlined 0x12a4c0', '3', 'into ACLLoadFromFile at acl.c:2310', 'last: n=7'] },
        { site: '0x5e8f4', selected: 'false', text: ['part 0x5e8f4', '3', 'of ACLAppendUserForLoading', 'last: n=8'] },
      ],
    });
    await p.page.locator('#pl-filter input').fill('comm:calc');
    await p.page.click('.pl-sites li[data-site="0x12a4c0"]');
    await frames(p);
    assert.equal(await p.page.locator('#pl-filter input').inputValue(), 'comm:calc site:0x12a4c0', 'the site word joins what was typed');
    assert.deepEqual(
      (await domRows(p)).map((r) => r[5]),
      ['n=1', 'n=4', 'n=7'],
    );
    assert.equal(((await p.savedState()) as { filter: string }).filter, 'comm:calc site:0x12a4c0');
    assert.equal((await siteView()).rows[1].selected, 'true');
    // Another site replaces the first; picking the picked one again shows every site's hits.
    await p.page.click('.pl-sites li[data-site="0x5e8f4"]');
    await frames(p);
    assert.deepEqual(
      (await domRows(p)).map((r) => r[5]),
      ['n=2', 'n=5', 'n=8'],
    );
    await p.page.click('.pl-sites li[data-site="0x5e8f4"]');
    await frames(p);
    assert.equal(await p.page.locator('#pl-filter input').inputValue(), 'comm:calc');
    assert.equal((await domRows(p)).length, 12, "9 entries and the entry site's 3 returns");
    assert.deepEqual(p.errors, []);
  });

  test('the site view is hidden while the picked probe names no sites', async (t) => {
    const p = await open(t);
    if (!p) return;
    await p.send(init(), { type: 'hits', batch: encodeHits(hits(0, 8)) }, stats({ counts: { add: 6, sub: 2 } }));
    await frames(p);
    await p.page.click('.pl-counts li[data-probe="add"]');
    await frames(p);
    assert.equal(await hidden(p, '.pl-sites'), true);
  });
});

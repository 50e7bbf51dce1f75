// The live panel at the widths it is really shown at (a side editor column is ~400 px): every row shows its
// time, comm, probe and arguments inside the panel, wider panels show more columns, and a row is clicked as a
// user clicks it (a real mouse click at the row's box, which needs the row to have one).
import { describe, test, type TestContext } from 'node:test';
import assert from 'node:assert/strict';
import type { PanelPage } from '../../../bench/panelPage';
import { usePanelBrowser } from '../../helpers/panelBrowser';
import type { Hit } from '../../../src/shared/hit';
import { emptyStats, encodeHits, PROTOCOL_VERSION, type ToWebview } from '../../../src/shared/protocol';

const N = 40;
function hits(): Hit[] {
  return Array.from({ length: N }, (_, i): Hit => {
    const ret = i % 2 === 1;
    return {
      host: 'db-primary-01',
      probe: ret ? 'lookupKey%return' : 'setKey',
      event: ret ? 'lookupKey__return' : 'setKey',
      kind: ret ? 'return' : 'entry',
      pid: 41234,
      tid: 41240 + (i % 4),
      comm: 'redis-server',
      cpu: i % 2,
      ts: 81234.5 + i / 1000,
      args: ret ? {} : { db: 0, key: `user:${1000 + i}`, val: 7 },
      ...(ret ? { retval: '0x55d0c8a1b2c0', latencyNs: 2100 } : {}),
    };
  });
}

function init(): ToWebview {
  return {
    type: 'init',
    version: '0.1.0',
    protocol: PROTOCOL_VERSION,
    historyCapacity: 100_000,
    snapshotRows: 0,
    probes: [
      { name: 'setKey', file: '/src/db.c', line: 321 },
      { name: 'lookupKey%return', file: '/src/db.c', line: 96 },
    ],
    stats: emptyStats(),
    session: { state: 'tracing' },
  };
}

interface CellBox {
  col: string;
  text: string;
  left: number;
  right: number;
  width: number;
  shown: boolean;
  /** the text is cut with an ellipsis */
  cut: boolean;
}

/** Each on-screen row's cells with their boxes, and the box of the table's viewport. */
async function layout(
  p: PanelPage,
): Promise<{ viewport: { left: number; right: number; top: number; bottom: number }; rows: CellBox[][] }> {
  await p.page.evaluate(() => new Promise((r) => setTimeout(() => requestAnimationFrame(() => requestAnimationFrame(r)), 150)));
  return p.page.evaluate(() => {
    const vp = (document.querySelector('.pl-viewport') as HTMLElement).getBoundingClientRect();
    const rows = [...document.querySelectorAll<HTMLElement>('.pl-spacer > .pl-row')]
      .filter((r) => r.style.display !== 'none')
      .filter((r) => {
        const b = r.getBoundingClientRect();
        return b.top >= vp.top - 1 && b.bottom <= vp.bottom + 1 && b.height > 0;
      })
      .map((r) =>
        [...r.children].map((c) => {
          const el = c as HTMLElement;
          const b = el.getBoundingClientRect();
          return {
            col: el.className.replace(/.*pl-col-(\w+).*/, '$1'),
            text: el.textContent ?? '',
            left: b.left,
            right: b.right,
            width: b.width,
            shown: getComputedStyle(el).display !== 'none' && b.width > 0,
            cut: el.scrollWidth > el.clientWidth + 1,
          };
        }),
      );
    return { viewport: { left: vp.left, right: vp.right, top: vp.top, bottom: vp.bottom }, rows };
  });
}

describe('live panel layout at any width (Chromium)', () => {
  const panel = usePanelBrowser();

  async function open(t: TestContext, width: number): Promise<PanelPage | null> {
    const p = await panel.open(t, { width, height: 600 });
    if (!p) return null;
    // The font variables VS Code sets on a webview's <html> (its defaults on Linux).
    await p.page.evaluate(() => {
      const s = document.documentElement.style;
      s.setProperty('--vscode-font-family', 'system-ui, Ubuntu, "Droid Sans", sans-serif');
      s.setProperty('--vscode-font-size', '13px');
      s.setProperty('--vscode-editor-font-family', '"Droid Sans Mono", "monospace", monospace');
      s.setProperty('--vscode-editor-font-size', '14px');
    });
    // VS Code sets them before the page loads; here the panel sees them at its next resize.
    await p.page.setViewportSize({ width, height: 601 });
    // As VS Code posts it: the plain arrays go as JSON, where an entry's absent return value becomes null.
    const batch = encodeHits(hits());
    await p.send(init(), { type: 'hits', batch: { ...batch, retval: JSON.parse(JSON.stringify(batch.retval)) as typeof batch.retval } });
    return p;
  }

  for (const width of [400, 420, 560]) {
    test(`${width} px: every row shows time, comm, probe and the arguments, inside the panel`, async (t) => {
      const p = await open(t, width);
      if (!p) return;
      const { viewport, rows } = await layout(p);
      assert.ok(rows.length >= 6, `at least 6 rows on screen (${rows.length}): the stats do not squeeze the table out`);
      for (const row of rows) {
        const cell = (col: string): CellBox => row.find((c) => c.col === col)!;
        for (const col of ['time', 'comm', 'probe']) {
          const c = cell(col);
          assert.ok(c.shown, `${col} is shown`);
          assert.ok(
            c.left >= viewport.left - 1 && c.right <= viewport.right + 1,
            `${col} lies inside the panel (${c.left}–${c.right} in ${viewport.left}–${viewport.right})`,
          );
        }
        assert.ok(!cell('time').cut, `the time is not cut (${cell('time').text})`);
        const isReturn = cell('probe').text.endsWith('%return');
        const value = isReturn ? cell('retval') : cell('args');
        assert.ok(value.shown && value.right <= viewport.right + 1, `the ${value.col} cell is inside the panel`);
        assert.ok(!value.cut, `the ${value.col} are shown whole: ${value.text}`);
        if (!isReturn) assert.ok(value.width >= 0.5 * width, `the arguments get the room (${Math.round(value.width)} px of ${width})`);
        if (!isReturn) assert.equal(cell('retval').text, '', 'an entry shows no return value');
        for (const col of ['host', 'pid']) assert.equal(cell(col).shown, false, `${col} gives way at ${width} px`);
      }
      assert.deepEqual(p.errors, []);
    });
  }

  test('1200 px: every column is shown, host and pid/tid included', async (t) => {
    const p = await open(t, 1200);
    if (!p) return;
    const { viewport, rows } = await layout(p);
    for (const row of rows) {
      for (const c of row) {
        assert.ok(c.shown, `${c.col} is shown`);
        assert.ok(c.right <= viewport.right + 1, `${c.col} inside the panel`);
      }
    }
  });

  for (const width of [400, 1200]) {
    test(`${width} px: a real mouse click on a row selects it and opens its source`, async (t) => {
      const p = await open(t, width);
      if (!p) return;
      await layout(p);
      const row = p.page.locator('.pl-spacer > .pl-row').filter({ hasText: 'user:1038' });
      // locator.click() waits until the row is visible, stable and receives the pointer, then clicks its middle.
      await row.locator('.pl-col-args').click({ timeout: 5_000 });
      const posted = await p.posted();
      assert.deepEqual(posted.at(-1), { type: 'openSource', probe: 'setKey', file: '/src/db.c', line: 321 });
      assert.equal(await row.getAttribute('aria-selected'), 'true');
    });
  }
});

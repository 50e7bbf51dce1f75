// The live panel in a narrow editor column (420 px, as a panel beside the code usually is): each hit's row
// shows its time, comm, probe and arguments inside the panel, and a real mouse click on a row opens the
// probe's source line. The screenshot in the README comes from here.
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { join } from 'node:path';
import { test } from 'node:test';
import type { Page } from 'playwright-core';
import { parseFixtureOutput } from '../fixtures/output';
import { mediaScreenshot, withCodeServer } from './harness/session';
import { clickCodeLens, codeLens, goToLine, openFile, runCommand, statusBarItem, webviewFrame } from './harness/workbench';
import { definitionLine, localTracingWorkspace, waitForInline } from './inlineResults';

const PANEL_WIDTH = 420;

/** Resizes the browser until the live panel's webview is `width` px wide (the two editor groups share the change). */
async function panelWidth(page: Page, width: number): Promise<number> {
  const webview = page.locator('iframe.webview').first();
  let w = 0;
  for (let i = 0; i < 4; i++) {
    w = Math.round((await webview.boundingBox())?.width ?? 0);
    if (Math.abs(w - width) <= 2) break;
    const vp = page.viewportSize()!;
    await page.setViewportSize({ width: vp.width + 2 * (width - w), height: vp.height });
    await page.waitForTimeout(500);
  }
  return w;
}

test(
  `live panel ${PANEL_WIDTH} px wide: time, comm, probe and arguments on every row; a real click opens the source`,
  { timeout: 900_000 },
  async (t) => {
    const ws = localTracingWorkspace(t);
    if (!ws) return;
    const { dir } = ws;
    await withCodeServer(t, { workspace: dir }, async ({ page }) => {
      await openFile(page, 'calls.c');
      const line = definitionLine(dir, 'add_ints');
      await codeLens(page, /^Trace$/)
        .first()
        .waitFor({ state: 'visible', timeout: 120_000 });
      await clickCodeLens(page, /^Trace$/, { line, timeout: 60_000 });
      await waitForInline(page, /^● 0 hits/, 120_000);
      const out = parseFixtureOutput(execFileSync(join(dir, 'build', 'calls'), ['6'], { encoding: 'utf8' }));
      const calls = out.calls.filter((c) => c.func === 'add_ints');
      await waitForInline(page, new RegExp(`^● ${calls.length} hits`), 30_000);

      await runCommand(page, 'ProbeLens: Open Live Panel');
      const frame = await webviewFrame(page, '.pl-viewport .pl-row', { timeout: 60_000 });
      const width = await panelWidth(page, PANEL_WIDTH);
      assert.ok(Math.abs(width - PANEL_WIDTH) <= 2, `the panel is ${PANEL_WIDTH} px wide (${width})`);
      const rows = frame.locator('.pl-viewport .pl-row');
      await rows
        .filter({ hasText: 'add_ints' })
        .nth(calls.length - 1)
        .waitFor({ state: 'visible', timeout: 30_000 });

      const seen = await frame.evaluate(() => {
        const vp = (document.querySelector('.pl-viewport') as HTMLElement).getBoundingClientRect();
        return [...document.querySelectorAll<HTMLElement>('.pl-spacer > .pl-row')]
          .filter((r) => r.style.display !== 'none')
          .map((r) =>
            Object.fromEntries(
              ['time', 'comm', 'probe', 'args'].map((col) => {
                const c = r.querySelector<HTMLElement>(`.pl-col-${col}`)!;
                const b = c.getBoundingClientRect();
                const inside = b.width > 0 && b.left >= vp.left - 1 && b.right <= vp.right + 1;
                return [col, inside && c.scrollWidth <= c.clientWidth + 1 ? (c.textContent ?? '') : `(hidden) ${c.textContent ?? ''}`];
              }),
            ),
          );
      });
      assert.equal(seen.length, calls.length, `one row per call (${JSON.stringify(seen)})`);
      seen.forEach((r, i) => {
        assert.match(r.time, /^\d+\.\d{6}$/, `row ${i}: time`);
        assert.equal(r.comm, 'calls', `row ${i}: comm`);
        assert.match(r.probe, /^add_ints\b/, `row ${i}: probe`);
        assert.equal(r.args, `a=${calls[i].args.a} b=${calls[i].args.b}`, `row ${i}: the arguments, whole`);
      });
      t.diagnostic(`screenshot: ${await mediaScreenshot(page, 'live-panel-narrow')}`);

      // A real click (Playwright checks the row is visible and receives the pointer at its middle).
      await goToLine(page, 1);
      await rows.filter({ hasText: 'add_ints' }).first().locator('.pl-col-args').click({ timeout: 10_000 });
      await statusBarItem(page, new RegExp(`Ln ${line},`)).waitFor({ state: 'visible', timeout: 30_000 });
    });
  },
);

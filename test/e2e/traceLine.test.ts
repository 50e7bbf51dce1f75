// "Trace this line" from the editor's context menu: the variables visible at the line are offered with their
// types, the values captured match what the program printed, the live panel lists the same hits, a rebuild marks
// the armed probes stale in the Probes view, and Stop leaves nothing armed on this machine (the last numbers stay).
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import { parseFixtureOutput } from '../fixtures/output';
import { withCodeServer } from './harness/session';
import {
  clickContextMenuItem,
  goToLine,
  openEditorContextMenu,
  openFile,
  runCommand,
  statusBarItem,
  waitForNotification,
  webviewFrame,
  showProbeLensView,
} from './harness/workbench';
import { localTracingWorkspace, markerLine, uprobeEventsFor, waitForInline } from './inlineResults';

test(
  'C workspace: "Trace this line" captures the picked variables; panel, stale on rebuild, clean stop',
  { timeout: 900_000 },
  async (t) => {
    const ws = localTracingWorkspace(t);
    if (!ws) return;
    const { tracefs, dir, binary, rebuild } = ws;
    const line = markerLine(dir, 'sum_squares.step');

    await withCodeServer(t, { workspace: dir }, async ({ page }) => {
      await openFile(page, 'calls.c');
      // The binary is indexed once lenses show; the context menu entry needs the same index.
      await page
        .locator('.monaco-editor .codelens-decoration a')
        .filter({ hasText: /^Trace$/ })
        .first()
        .waitFor({ state: 'visible', timeout: 120_000 });
      await openEditorContextMenu(page, line);
      await clickContextMenuItem(page, 'Trace this line');
      const rows = page.locator('.quick-input-widget .quick-input-list .monaco-list-row');
      for (const name of ['i', 'acc']) {
        await rows
          .filter({ has: page.locator('.label-name', { hasText: new RegExp(`^\\s*${name}\\s*$`) }) })
          .first()
          .waitFor({ state: 'visible', timeout: 60_000 });
      }
      const accRow = rows.filter({ has: page.locator('.label-name', { hasText: /^\s*acc\s*$/ }) }).first();
      assert.match(await accRow.innerText(), /long/, 'the variable is offered with its type');
      await page.keyboard.press('Enter');
      await waitForInline(page, /^● 0 hits/, 120_000);

      const out = parseFixtureOutput(execFileSync(binary, ['3'], { encoding: 'utf8' }));
      const steps = out.steps.filter((s) => s.func === 'sum_squares');
      assert.ok(steps.length > 0, 'the fixture printed its loop steps');
      const last = steps[steps.length - 1].vars;
      const text = await waitForInline(page, new RegExp(`^● ${steps.length} hits`), 30_000);
      assert.match(text, new RegExp(`\\bi=${last.i}\\b`));
      assert.match(text, new RegExp(`\\bacc=${last.acc}\\b`));

      // The live panel lists the same hits with the same values.
      await runCommand(page, 'ProbeLens: Open Live Panel');
      const frame = await webviewFrame(page, '.pl-viewport .pl-row', { timeout: 60_000 });
      const argTexts = async () =>
        (await frame.locator('.pl-viewport .pl-row .pl-col-args').allInnerTexts()).filter((s) => /\bacc=/.test(s));
      const deadline = Date.now() + 30_000;
      let seen = await argTexts();
      while (seen.length < steps.length && Date.now() < deadline) {
        await page.waitForTimeout(300);
        seen = await argTexts();
      }
      assert.equal(seen.length, steps.length, `the panel lists every hit (${JSON.stringify(seen)})`);
      for (const [i, s] of steps.entries()) {
        assert.match(seen[i], new RegExp(`\\bi=${s.vars.i}\\b`), `row ${i} carries the step's i`);
        assert.match(seen[i], new RegExp(`\\bacc=${s.vars.acc}\\b`), `row ${i} carries the step's acc`);
      }

      // Export writes the same hits to a file: accept the save dialog's proposed path in the workspace.
      await frame.locator('#pl-export-json').click();
      await page.locator('.quick-input-widget').first().waitFor({ state: 'visible', timeout: 30_000 });
      await page.keyboard.press('Enter');
      let exported: string | undefined;
      for (const until = Date.now() + 30_000; !exported && Date.now() < until; await page.waitForTimeout(300)) {
        exported = readdirSync(dir).find((f) => /^probelens-hits-.*\.json$/.test(f));
      }
      assert.ok(exported, 'the export file was written into the workspace');
      const rowsOut = JSON.parse(readFileSync(join(dir, exported), 'utf8')) as Array<{ probe: string; args: Record<string, unknown> }>;
      assert.equal(rowsOut.length, steps.length, 'one exported hit per captured hit');
      rowsOut.forEach((h, i) => {
        assert.equal(String(h.args.i), steps[i].vars.i, `exported hit ${i}: i`);
        assert.equal(String(h.args.acc), steps[i].vars.acc, `exported hit ${i}: acc`);
      });

      // Clicking a row opens the probe's source line.
      await goToLine(page, 1);
      // A real click, in the narrow side column the panel opens in.
      await frame
        .locator('.pl-viewport .pl-row .pl-col-args')
        .filter({ hasText: /\bacc=/ })
        .first()
        .click();
      await statusBarItem(page, new RegExp(`Ln ${line},`)).waitFor({ state: 'visible', timeout: 30_000 });

      // A rebuild leaves the armed probe watching the old file: the Probes view says stale.
      assert.ok(uprobeEventsFor(tracefs, binary).length > 0, 'the probe is armed in tracefs');
      rebuild();
      await waitForNotification(page, /was rebuilt; armed probes are stale/, { timeout: 60_000 });
      await showProbeLensView(page);
      const probeRow = page
        .locator('.monaco-list-row')
        .filter({ hasText: `calls.c:${line}` })
        .first();
      await probeRow.waitFor({ state: 'visible', timeout: 30_000 });
      await page
        .locator('.monaco-list-row')
        .filter({ hasText: `calls.c:${line}` })
        .filter({ hasText: 'stale' })
        .first()
        .waitFor({ state: 'visible', timeout: 30_000 });

      // Stop from the view's title bar: nothing of this session stays in tracefs.
      await page.locator('.action-label[aria-label^="Stop Tracing"]').first().click();
      const stopDeadline = Date.now() + 10_000;
      while (uprobeEventsFor(tracefs, binary).length > 0 && Date.now() < stopDeadline) await page.waitForTimeout(250);
      assert.deepEqual(uprobeEventsFor(tracefs, binary), [], 'no uprobe of this session is left after Stop');
      // The numbers stay beside the line after Stop, marked with a hollow dot.
      await waitForInline(page, new RegExp(`^○ ${steps.length} hits`), 30_000);
    });
  },
);

// Proves the harness's editor helpers against a test-only extension (test/e2e/harness-extension) that reports
// what it saw, before ProbeLens's own lenses, context menu entries and panel rely on them: the lens clicked is the
// one above the requested line, the context menu opens at the requested line, webview content is reachable.
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { e2ePrerequisites, withCodeServer } from './harness/session';
import { packageTestExtension } from './harness/vsix';
import { FIXTURE_SOURCES_DIR } from './harness/workspaces';
import {
  clickCodeLens,
  clickContextMenuItem,
  contextMenuLabels,
  openEditorContextMenu,
  openFile,
  runCommand,
  waitForNotification,
  webviewFrame,
} from './harness/workbench';

/** 1-based line of the definition of `fn` in the C fixture, found the way the test extension finds it. */
function definitionLine(fn: string): number {
  const lines = readFileSync(join(FIXTURE_SOURCES_DIR, 'c', 'calls.c'), 'utf8').split('\n');
  const i = lines.findIndex((l) => new RegExp(`^\\w[\\w\\s*]*?\\b${fn}\\s*\\([^;]*$`).test(l));
  assert.ok(i >= 0, `no definition of ${fn} in calls.c`);
  return i + 1;
}

test('harness: lenses by line, context menu at a line, palette commands and webview frames', { timeout: 900_000 }, async (t) => {
  if (!e2ePrerequisites(t)) return;
  const scratch = mkdtempSync(join(tmpdir(), 'probelens-harness-vsix-'));
  t.after(() => rmSync(scratch, { recursive: true, force: true }));
  const harnessVsix = packageTestExtension(join(__dirname, 'harness-extension'), scratch);

  await withCodeServer(t, { workspace: 'c', extraVsix: [harnessVsix] }, async ({ page }) => {
    await openFile(page, 'calls.c');

    // Two functions far apart: the second needs scrolling, and each lens must report its own function and line.
    for (const fn of ['add_ints', 'classify']) {
      const line = definitionLine(fn);
      await clickCodeLens(page, /^Harness lens /, { line, timeout: 60_000 });
      await waitForNotification(page, `harness lens clicked: ${fn} at line ${line}`);
    }

    const menuLine = definitionLine('greet') + 1;
    await openEditorContextMenu(page, menuLine);
    assert.ok((await contextMenuLabels(page)).includes('Where Am I'), "the extension's entry is in the editor context menu");
    await clickContextMenuItem(page, 'Where Am I');
    await waitForNotification(page, `harness context menu: line ${menuLine}`);

    await runCommand(page, 'Harness: Open Panel');
    const frame = await webviewFrame(page, '#harness-webview');
    assert.equal((await frame.locator('#harness-webview').innerText()).trim(), 'harness webview says hi');
    await frame.locator('#harness-button').click();
    await waitForNotification(page, 'harness webview message: clicked');
  });
});

// A binary whose indexing hits its limit (here a deliberately tiny probelens.index.timeLimitSeconds) is told to
// the user in a notification naming the setting, with a button that opens it; the editor stays responsive.
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { e2ePrerequisites, withCodeServer } from './harness/session';
import { REPO_ROOT } from './harness/vsix';
import { codeLens, openFile, runCommandFor, waitForNotification } from './harness/workbench';
import { buildCWorkspace } from './inlineResults';

const version = (JSON.parse(readFileSync(join(REPO_ROOT, 'package.json'), 'utf8')) as { version: string }).version;

test(
  'an index past its time limit: a notification names the binary and the setting, and the editor still answers',
  { timeout: 900_000 },
  async (t) => {
    if (!e2ePrerequisites(t)) return;
    const scratch = mkdtempSync(join(tmpdir(), 'probelens-e2e-limit-'));
    t.after(() => rmSync(scratch, { recursive: true, force: true }));
    const { dir, binary } = buildCWorkspace(scratch);
    await withCodeServer(t, { workspace: dir, settings: { 'probelens.index.timeLimitSeconds': 0.001 } }, async ({ page }) => {
      await openFile(page, 'calls.c');
      const toast = await waitForNotification(page, /took longer than its 0\.001 s time limit/, { timeout: 120_000 });
      const text = (await toast.innerText()).replace(/\s+/g, ' ');
      assert.ok(text.includes(`indexing ${binary} took longer`), text);
      assert.match(text, /raise probelens\.index\.timeLimitSeconds/);
      assert.ok((await toast.getByRole('button', { name: 'Open Setting' }).count()) === 1, 'a button opens the setting');
      // Responsive: a command still runs, and no lens was drawn from an index that does not exist.
      await runCommandFor(page, 'ProbeLens: Show Version', `ProbeLens ${version}`, { timeout: 60_000 });
      assert.equal(await codeLens(page, /^Trace$/).count(), 0);
      await toast.getByRole('button', { name: 'Open Setting' }).click();
      await page.locator('.settings-editor').waitFor({ state: 'visible', timeout: 30_000 });
    });
  },
);

// The first e2e check: ProbeLens, installed from its .vsix into a real VS Code, activates on a C file and its
// command runs from the command palette.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import { e2ePrerequisites, mediaScreenshot, withCodeServer } from './harness/session';
import { REPO_ROOT } from './harness/vsix';
import { openFile, runCommandFor, statusBarItem } from './harness/workbench';

const version = (JSON.parse(readFileSync(join(REPO_ROOT, 'package.json'), 'utf8')) as { version: string }).version;

test('"ProbeLens: Show Version" from the palette shows the version in a C workspace', { timeout: 900_000 }, async (t) => {
  if (!e2ePrerequisites(t)) return;
  await withCodeServer(t, { workspace: 'c' }, async ({ page }) => {
    await openFile(page, 'calls.c');
    // The file opened as C, which is what activates ProbeLens (onLanguage:c).
    await statusBarItem(page, /^C$/).waitFor({ state: 'visible', timeout: 30_000 });
    await runCommandFor(page, 'ProbeLens: Show Version', `ProbeLens ${version}`, { timeout: 60_000 });
    t.diagnostic(`screenshot: ${await mediaScreenshot(page, 'show-version')}`);
  });
});

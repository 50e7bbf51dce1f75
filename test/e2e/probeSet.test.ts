// A committed probe set (.vscode/probelens.json) armed with "Start Tracing" from the Probes view: the good spec
// counts the run's calls, the spec the compiler refuses shows its error beside its function and in the
// Problems list, the status bar names the target, and the ProbeLens output channel logs what was sent where.
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdirSync, readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import { parseFixtureOutput } from '../fixtures/output';
import { withCodeServer } from './harness/session';
import { codeLens, goToLine, openFile, showProbeLensView, statusBarItem } from './harness/workbench';
import { localTracingWorkspace, definitionLine, waitForInline } from './inlineResults';

function findFiles(dir: string, name: RegExp): string[] {
  const out: string[] = [];
  for (const e of readdirSync(dir)) {
    const p = join(dir, e);
    if (statSync(p).isDirectory()) out.push(...findFiles(p, name));
    else if (name.test(e)) out.push(p);
  }
  return out;
}

test(
  'probe set: Start Tracing arms .vscode/probelens.json; refused spec shown as an error; output logs definitions',
  { timeout: 900_000 },
  async (t) => {
    const ws = localTracingWorkspace(t);
    if (!ws) return;
    const { dir, binary } = ws;
    mkdirSync(join(dir, '.vscode'), { recursive: true });
    writeFileSync(
      join(dir, '.vscode', 'probelens.json'),
      JSON.stringify({ version: 1, binaries: { 'build/calls': ['add_ints $params', 'greet no_such_var'] } }, null, 2),
    );

    await withCodeServer(t, { workspace: dir }, async ({ page, workDir }) => {
      await openFile(page, 'calls.c');
      await codeLens(page, /^Trace$/)
        .first()
        .waitFor({ state: 'visible', timeout: 120_000 });
      await statusBarItem(page, /ProbeLens: local/).waitFor({ state: 'visible', timeout: 30_000 });
      await showProbeLensView(page);
      await page
        .locator('.monaco-list-row')
        .filter({ hasText: 'greet no_such_var' })
        .first()
        .waitFor({ state: 'visible', timeout: 30_000 });
      await page.locator('.action-label[aria-label^="Start Tracing"]').first().click();

      // Decorations exist in the DOM only for visible lines: bring each function into view.
      await goToLine(page, definitionLine(dir, 'add_ints'));
      await waitForInline(page, /^● 0 hits$/, 120_000);
      await goToLine(page, definitionLine(dir, 'greet'));
      const refused = await waitForInline(page, /^● error: .*no_such_var/, 30_000);
      t.diagnostic(`refused spec reads: ${refused}`);
      await page
        .locator('.monaco-list-row')
        .filter({ hasText: 'greet no_such_var' })
        .filter({ hasText: 'error' })
        .first()
        .waitFor({ state: 'visible', timeout: 30_000 });
      // The Problems count in the status bar includes the refused probe.
      await page
        .locator('.statusbar-item[id="status.problems"]')
        .filter({ hasText: /[1-9]/ })
        .first()
        .waitFor({ state: 'visible', timeout: 30_000 });

      const out = parseFixtureOutput(execFileSync(binary, ['2'], { encoding: 'utf8' }));
      const n = out.calls.filter((c) => c.func === 'add_ints').length;
      await goToLine(page, definitionLine(dir, 'add_ints'));
      await waitForInline(page, new RegExp(`^● ${n} hits · last a=3 b=-7$`), 30_000);

      // What was sent to which host is in the ProbeLens output channel (its log file under the user data).
      const logs = findFiles(join(workDir, 'user-data', 'logs'), /ProbeLens\.log$/);
      assert.ok(logs.length > 0, 'the ProbeLens output channel has a log file');
      const text = logs.map((f) => readFileSync(f, 'utf8')).join('\n');
      assert.match(text, /→ local: p:probelens_[0-9]+_[a-z0-9_]+\/\S+ \S*calls:0x[0-9a-f]+/);
      assert.match(text, /✗ greet no_such_var: /);
    });
  },
);

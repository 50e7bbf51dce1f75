// "Trace with arguments…" from the editor's context menu inside account_deposit: the struct pointer's fields are
// offered from DWARF, the picked field is fetched, and its value at entry is what the program printed.
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { test } from 'node:test';
import { parseFixtureOutput } from '../fixtures/output';
import { withCodeServer } from './harness/session';
import { clickContextMenuItem, codeLens, openEditorContextMenu, openFile } from './harness/workbench';
import { localTracingWorkspace, definitionLine, waitForInline } from './inlineResults';

test('C workspace: "Trace with arguments…" offers acct->balance from DWARF and captures it', { timeout: 900_000 }, async (t) => {
  const ws = localTracingWorkspace(t);
  if (!ws) return;
  const { dir, binary } = ws;
  const line = definitionLine(dir, 'account_deposit');

  await withCodeServer(t, { workspace: dir }, async ({ page }) => {
    await openFile(page, 'calls.c');
    await codeLens(page, /^Trace$/)
      .first()
      .waitFor({ state: 'visible', timeout: 120_000 });
    await openEditorContextMenu(page, line + 1);
    await clickContextMenuItem(page, 'Trace with arguments…');
    const row = (label: string) =>
      page
        .locator('.quick-input-widget .quick-input-list .monaco-list-row')
        .filter({ has: page.locator('.label-name', { hasText: new RegExp(`^\\s*${label.replace(/[$>-]/g, '\\$&')}\\s*$`) }) })
        .first();
    await row('acct->balance').waitFor({ state: 'visible', timeout: 60_000 });
    assert.match(await row('acct->owner').innerText(), /const char \*/, 'fields come with their types');
    await row('acct->balance').click();
    await page.keyboard.press('Enter');
    // The spec, editable, in perf-probe syntax.
    const input = page.locator('.quick-input-widget .quick-input-box input');
    await page.waitForFunction(
      () =>
        (document.querySelector('.quick-input-widget .quick-input-box input') as HTMLInputElement | null)?.value.includes('acct->balance'),
      undefined,
      { timeout: 30_000 },
    );
    assert.equal(await input.inputValue(), 'account_deposit acct amount acct->balance');
    await page.keyboard.press('Enter');
    await waitForInline(page, /^● 0 hits$/, 120_000);

    const out = parseFixtureOutput(execFileSync(binary, ['1'], { encoding: 'utf8' }));
    const call = out.calls.find((c) => c.func === 'account_deposit');
    assert.ok(call, 'the fixture called account_deposit');
    const text = await waitForInline(page, /^● 1 hit · last /, 30_000);
    assert.match(text, new RegExp(`\\bamount=${call.args.amount}\\b`));
    // perf probe names a field argument after its path (acct->balance → acct_balance).
    assert.match(text, new RegExp(`\\sacct_balance=${call.args['acct->balance']}(\\s|$)`), `the field's value at entry (${text})`);
  });
});

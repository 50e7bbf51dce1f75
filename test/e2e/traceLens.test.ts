// The C workspace as a user sees it: lenses above the functions of calls.c, "Trace" clicked above add_ints, the
// program run on this machine, and the inline decoration after add_ints's line counting exactly its calls with
// the values it was called with.
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import { parseFixtureOutput } from '../fixtures/output';
import { mediaScreenshot, withCodeServer } from './harness/session';
import { clickCodeLens, codeLens, openFile } from './harness/workbench';
import { localTracingWorkspace, definitionLine, waitForInline } from './inlineResults';

test(
  'C workspace: lenses above functions, "Trace" on add_ints, the inline decoration counts the run\'s calls',
  { timeout: 900_000 },
  async (t) => {
    const ws = localTracingWorkspace(t);
    if (!ws) return;
    const { dir } = ws;

    await withCodeServer(t, { workspace: dir }, async ({ page }) => {
      await openFile(page, 'calls.c');
      const line = definitionLine(dir, 'add_ints');
      // Lenses appear once the binary is indexed (first time: a progress notification).
      await codeLens(page, /^Trace returns$/)
        .first()
        .waitFor({ state: 'visible', timeout: 120_000 });
      assert.ok((await codeLens(page, /not probe-able|^Latency$/).count()) > 0, 'the Latency lens is drawn too');
      await clickCodeLens(page, /^Trace$/, { line, timeout: 60_000 });
      // Armed: the lens turns into the live count.
      await codeLens(page, /Trace: 0 hits · armed/)
        .first()
        .waitFor({ state: 'visible', timeout: 120_000 });
      await waitForInline(page, /^● 0 hits/, 30_000);

      const out = parseFixtureOutput(execFileSync(join(dir, 'build', 'calls'), ['3'], { encoding: 'utf8' }));
      const calls = out.calls.filter((c) => c.func === 'add_ints');
      assert.equal(calls.length, 3, 'the fixture calls add_ints once per iteration');
      const text = await waitForInline(page, /^● 3 hits/, 30_000);
      const last = calls[calls.length - 1].args;
      assert.equal(text, `● 3 hits · last a=${last.a} b=${last.b}`);
      await codeLens(page, /Trace: 3 hits · armed/)
        .first()
        .waitFor({ state: 'visible', timeout: 30_000 });
      t.diagnostic(`screenshot: ${await mediaScreenshot(page, 'trace-lens')}`);
      assert.match(readFileSync(join(dir, '.vscode', 'probelens.json'), 'utf8'), /"add_ints \$params"/);
    });
  },
);

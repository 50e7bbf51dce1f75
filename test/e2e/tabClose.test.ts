// Closing the browser tab mid-session leaves no ProbeLens state on the target within 10 s. No deactivate()
// runs here: once code-server drops the window's extension host, the target-side agent sees its stdin close
// (or its heartbeats stop) and removes its probes, reader and instance by itself.
import assert from 'node:assert/strict';
import { existsSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import { withCodeServer } from './harness/session';
import { clickCodeLens, codeLens, openFile } from './harness/workbench';
import { localTracingWorkspace, definitionLine, uprobeEventsFor, waitForInline } from './inlineResults';

const GRACE_SECONDS = 2;

test('C workspace: closing the browser tab mid-session removes the probes from the target within 10 s', { timeout: 900_000 }, async (t) => {
  const ws = localTracingWorkspace(t);
  if (!ws) return;
  const { tracefs, dir, binary } = ws;

  await withCodeServer(t, { workspace: dir, reconnectionGraceSeconds: GRACE_SECONDS }, async ({ page }) => {
    await openFile(page, 'calls.c');
    await codeLens(page, /^Trace returns$/)
      .first()
      .waitFor({ state: 'visible', timeout: 120_000 });
    await clickCodeLens(page, /^Trace$/, { line: definitionLine(dir, 'add_ints'), timeout: 60_000 });
    await waitForInline(page, /^● 0 hits/, 120_000);
    const armed = uprobeEventsFor(tracefs, binary);
    assert.ok(armed.length > 0, 'the probe is armed on the target');
    const group = /^[pr]:([^/]+)\//.exec(armed[0])![1];
    assert.ok(existsSync(join(tracefs, 'instances', group)), 'in its private instance');

    const closedAt = Date.now();
    await page.close();
    let left: string[] = armed;
    while (Date.now() - closedAt < 10_000 + GRACE_SECONDS * 1000) {
      left = uprobeEventsFor(tracefs, binary);
      if (left.length === 0 && !readdirSync(join(tracefs, 'instances')).includes(group)) break;
      await new Promise((r) => setTimeout(r, 250));
    }
    const took = (Date.now() - closedAt) / 1000;
    assert.deepEqual(left, [], `definitions still armed ${took.toFixed(1)} s after the tab closed`);
    assert.ok(!readdirSync(join(tracefs, 'instances')).includes(group), 'the instance is gone');
    // The grace time is code-server's choice (how long it waits for the tab to come back); the rest is ours.
    assert.ok(took - GRACE_SECONDS <= 10, `cleaned up ${took.toFixed(1)} s after the tab closed (grace ${GRACE_SECONDS} s)`);
    t.diagnostic(`cleaned up ${took.toFixed(1)} s after the tab closed`);
  });
});

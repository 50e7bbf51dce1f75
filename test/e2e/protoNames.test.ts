// Names from a binary are data in the editor too: protonames.c's functions `__proto__` and `constructor` (whose
// argument is named `__proto__`, run under the comm `__proto__`) traced from their lenses in real VS Code. Each
// lens, inline count, hover and panel row shows the name as written, with the program's own call counts.
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import { withCodeServer } from './harness/session';
import { clickCodeLens, codeLens, openFile, runCommand, webviewFrame } from './harness/workbench';
import { hoverInline, localTracingWorkspace, waitForInline } from './inlineResults';

/** 1-based line of the definition of `fn` in protonames.c. */
function definitionOf(dir: string, fn: string): number {
  const i = readFileSync(join(dir, 'protonames.c'), 'utf8')
    .split('\n')
    .findIndex((l) => l.startsWith(`FX_PROBE long ${fn}(`));
  assert.ok(i >= 0, `no definition of ${fn} in protonames.c`);
  return i + 1;
}

test(
  'functions named __proto__ and constructor: lenses, Trace, inline counts, hover and panel rows by their own names',
  { timeout: 900_000 },
  async (t) => {
    const ws = localTracingWorkspace(t);
    if (!ws) return;
    const { dir } = ws;
    const bin = join(dir, 'build', 'protonames');
    execFileSync('gcc', ['-g', '-O2', '-o', bin, 'protonames.c'], { cwd: dir });
    await withCodeServer(t, { workspace: dir }, async ({ page }) => {
      await openFile(page, 'protonames.c');
      await codeLens(page, /^Trace$/)
        .first()
        .waitFor({ state: 'visible', timeout: 120_000 });
      for (const fn of ['__proto__', 'constructor']) {
        await clickCodeLens(page, /^Trace$/, { line: definitionOf(dir, fn), timeout: 60_000 });
        await waitForInline(page, /^● 0 hits/, 120_000);
      }
      await codeLens(page, /Trace: 0 hits · armed/)
        .nth(1)
        .waitFor({ state: 'visible', timeout: 60_000 });

      // Per iteration protonames calls constructor once and __proto__ three times, each with the iteration.
      const iterations = 2;
      const out = execFileSync(bin, [String(iterations)], { encoding: 'utf8' });
      assert.match(out, /^count __proto__ 6$/m);
      assert.match(out, /^count constructor 2$/m);
      const proto = await waitForInline(page, /^● 6 hits/, 30_000);
      assert.equal(proto, '● 6 hits · last __proto__=1', 'the argument named __proto__ is shown by its name');
      assert.equal(await waitForInline(page, /^● 2 hits/, 30_000), '● 2 hits · last __proto__=1');
      await codeLens(page, /Trace: 6 hits · armed/)
        .first()
        .waitFor({ state: 'visible', timeout: 30_000 });
      await codeLens(page, /Trace: 2 hits · armed/)
        .first()
        .waitFor({ state: 'visible', timeout: 30_000 });
      const hover = await hoverInline(page, /^● 6 hits/, /__proto__/, 30_000);
      assert.match(hover, /\b6\b/, `the hover counts the calls: ${hover}`);
      assert.match(hover, /__proto__/, `the hover names the probe: ${hover}`);

      await runCommand(page, 'ProbeLens: Open Live Panel');
      const frame = await webviewFrame(page, '.pl-viewport .pl-row', { timeout: 60_000 });
      const rows = frame.locator('.pl-viewport .pl-row');
      await rows.nth(7).waitFor({ state: 'visible', timeout: 30_000 });
      const seen = await frame.evaluate(() =>
        [...document.querySelectorAll<HTMLElement>('.pl-spacer > .pl-row')]
          .filter((r) => r.style.display !== 'none')
          .map((r) =>
            ['comm', 'probe', 'args'].map((col) => r.querySelector<HTMLElement>(`.pl-col-${col}`)?.textContent ?? '').join(' | '),
          ),
      );
      const counted = new Map<string, number>();
      for (const r of seen) counted.set(r, (counted.get(r) ?? 0) + 1);
      assert.deepEqual(
        [...counted].sort(),
        [
          ['__proto__ | __proto__ | __proto__=0', 3],
          ['__proto__ | __proto__ | __proto__=1', 3],
          ['__proto__ | constructor | __proto__=0', 1],
          ['__proto__ | constructor | __proto__=1', 1],
        ],
        `one row per call, each named as written: ${JSON.stringify(seen)}`,
      );
    });
  },
);

// A program running on this machine and in a container (util-linux unshare: new mount, PID and UTS namespaces, a
// root holding a copy of the build, another inode). "ProbeLens: Trace Only a Process…" lists both processes of the
// build with the PID here and the PID the container gives its own; picking the container's re-arms the probe on its
// copy, and the line then counts exactly that process's calls, not the host's. Stop leaves nothing armed.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { copyFileSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { CONTAINER, PROGRAM, start } from '../helpers/containers';
import { missing } from '../helpers/require';
import { withCodeServer } from './harness/session';
import { clickCodeLens, codeLens, openFile, quickInputRow, runCommand, showProbeLensView } from './harness/workbench';
import { localTracingPrerequisites, uprobeEventsFor, waitForInline } from './inlineResults';

const CALLS = { host: 29, container: 37 };

test(
  "Trace Only a Process: the build's processes here and in a container, both PIDs; the container's traced alone",
  { timeout: 900_000 },
  async (t) => {
    const tracefs = localTracingPrerequisites(t);
    if (!tracefs) return;
    if (spawnSync('unshare', ['--version']).status !== 0) return missing(t, 'util-linux unshare');
    const scratch = mkdtempSync(join(tmpdir(), 'probelens-e2e-ctr-'));
    t.after(() => rmSync(scratch, { recursive: true, force: true }));
    const dir = join(scratch, 'work');
    mkdirSync(join(dir, 'build'), { recursive: true });
    writeFileSync(join(dir, 'work.c'), PROGRAM);
    const bin = join(dir, 'build', 'work');
    // Static: the container's root holds the program and nothing else.
    const cc = spawnSync('gcc', ['-O0', '-g', '-static', '-Wl,--build-id', '-o', bin, 'work.c'], { cwd: dir, encoding: 'utf8' });
    if (cc.status !== 0) return missing(t, `gcc with a static libc: ${cc.error?.message ?? cc.stderr}`);
    const root = join(scratch, 'ctr');
    mkdirSync(root);
    copyFileSync(bin, join(root, 'app'));
    const host = await start([bin, String(CALLS.host)], 0);
    const ctr = await start([...CONTAINER, root, '/app', String(CALLS.container)], 1);
    t.after(() => {
      for (const r of [host, ctr]) r.child.kill('SIGKILL');
      for (const p of ctr.all) spawnSync('kill', ['-9', String(p)]);
    });
    assert.equal(ctr.nsPid, 1, 'the container runs the program as its PID 1');
    const line =
      readFileSync(join(dir, 'work.c'), 'utf8')
        .split('\n')
        .findIndex((l) => /\bint work\(int n\)/.test(l)) + 1;

    await withCodeServer(t, { workspace: dir }, async ({ page }) => {
      await openFile(page, 'work.c');
      await clickCodeLens(page, /^Trace$/, { line, timeout: 120_000 });
      await codeLens(page, /Trace: 0 hits · armed/)
        .first()
        .waitFor({ state: 'visible', timeout: 120_000 });
      assert.equal(uprobeEventsFor(tracefs, bin).length, 1, 'armed on the build at its path first');

      await runCommand(page, 'ProbeLens: Trace Only a Process…');
      const mine = quickInputRow(page, `PID ${host.hostPid}`);
      const theirs = quickInputRow(page, `PID ${ctr.hostPid}`);
      await theirs.waitFor({ state: 'visible', timeout: 60_000 });
      assert.match(await theirs.innerText(), /PID 1 in its own PID namespace/);
      assert.match(await theirs.innerText(), new RegExp(`its build: ${join(root, 'app').replace(/[.+]/g, '\\$&')}`));
      assert.match(await mine.innerText(), /in this PID namespace/);
      assert.ok(await quickInputRow(page, 'Every process').isVisible(), 'and every process of the build, as before');
      await theirs.click();

      // Re-armed on the container's copy, filtered by its PID; the host's copy carries no probe any more.
      const until = Date.now() + 60_000;
      while (!(uprobeEventsFor(tracefs, join(root, 'app')).length === 1 && uprobeEventsFor(tracefs, bin).length === 0)) {
        assert.ok(Date.now() < until, `not re-armed on the container's copy: ${readFileSync(join(tracefs, 'uprobe_events'), 'utf8')}`);
        await page.waitForTimeout(250);
      }
      await codeLens(page, /Trace: 0 hits · armed/)
        .first()
        .waitFor({ state: 'visible', timeout: 60_000 });
      await showProbeLensView(page);
      await page
        .locator('.monaco-list-row')
        .filter({ hasText: `PID ${ctr.hostPid} only (1 in its namespace)` })
        .first()
        .waitFor({ state: 'visible', timeout: 30_000 });

      for (const r of [host, ctr]) r.go();
      for (const r of [host, ctr]) assert.match(await r.done, /^done /m);
      await waitForInline(page, new RegExp(`^● ${CALLS.container} hits · last n=${CALLS.container - 1}$`), 60_000);
      // The host's 29 calls ran too, before and beside these: none of them is counted.
      await page.waitForTimeout(1_500);
      await waitForInline(page, new RegExp(`^● ${CALLS.container} hits · last n=${CALLS.container - 1}$`), 1_000);

      await page.locator('.action-label[aria-label^="Stop Tracing"]').first().click();
      const gone = Date.now() + 10_000;
      while (uprobeEventsFor(tracefs, join(root, 'app')).length > 0 && Date.now() < gone) await page.waitForTimeout(250);
      assert.deepEqual(uprobeEventsFor(tracefs, join(root, 'app')), [], 'nothing left armed after Stop');
    });
  },
);

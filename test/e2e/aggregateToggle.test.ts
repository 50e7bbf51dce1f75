// Counting in the kernel from the editor, on the VM target (its Debian cloud kernel has hist triggers; this
// machine's has none). The calls fixture is at the same path in the VM; the workspace holds its sources. The Trace
// lens above tick() arms on the VM alone; the Probes view's "Aggregate in the Kernel" moves the probe into the
// kernel: the inline count says "aggregated in the kernel" and rises by exactly the calls a workload in the VM made,
// the hover says which path counted, and the live panel marks the probe and says it has no hit rows. "Stream Hits"
// moves it back; with a one-page ring buffer (probelens.bufferKb) a hot workload loses hits, and the notification
// that offers the kernel path flips the probe when its action is clicked. After Stop the VM holds no probe, trigger,
// synthetic event, instance or reader. On this machine, whose kernel has no hist triggers, the same toggle says so and
// streams the probe (every call counted), and a probe losing hits is told to narrow, with no offer.
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { copyFileSync, mkdirSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { basename, join } from 'node:path';
import { test } from 'node:test';
import type { Page } from 'playwright-core';
import { fixture } from '../helpers/fixtures';
import { requireVm, vmShell, waitVmClean, type VmConnection } from '../helpers/vm';
import { e2ePrerequisites, withCodeServer } from './harness/session';
import {
  addSshTarget,
  clickCodeLens,
  clickContextMenuItem,
  codeLens,
  openFile,
  runCommand,
  waitForNotification,
  webviewFrame,
  showProbeLensView,
} from './harness/workbench';
import { definitionLine, hoverInline, localTracingWorkspace, uprobeEventsFor, waitForInline } from './inlineResults';
import { parseFixtureOutput } from '../fixtures/output';
import { missing } from '../helpers/require';
import { traceOnVmOnly, vmSshConfig } from './vmTarget';
import { plainData } from '../helpers/plain';

const T = '/sys/kernel/tracing';
const CALLS = 300;

/** The count the inline result after tick's line shows, once it matches `want` (`● 1,234 hits · …`). */
async function inlineCount(page: Page, want: RegExp, ms = 120_000): Promise<number> {
  const text = await waitForInline(page, want, ms);
  return Number(/^[●○] ([\d,]+)/.exec(text)![1].replace(/,/g, ''));
}

/** The Probes view row of the probe whose label starts with `label` (the VM's: the view lists it per target). */
function probeRow(page: Page, label: RegExp) {
  return page
    .locator('.pane-body .monaco-list-row')
    .filter({ has: page.locator('.label-name', { hasText: label }) })
    .last();
}

/**
 * Right-clicks the probe's row in the Probes view and picks `item` from its context menu, until the row's text says
 * `done` (a menu closed by a redraw of the view before its click was taken is opened again, as a user would).
 */
async function probeMenu(page: Page, label: RegExp, item: string, done: (text: string) => boolean): Promise<void> {
  for (let i = 1; ; i++) {
    // The view's icon toggles the side bar: clicked only when the view is not showing.
    await showProbeLensView(page);
    await probeRow(page, label).click({ button: 'right' });
    await clickContextMenuItem(page, item, { timeout: 30_000 });
    const deadline = Date.now() + 15_000;
    while (Date.now() < deadline && !done(await probeRow(page, label).innerText())) await page.waitForTimeout(250);
    if (done(await probeRow(page, label).innerText())) return;
    if (i === 3) throw new Error(`"${item}" did not take: the row says ${await probeRow(page, label).innerText()}`);
  }
}

const inKernel = (text: string): boolean => text.includes('in the kernel');

/** Polls the VM until `check` holds of `cmd`'s output. */
async function untilOnVm(vm: VmConnection, cmd: string, check: (out: string) => boolean, what: string, ms = 60_000): Promise<string> {
  const deadline = Date.now() + ms;
  for (;;) {
    const r = await vmShell(vm, cmd);
    if (check(r.out)) return r.out;
    if (Date.now() > deadline) throw new Error(`${what}: not within ${ms} ms (last: ${r.out.trim() || r.err.trim()})`);
    await new Promise((res) => setTimeout(res, 500));
  }
}

const histTriggers = `cat ${T}/instances/probelens_*/events/probelens_*/*/trigger 2>/dev/null | grep -c '^hist:' || true`;

test(
  'VM target: "Aggregate in the Kernel" on a probe counts it with hist triggers, exactly the calls made, said in the line, hover and panel; a probe losing hits is offered the kernel path, whose action flips it; Stop leaves the VM clean',
  { timeout: 1_800_000 },
  async (t) => {
    if (!e2ePrerequisites(t)) return;
    const vm = await requireVm(t);
    if (!vm) return;
    const calls = await fixture('calls-O2');
    const bin = vm.fixtures['calls-O2'];
    assert.equal(bin, calls.path, 'the VM holds the fixture at its path here');
    const scratch = mkdtempSync(join(tmpdir(), 'probelens-e2e-agg-'));
    t.after(() => rmSync(scratch, { recursive: true, force: true }));
    const ws = join(scratch, 'calls');
    mkdirSync(ws);
    for (const f of calls.sourceFiles) copyFileSync(f, join(ws, basename(f)));
    const sshConfig = vmSshConfig(vm, scratch);
    assert.deepEqual((await waitVmClean(vm, 60_000)).left, [], 'the VM is clean before the test');
    const settings = {
      'probelens.ssh.configFile': sshConfig,
      'probelens.binaries': [calls.path],
      'probelens.pathMappings': { [calls.srcDir]: '${workspaceFolder}' },
      // One page per CPU: the hot workload below overflows it.
      'probelens.bufferKb': 4,
    };
    await withCodeServer(t, { workspace: ws, settings }, async ({ page }) => {
      await openFile(page, 'calls.c');

      // Probes view → "Add SSH Target…": the VM, as root, the same paths; then trace on the VM only.
      await addSshTarget(page, 'e2e-vm');
      await traceOnVmOnly(page);

      // Streamed first.
      await clickCodeLens(page, /^Trace$/, { line: definitionLine(ws, 'tick'), timeout: 300_000 });
      await codeLens(page, /Trace: [\d,]+ hits? · armed/)
        .first()
        .waitFor({ state: 'visible', timeout: 300_000 });
      await waitForInline(page, /^● [\d,]+ hits?/, 60_000);

      // The toggle: the probe's context menu in the Probes view.
      await probeMenu(page, /^tick/, 'Aggregate in the Kernel', inKernel);
      await untilOnVm(vm, histTriggers, (out) => Number(out.trim()) >= 1, 'a hist trigger on the VM', 120_000);
      const before = await inlineCount(page, /^● [\d,]+ hits? · .*aggregated in the kernel$/);
      const saved = JSON.parse(readFileSync(join(ws, '.vscode', 'probelens.json'), 'utf8')) as { binaries: Record<string, unknown[]> };
      assert.deepEqual(
        plainData(saved.binaries[calls.path].map((e) => (typeof e === 'string' ? e : (e as { aggregate?: boolean }).aggregate))),
        [true],
        'the probe set file says the probe aggregates',
      );
      await probeRow(page, /^tick/).filter({ hasText: 'in the kernel' }).waitFor({ state: 'visible', timeout: 30_000 });

      const r = await vmShell(vm, `${bin} ${CALLS} >/dev/null && echo done`);
      assert.equal(r.out.trim(), 'done', r.err);
      const want = new RegExp(`^● ${(before + CALLS).toLocaleString('en-US')} hits · .*aggregated in the kernel$`);
      await waitForInline(page, want, 120_000);
      // And it stays there: the kernel counted each call once (two more readings of the hist files).
      await page.waitForTimeout(2_500);
      assert.equal(await inlineCount(page, /aggregated in the kernel$/), before + CALLS, `the count rose by exactly the ${CALLS} calls`);
      t.diagnostic(`aggregated: ${before} → ${before + CALLS}`);
      const hover = await hoverInline(page, /aggregated in the kernel$/, /Counted:/, 60_000);
      assert.match(hover, /Counted: aggregated in the kernel \(hist triggers: counts and latency, no per-hit values\)/);

      // The live panel: the same count, marked as the kernel's, and no hit rows said so.
      await runCommand(page, 'ProbeLens: Open Live Panel');
      const frame = await webviewFrame(page, '#pl-filter input', { timeout: 60_000 });
      await frame.waitForFunction(
        (n) => {
          const li = document.querySelector<HTMLElement>('.pl-counts li[data-probe="tick"]');
          return li?.dataset.path === 'kernel' && (li.textContent ?? '').endsWith(n);
        },
        (before + CALLS).toLocaleString('en-US'),
        { timeout: 60_000 },
      );
      assert.match(
        await frame.locator('#pl-aggregated').innerText(),
        /^tick is aggregated in the kernel: counts and latency are in Probes, no per-hit rows$/,
      );

      // Back to streaming, then a hot workload through a one-page buffer: hits are lost, and the kernel path offered.
      await probeMenu(page, /^tick/, 'Stream Hits', (text) => !inKernel(text));
      await untilOnVm(
        vm,
        `cat ${T}/instances/probelens_*/events/probelens_*/*/enable 2>/dev/null | grep -c '^1' || true; ${histTriggers}`,
        (out) => out.trim().split('\n')[0] !== '0' && out.trim().split('\n')[1] === '0',
        'the probe streaming again on the VM (its event enabled, no trigger)',
        120_000,
      );
      await codeLens(page, /Trace: [\d,]+ hits? · armed/)
        .first()
        .waitFor({ state: 'visible', timeout: 120_000 });
      const hot = vmShell(vm, `${bin} 20000 >/dev/null && echo done`, 600_000);
      const offer = await waitForNotification(page, /tick[^:]* loses hits at [\d,]+\/s on e2e-vm: aggregate it in the kernel\?/, {
        timeout: 600_000,
      });
      t.diagnostic(await offer.innerText());
      await offer.locator('.monaco-button', { hasText: 'Aggregate in the Kernel' }).click();
      await probeRow(page, /^tick/).filter({ hasText: 'in the kernel' }).waitFor({ state: 'visible', timeout: 60_000 });
      await untilOnVm(vm, histTriggers, (out) => Number(out.trim()) >= 1, 'the offered probe counted in the kernel', 120_000);
      assert.equal((await hot).out.trim(), 'done');
      await waitForInline(page, /aggregated in the kernel$/, 60_000);

      await page.locator('.action-label[aria-label^="Stop Tracing"]').first().click();
      assert.deepEqual((await waitVmClean(vm, 60_000)).left, [], 'Stop leaves nothing on the VM');
    });
  },
);

test(
  'this machine (no hist triggers): "Aggregate in the Kernel" says the kernel cannot and streams the probe, counting every call; a probe losing hits there is told to narrow, with no offer',
  { timeout: 900_000 },
  async (t) => {
    const ws = localTracingWorkspace(t);
    if (!ws) return;
    const { dir, binary, tracefs } = ws;
    if (readFileSync(join(tracefs, 'README'), 'utf8').includes('hist:')) {
      missing(t, "this machine's kernel has hist triggers: the fallback is for one without");
      return;
    }
    await withCodeServer(t, { workspace: dir, settings: { 'probelens.bufferKb': 4 } }, async ({ page }) => {
      await openFile(page, 'calls.c');
      await clickCodeLens(page, /^Trace$/, { line: definitionLine(dir, 'tick'), timeout: 120_000 });
      await codeLens(page, /Trace: 0 hits · armed/)
        .first()
        .waitFor({ state: 'visible', timeout: 120_000 });
      await showProbeLensView(page);
      await probeMenu(page, /^tick/, 'Aggregate in the Kernel', (text) => text.includes('streamed (no hist triggers)'));
      await waitForNotification(page, /the kernel on local has no hist triggers .*: probes set to aggregate are streamed there instead/, {
        timeout: 120_000,
      });
      await probeRow(page, /^tick/).filter({ hasText: 'streamed (no hist triggers)' }).waitFor({ state: 'visible', timeout: 60_000 });
      await codeLens(page, /Trace: 0 hits · armed/)
        .first()
        .waitFor({ state: 'visible', timeout: 120_000 });

      // Streamed, every call counted, and the line does not claim the kernel counted it.
      const out = parseFixtureOutput(execFileSync(binary, ['3'], { encoding: 'utf8' }));
      assert.equal(out.calls.filter((c) => c.func === 'tick').length, 3);
      const text = await waitForInline(page, /^● 3 hits/, 60_000);
      assert.doesNotMatch(text, /aggregated/);
      const hover = await hoverInline(page, /^● 3 hits/, /Counted:/, 60_000);
      assert.match(hover, /Counted: streamed \(every hit\)/);
      assert.match(hover, /the kernel on local has no hist triggers/);

      // A hot run through a one-page buffer: loss, said with the advice to narrow, and no action to aggregate.
      const deadline = Date.now() + 300_000;
      const toast = page
        .locator('.notifications-toasts .notification-toast')
        .filter({ hasText: /tick[^:]* (loses hits|fires) at [\d,]+\/s.* on local, whose kernel has no hist triggers .*narrow the probe/ })
        .first();
      while (!(await toast.isVisible())) {
        if (Date.now() > deadline) throw new Error('no notification of lost hits within 300 s of hot runs');
        execFileSync(binary, ['20000'], { stdio: 'ignore' });
        await page.waitForTimeout(1_500);
      }
      t.diagnostic(await toast.innerText());
      assert.equal(
        await toast.locator('.monaco-button', { hasText: 'Aggregate in the Kernel' }).count(),
        0,
        'no offer where the kernel cannot',
      );

      // The hover's link turns the probe back to streaming: the file says so (a plain spec string again).
      await hoverInline(page, /^● [\d,]+ hits/, /Stream hits/, 60_000);
      await page.locator('.monaco-hover a', { hasText: 'Stream hits' }).first().click();
      const file = join(dir, '.vscode', 'probelens.json');
      const entries = () => (JSON.parse(readFileSync(file, 'utf8')) as { binaries: Record<string, unknown[]> }).binaries['build/calls'];
      const until0 = Date.now() + 30_000;
      while (typeof entries()[0] !== 'string' && Date.now() < until0) await page.waitForTimeout(250);
      assert.equal(typeof entries()[0], 'string', `the probe streams again (${JSON.stringify(entries())})`);
      await probeRow(page, /^tick/).filter({ hasNotText: 'no hist triggers' }).waitFor({ state: 'visible', timeout: 30_000 });

      await page.locator('.action-label[aria-label^="Stop Tracing"]').first().click();
      const until = Date.now() + 10_000;
      while (uprobeEventsFor(tracefs, binary).length > 0 && Date.now() < until) await page.waitForTimeout(250);
      assert.deepEqual(uprobeEventsFor(tracefs, binary), [], 'Stop leaves nothing armed');
    });
  },
);

// The editor's VM target, as the kernel tests click it: the VM named in an ssh config (its host key checked against
// known_hosts), added from the Probes view, traced on alone; the Probes view's rows read as text; and a workspace
// holding a file of the VM kernel's own source, mapped from where a binary's DWARF says it was built.
import assert from 'node:assert/strict';
import { copyFileSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import type { TestContext } from 'node:test';
import type { Page } from 'playwright-core';
import { scanBinary, type BinaryScan } from '../../src/core/workspace/scan';
import { kernelSourceFiles } from '../helpers/kernelSource';
import { missing } from '../helpers/require';
import type { VmConnection } from '../helpers/vm';
import { VmUnavailable } from '../helpers/vmImage';
import { addSshTarget, quickInputRow } from './harness/workbench';

/** The Probes view's rows, as `label · description`. */
export async function viewRows(page: Page): Promise<string[]> {
  return page.evaluate(() =>
    [...document.querySelectorAll('.pane-body .monaco-list-row')].map((r) =>
      [r.querySelector('.label-name'), r.querySelector('.label-description')]
        .map((e) => (e?.textContent ?? '').replace(/\s+/g, ' ').trim())
        .join(' · '),
    ),
  );
}

export async function waitRow(page: Page, want: RegExp, ms: number): Promise<string> {
  const deadline = Date.now() + ms;
  for (;;) {
    const rows = await viewRows(page);
    const hit = rows.find((r) => want.test(r));
    if (hit) return hit;
    if (Date.now() > deadline) throw new Error(`no Probes view row matching ${want} within ${ms} ms (rows: ${JSON.stringify(rows)})`);
    await page.waitForTimeout(300);
  }
}

/** An ssh config naming the VM `e2e-vm` (root, its key, its known host key checked). */
export function vmSshConfig(vm: VmConnection, scratch: string): string {
  const sshConfig = join(scratch, 'ssh_config');
  writeFileSync(
    sshConfig,
    [
      'Host e2e-vm',
      `  HostName ${vm.host}`,
      `  Port ${vm.port}`,
      '  User root',
      `  IdentityFile ${vm.identityFile}`,
      '  IdentitiesOnly yes',
      `  UserKnownHostsFile ${vm.knownHostsFile}`,
      '  StrictHostKeyChecking yes',
      '',
    ].join('\n'),
  );
  return sshConfig;
}

/** Probes view → "Add SSH Target…": the VM from the ssh config, as root; the workspace is not mirrored there. */
export async function addVmTarget(page: Page): Promise<void> {
  await addSshTarget(page, 'e2e-vm');
  await waitRow(page, /e2e-vm/, 30_000);
}

/** "ProbeLens: Select Targets": the VM only (this machine unticked). */
export async function traceOnVmOnly(page: Page): Promise<void> {
  // (Its quick pick stays open after the palette closes: the palette row is clicked by hand.)
  await page.keyboard.press('F1');
  await page.locator('.quick-input-widget .quick-input-box input').fill('>ProbeLens: Select Targets');
  await quickInputRow(page, /Select Targets/).click();
  const picker = page.locator('.quick-input-widget').filter({ hasText: 'trace on these targets' });
  await picker.waitFor({ state: 'visible', timeout: 30_000 });
  await quickInputRow(page, 'local').click();
  await page.locator('.quick-input-widget .quick-input-box input').press('Enter');
  await picker.waitFor({ state: 'hidden', timeout: 30_000 });
}

/**
 * A scratch workspace (`SCRATCH/linux`) holding `file` of the VM kernel's own source (Debian's linux-source of exactly
 * its version, test/helpers/kernelSource.ts), the folder `binary`'s DWARF names as where it was built (a path
 * relative to the build's compilation directory: to map to the workspace), and the 1-based line `definition`
 * matches in it. Undefined after missing() when the source cannot be had (under CI=true: failed).
 */
export async function kernelSourceWorkspace(
  t: TestContext,
  vm: VmConnection,
  opts: { file: string; binary: string; definition: RegExp; prefix: string },
): Promise<{ ws: string; scratch: string; buildDir: string; line: number; scan: BinaryScan } | undefined> {
  const { file } = opts;
  let src: string;
  try {
    const got = kernelSourceFiles(vm.kernelPackage.split(' ')[1], [file]);
    if (got.extractMs) t.diagnostic(`fetched ${file} of ${vm.kernelPackage} in ${got.extractMs} ms`);
    src = got.dir;
  } catch (e) {
    if (!(e instanceof VmUnavailable)) throw e;
    missing(t, e.message);
    return undefined;
  }
  const scan = await scanBinary(opts.binary);
  assert.ok(scan, `${opts.binary} scans as a binary`);
  const built = [...scan.units].find((u) => u === file || u.endsWith(`/${file}`));
  assert.ok(built, `${opts.binary} has a unit for ${file} (units: ${[...scan.units].slice(0, 20).join(', ')}…)`);
  const buildDir = built.slice(0, -file.length - 1) || '.';
  t.diagnostic(`the DWARF names ${built}: mapping ${buildDir} to the workspace`);
  const line =
    readFileSync(join(src, file), 'utf8')
      .split('\n')
      .findIndex((l) => opts.definition.test(l)) + 1;
  assert.ok(line > 0, `${opts.definition} is in ${file}`);
  const scratch = mkdtempSync(join(tmpdir(), opts.prefix));
  t.after(() => rmSync(scratch, { recursive: true, force: true }));
  const ws = join(scratch, 'linux');
  mkdirSync(dirname(join(ws, file)), { recursive: true });
  copyFileSync(join(src, file), join(ws, file));
  return { ws, scratch, buildDir, line, scan };
}

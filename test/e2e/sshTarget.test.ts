// An SSH target added from the Probes view (a real sshd on 127.0.0.1 whose host key is not yet known): the
// unknown-key modal shows the SHA256 fingerprint, accepting records the key and arms the probe there, and hits
// from both targets (this machine and the SSH host) add up in the inline result. Stop leaves nothing armed.
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { fingerprintSha256 } from '../../src/core/ssh/knownHosts';
import { parseFixtureOutput } from '../fixtures/output';
import { requireSshd } from '../helpers/sshd';
import { withCodeServer } from './harness/session';
import { addSshTarget, clickCodeLens, codeLens, openFile } from './harness/workbench';
import { buildCWorkspace, definitionLine, localTracingPrerequisites, uprobeEventsFor, waitForInline } from './inlineResults';

test('SSH target: unknown host key modal with its fingerprint, accept, probe armed there, hits arrive', { timeout: 900_000 }, async (t) => {
  const tracefs = localTracingPrerequisites(t);
  if (!tracefs) return;
  const sshd = await requireSshd(t);
  if (!sshd) return;
  const scratch = mkdtempSync(join(tmpdir(), 'probelens-e2e-ssh-'));
  t.after(() => rmSync(scratch, { recursive: true, force: true }));
  const { dir, binary } = buildCWorkspace(scratch);
  const knownHosts = join(scratch, 'known_hosts');
  const sshConfig = join(scratch, 'ssh_config');
  writeFileSync(
    sshConfig,
    [
      'Host e2e-target',
      `  HostName ${sshd.host}`,
      `  Port ${sshd.port}`,
      '  User root',
      `  IdentityFile ${sshd.identityFile}`,
      '  IdentitiesOnly yes',
      `  UserKnownHostsFile ${knownHosts}`,
      '  StrictHostKeyChecking ask',
      '',
    ].join('\n'),
  );
  const fingerprint = fingerprintSha256(Buffer.from(sshd.hostKey.split(' ')[1], 'base64'));

  await withCodeServer(t, { workspace: dir, settings: { 'probelens.ssh.configFile': sshConfig } }, async ({ page }) => {
    await openFile(page, 'calls.c');
    await codeLens(page, /^Trace$/)
      .first()
      .waitFor({ state: 'visible', timeout: 120_000 });

    // Probes view → "Add SSH Target…": the host from the ssh config, run as the login user, same paths.
    await addSshTarget(page, 'e2e-target');
    await page.locator('.monaco-list-row').filter({ hasText: 'e2e-target' }).first().waitFor({ state: 'visible', timeout: 30_000 });

    // Trace starts sessions on both active targets; the SSH one stops at the unknown host key.
    await clickCodeLens(page, /^Trace$/, { line: definitionLine(dir, 'add_ints'), timeout: 60_000 });
    const dialog = page.locator('.monaco-dialog-box').first();
    await dialog.waitFor({ state: 'visible', timeout: 60_000 });
    const text = await dialog.innerText();
    assert.match(text, /authenticity of host/);
    assert.ok(text.includes(fingerprint), `the modal shows the fingerprint ${fingerprint} (it said: ${text})`);
    await dialog.locator('.monaco-button', { hasText: 'Accept and Connect' }).click();
    await codeLens(page, /Trace: 0 hits · armed/)
      .first()
      .waitFor({ state: 'visible', timeout: 120_000 });
    assert.ok(
      existsSync(knownHosts) && readFileSync(knownHosts, 'utf8').includes(sshd.hostKey.split(' ')[1]),
      'the accepted key is recorded',
    );

    const out = parseFixtureOutput(execFileSync(binary, ['3'], { encoding: 'utf8' }));
    const n = out.calls.filter((c) => c.func === 'add_ints').length;
    // Both targets are this machine: each session sees every call.
    await waitForInline(page, new RegExp(`^● ${2 * n} hits · last a=3 b=-7$`), 60_000);

    await page.locator('.action-label[aria-label^="Stop Tracing"]').first().click();
    const deadline = Date.now() + 10_000;
    while (uprobeEventsFor(tracefs, binary).length > 0 && Date.now() < deadline) await page.waitForTimeout(250);
    assert.deepEqual(uprobeEventsFor(tracefs, binary), [], 'no uprobe of either session is left after Stop');
  });
});

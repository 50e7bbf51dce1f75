// The editor on a kernel tree's loadable module: a workspace holding the VM kernel's own net/key/af_key.c (Debian's
// linux-source of exactly that version) and af_key.ko with its DWARF (the -dbg package's, the build the VM has
// loaded), found by discovery as a kernel module without any setting but the DWARF's build directory mapped to the
// workspace. The "Trace" lens above pfkey_create arms on the VM over SSH as af_key:pfkey_create (the session
// compares the .ko's build-id with the loaded module's), and the count beside the line rises by exactly the PF_KEY
// sockets a program in the VM opens (nothing else on the VM creates one). After Stop the VM holds nothing.
import assert from 'node:assert/strict';
import { copyFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import { requireModuleKo, requireVm, vmShell, waitVmClean } from '../helpers/vm';
import { installStatic } from '../vm/kernelCli';
import { e2ePrerequisites, withCodeServer } from './harness/session';
import { clickCodeLens, codeLens, openFile } from './harness/workbench';
import { waitForInline } from './inlineResults';
import { addVmTarget, kernelSourceWorkspace, traceOnVmOnly, vmSshConfig, waitRow } from './vmTarget';

const FUNC = 'pfkey_create';
const FILE = 'net/key/af_key.c';
const SOCKETS = 7;
const PROGRAM = '/tmp/probelens-e2e-pfkey';

const PFKEY_SOURCE = `#include <stdio.h>
#include <sys/socket.h>
#include <unistd.h>
int main(void) {
  int made = 0;
  for (int i = 0; i < ${SOCKETS}; i++) {
    int fd = socket(15 /* AF_KEY */, SOCK_RAW, 2 /* PF_KEY_V2 */);
    if (fd >= 0) made++, close(fd);
  }
  printf("made %d\\n", made);
  return 0;
}
`;

test(
  "kernel tree with a module: discovery finds af_key.ko, the Trace lens above pfkey_create arms on the VM's loaded module and counts exactly the program's PF_KEY sockets",
  { timeout: 1_800_000 },
  async (t) => {
    if (!e2ePrerequisites(t)) return;
    const vm = await requireVm(t);
    if (!vm) return;
    const ko = await requireModuleKo(t, vm, 'af_key');
    if (!ko) return;
    const tree = await kernelSourceWorkspace(t, vm, {
      file: FILE,
      binary: ko.path,
      definition: new RegExp(`^static int ${FUNC}\\(`),
      prefix: 'probelens-e2e-module-',
    });
    if (!tree) return;
    const { ws, scratch, buildDir, line } = tree;
    assert.equal(tree.scan.kind, 'kernel-module', `${ko.path} scans as a kernel module`);
    // Where a kernel build leaves it: beside its source, mode 0644.
    copyFileSync(ko.path, join(ws, 'net', 'key', 'af_key.ko'));
    if (!(await installStatic(t, vm, PROGRAM, PFKEY_SOURCE))) return;
    const sshConfig = vmSshConfig(vm, scratch);
    assert.deepEqual((await waitVmClean(vm, 60_000)).left, [], 'the VM is clean before the test');

    const settings = { 'probelens.ssh.configFile': sshConfig, 'probelens.pathMappings': { [buildDir]: '${workspaceFolder}' } };
    await withCodeServer(t, { workspace: ws, settings }, async ({ page }) => {
      const t0 = Date.now();
      await openFile(page, FILE);
      await addVmTarget(page);
      await traceOnVmOnly(page);
      // (Lenses exist only for lines on screen: clickCodeLens moves to the function's line first.)
      await clickCodeLens(page, /^Trace$/, { line, timeout: 300_000 });
      t.diagnostic(`the lens above ${FUNC} clicked ${Date.now() - t0} ms after opening ${FILE}`);
      await codeLens(page, /Trace: [\d,]+ hits? · armed/)
        .first()
        .waitFor({ state: 'visible', timeout: 300_000 });
      const session = await waitRow(page, /^af_key\.ko · armed/, 60_000);
      t.diagnostic(`armed on the VM after ${Date.now() - t0} ms; Probes view: ${session}`);
      const before = Number(/^● ([\d,]+)/.exec(await waitForInline(page, /^● [\d,]+ hits?/, 60_000))![1].replace(/,/g, ''));
      assert.equal(before, 0, 'nothing on the VM creates PF_KEY sockets but the test');

      const r = await vmShell(vm, PROGRAM);
      assert.equal(r.out.trim(), `made ${SOCKETS}`, r.err);
      const text = await waitForInline(page, new RegExp(`^● ${SOCKETS} hits\\b`), 60_000);
      t.diagnostic(`inline after ${SOCKETS} sockets: ${text}`);
      // No more than that: a second look a moment later shows the same count.
      await page.waitForTimeout(2_000);
      assert.match(await waitForInline(page, /^● [\d,]+ hits?/, 10_000), new RegExp(`^● ${SOCKETS} hits\\b`));

      await page.locator('.action-label[aria-label^="Stop Tracing"]').first().click();
      const clean = await waitVmClean(vm, 120_000);
      t.diagnostic(`the VM clean ${clean.ms} ms after Stop`);
      assert.deepEqual(clean.left, [], 'Stop leaves nothing on the VM');
    });
  },
);

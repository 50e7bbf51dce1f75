// The VM kernel read from its own DWARF: the `-dbg` package's vmlinux (test/helpers/vmImage.ts vmDebugKernel) is the
// booted kernel's build (same GNU build-id as its /sys/kernel/notes).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { statSync } from 'node:fs';
import { requireVm, requireVmlinux, vmKernelBuildId } from '../helpers/vm';

const TIMEOUT = { timeout: 900_000 };

test("the dbg package's vmlinux is the VM kernel's build: same GNU build-id as its /sys/kernel/notes", TIMEOUT, async (t) => {
  const vm = await requireVm(t);
  if (!vm) return;
  const k = await requireVmlinux(t, vm);
  if (!k) return;
  assert.match(k.buildId, /^[0-9a-f]{40}$/);
  assert.equal(k.buildId, await vmKernelBuildId(vm));
  assert.ok(statSync(k.path).size > 300 << 20, `${k.path} is the full image with DWARF`);
});

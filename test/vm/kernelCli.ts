// Shared by the VM tests that run `probelens trace VMLINUX …` against the VM's kernel: one index cache for every CLI
// a test file starts (the vmlinux is indexed once), the CLI armed on the VM, and its JSON hits.
import type { TestContext } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { loadIndex } from '../../src/core/index/load';
import { isolatedEnv, startCli, sleep, type CliRun } from '../integration/engine-harness';
import { vmCliFlags, vmShell, waitVmClean, type VmConnection } from '../helpers/vm';

// The CLI loads the vmlinux's index from the cache warmIndex filled, reads the image and connects: bounded, generous.
const ARM_MS = 300_000;

const CACHE = mkdtempSync(join(tmpdir(), 'pl-kernel-cache-'));
process.on('exit', () => rmSync(CACHE, { recursive: true, force: true }));
let warmed: Promise<unknown> | undefined;

/** Indexes the vmlinux once into this process's cache, which every CLI started by kernelEnv reads. */
export const warmIndex = (vmlinux: string): Promise<unknown> =>
  (warmed ??= loadIndex(vmlinux, { inWorker: true, cacheDir: join(CACHE, 'probelens', 'index') }));

export const kernelEnv = (t: TestContext): NodeJS.ProcessEnv => ({ ...isolatedEnv(t), XDG_CACHE_HOME: CACHE });

/** Starts `probelens trace VMLINUX SPECS… --json` on the VM and returns once every spec's event is enabled there. */
export async function armOnVm(t: TestContext, vm: VmConnection, vmlinux: string, specs: string[], extra: string[] = []): Promise<CliRun> {
  await warmIndex(vmlinux);
  assert.deepEqual((await waitVmClean(vm, 60_000)).left, [], 'the VM is clean before the test');
  const cli = startCli(t, ['trace', vmlinux, ...specs, ...extra, '--json', ...vmCliFlags(vm)], kernelEnv(t));
  // With --json the CLI says nothing when armed: armed is every event of its instance enabled on the VM.
  const until = Date.now() + ARM_MS;
  for (;;) {
    const r = await vmShell(vm, 'cat /sys/kernel/tracing/instances/probelens_*/events/probelens_*/*/enable 2>/dev/null; true');
    const enabled = r.out.split('\n').filter((l) => l.trim() === '1').length;
    if (enabled >= specs.length) return cli;
    if (cli.child.exitCode !== null || cli.child.signalCode !== null || Date.now() > until)
      throw new Error(
        `the CLI did not arm ${specs.length} events on the VM (${enabled} enabled)\nstdout:\n${cli.stdout()}\nstderr:\n${cli.stderr()}`,
      );
    await sleep(500);
  }
}

export interface JsonHit {
  probe: string;
  kind: string;
  pid: number;
  args: Record<string, unknown>;
  retval?: unknown;
  site?: { kind: string; address: string; caller?: string };
}

export const hits = (cli: CliRun): JsonHit[] =>
  cli
    .stdout()
    .split('\n')
    .filter((l) => l.startsWith('{'))
    .map((l) => JSON.parse(l) as JsonHit);

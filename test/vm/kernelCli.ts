// Shared by the VM tests that run `probelens trace VMLINUX …` (or `trace kernel …`, no vmlinux) against the VM's kernel:
// one index cache for every CLI a test file starts (the vmlinux is indexed once), the CLI armed on the VM, its JSON
// hits, and a program in the VM whose open() calls the tests capture; and, for every VM test, waiting on the VM for
// what a CLI does there, and building a static program for it.
import type { TestContext } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { loadIndex, type LoadedIndex } from '../../src/core/index/load';
import { isolatedEnv, scratch, startCli, sleep, type CliRun } from '../integration/engine-harness';
import { missing } from '../helpers/require';
import { vmCliFlags, vmShell, vmSshArgs, waitVmClean, type VmConnection } from '../helpers/vm';

/** Polls the VM until `ready` holds for what `cmd` prints; fails naming the CLI's output when it exits first. */
export async function waitOnVm(vm: VmConnection, cli: CliRun, cmd: string, ready: (out: string) => boolean, what: string): Promise<void> {
  const until = Date.now() + ARM_MS;
  for (;;) {
    const r = await vmShell(vm, `${cmd} 2>/dev/null; true`);
    if (ready(r.out)) return;
    if (cli.child.exitCode !== null || cli.child.signalCode !== null || Date.now() > until)
      throw new Error(`${what} did not happen on the VM\nstdout:\n${cli.stdout()}\nstderr:\n${cli.stderr()}`);
    await sleep(500);
  }
}

/** Waits until an aggregating session's triggers are in place on the VM: its synthetic latency event's goes last. */
export const waitAggregating = (vm: VmConnection, cli: CliRun): Promise<void> =>
  waitOnVm(
    vm,
    cli,
    "cat /sys/kernel/tracing/instances/probelens_*/events/synthetic/*/trigger | grep -c '^hist:keys=lat.log2'",
    (out) => Number(out.trim()) >= 1,
    'the aggregating session arming',
  );

/** Until a streaming session has enabled (at least) `events` events in its instance (an aggregating one never does). */
export const waitStreaming = (vm: VmConnection, cli: CliRun, events = 2): Promise<void> =>
  waitOnVm(
    vm,
    cli,
    'cat /sys/kernel/tracing/instances/probelens_*/events/probelens_*/*/enable',
    (out) => out.split('\n').filter((l) => l.trim() === '1').length >= events,
    'the streaming session arming',
  );

/** The file the opener opens, and how many times. */
export const KNOWN = '/tmp/probelens-kernel-known';
const OPENER = '/tmp/probelens-opener';
export const OPENS = 3;

// The CLI loads the vmlinux's index from the cache warmIndex filled, reads the image and connects: bounded, generous.
const ARM_MS = 300_000;

const CACHE = mkdtempSync(join(tmpdir(), 'pl-kernel-cache-'));
process.on('exit', () => rmSync(CACHE, { recursive: true, force: true }));
let warmed: Promise<LoadedIndex> | undefined;

/** Indexes the vmlinux once into this process's cache, which every CLI started by kernelEnv reads. */
export const warmIndex = (vmlinux: string): Promise<LoadedIndex> =>
  (warmed ??= loadIndex(vmlinux, { inWorker: true, cacheDir: join(CACHE, 'probelens', 'index') }));

export const kernelEnv = (t: TestContext): NodeJS.ProcessEnv => ({ ...isolatedEnv(t), XDG_CACHE_HOME: CACHE });

/**
 * Starts `probelens trace VMLINUX SPECS… --json` on the VM and returns once every spec's event is enabled there
 * (`kernel` for VMLINUX: the VM kernel's own BTF and kallsyms, nothing to index).
 */
export async function armOnVm(t: TestContext, vm: VmConnection, vmlinux: string, specs: string[], extra: string[] = []): Promise<CliRun> {
  if (vmlinux !== 'kernel') await warmIndex(vmlinux);
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

/**
 * A program in the VM that prints its pid, waits for a line on stdin, then opens `path` OPENS times with open(2),
 * printing each fd it got. Built static here and copied over SSH.
 */
export const installOpener = (t: TestContext, vm: VmConnection): Promise<boolean> =>
  installStatic(
    t,
    vm,
    OPENER,
    `#include <fcntl.h>
#include <stdio.h>
#include <unistd.h>
int main(int argc, char **argv) {
  char go;
  printf("pid %d\\n", getpid());
  fflush(stdout);
  if (argc < 2 || read(0, &go, 1) != 1) return 2;
  for (int i = 0; i < ${OPENS}; i++) {
    int fd = open(argv[1], O_RDONLY);
    printf("fd %d\\n", fd);
    fflush(stdout);
  }
  return 0;
}
`,
    `echo hello > ${KNOWN}`,
  );

/**
 * Builds the C program `source` static here and copies it to `remote` in the VM (then runs the fixed shell text
 * `then` there, if any). False after marking the test skipped (under CI=true: failed) when no static libc is here.
 */
export async function installStatic(t: TestContext, vm: VmConnection, remote: string, source: string, then = 'true'): Promise<boolean> {
  const dir = scratch(t, 'pl-vm-program-');
  writeFileSync(join(dir, 'program.c'), source);
  const cc = spawnSync('gcc', ['-O2', '-static', '-o', join(dir, 'program'), join(dir, 'program.c')], { encoding: 'utf8' });
  if (cc.error || cc.status !== 0) {
    missing(t, `gcc with a static libc (builds the program run in the VM): ${cc.error?.message ?? cc.stderr}`);
    return false;
  }
  const copy = spawnSync('ssh', [...vmSshArgs(vm), '--', `cat > ${remote} && chmod +x ${remote} && ${then}`], {
    input: readFileSync(join(dir, 'program')),
  });
  assert.equal(copy.status, 0, String(copy.stderr));
  return true;
}

/** Starts the opener in the VM; `go()` lets it open; `done` resolves with the fds it printed; `kill()` ends it. */
export function startOpener(vm: VmConnection): { pid: Promise<number>; go(): void; done: Promise<number[]>; kill(): void } {
  const child = spawn('ssh', [...vmSshArgs(vm), '--', `${OPENER} ${KNOWN}`], { stdio: ['pipe', 'pipe', 'pipe'] });
  let out = '';
  child.stdout.setEncoding('utf8').on('data', (d: string) => (out += d));
  const pid = new Promise<number>((resolve, reject) => {
    const check = (): void => {
      const m = /^pid (\d+)$/m.exec(out);
      if (m) resolve(Number(m[1]));
    };
    child.stdout.on('data', check);
    child.once('close', () => reject(new Error(`the opener ended before printing its pid: ${out}`)));
  });
  const done = new Promise<number[]>((resolve) =>
    child.once('close', () => resolve([...out.matchAll(/^fd (-?\d+)$/gm)].map((m) => Number(m[1])))),
  );
  return { pid, go: () => child.stdin.end('g'), done, kill: () => child.kill() };
}

/**
 * Lets the opener open, stops the CLI once it has seen every return, and checks what it captured of the opener's
 * pid: OPENS entries with the known path, AT_FDCWD and O_RDONLY (with the kernel's O_LARGEFILE), and returns whose
 * values are the fds the opener got.
 */
export async function expectOpensCaptured(cli: CliRun, opener: ReturnType<typeof startOpener>, pid: number): Promise<void> {
  opener.go();
  const fds = await opener.done;
  assert.equal(fds.length, OPENS);
  assert.ok(
    fds.every((fd) => fd >= 0),
    `the opens succeeded: ${fds.join(' ')}`,
  );
  const until = Date.now() + 120_000;
  const mine = (): JsonHit[] => hits(cli).filter((h) => h.pid === pid);
  while (mine().filter((h) => h.kind === 'return').length < OPENS && Date.now() < until) await sleep(250);
  cli.child.kill('SIGINT');
  await cli.exit;
  const entries = mine().filter((h) => h.kind === 'entry');
  const returns = mine().filter((h) => h.kind === 'return');
  assert.equal(entries.length, OPENS, cli.stdout());
  assert.equal(returns.length, OPENS, cli.stdout());
  for (const e of entries) {
    assert.equal(e.args.filename, KNOWN);
    assert.equal(e.args.dfd, -100, 'AT_FDCWD');
    // O_RDONLY, with the O_LARGEFILE the kernel adds on 64-bit.
    assert.equal(Number(e.args.how_flags) & 0o3, 0);
    assert.equal(Number(e.args.how_flags) & 0x8000, 0x8000);
  }
  assert.deepEqual(
    returns.map((r) => r.retval),
    fds,
    'each return value is the fd the program got',
  );
}

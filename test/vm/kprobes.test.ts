// Kernel probes on the VM's kernel (it has kprobe_events; this machine's has not): the definitions
// src/core/probes/kprobe.ts builds for do_sys_openat2 are written by the agent to kprobe_events over SSH, the kernel
// takes them, and they are gone after a stop and after kill -9 of the client.
//
// Capturing values with these probes, compiled from the kernel's own DWARF, through `trace --pid`:
// test/vm/kernelDwarf.test.ts.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { join } from 'node:path';
import { TracefsAgent } from '../../src/core/tracefs/agentClient';
import { requireVm, vmLeftovers, vmShell, waitVmClean } from '../helpers/vm';
import { connectVm, openat2Definitions } from './kprobeHarness';

const TIMEOUT = { timeout: 600_000 };
const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

/** Our group's lines of kprobe_events (a return probe is listed with its maxactive: `r10:GROUP/EVENT`). */
async function kprobeLines(vm: Parameters<typeof vmShell>[0], group: string): Promise<string[]> {
  const r = await vmShell(vm, 'cat /sys/kernel/tracing/kprobe_events');
  assert.equal(r.code, 0, r.err);
  return r.out.split('\n').filter((l) => new RegExp(`^[pr]\\d*:${group}/`).test(l));
}

test(
  'the agent writes kprobe definitions (do_sys_openat2 dfd filename:ustring how->flags, and its return) to kprobe_events and removes them at stop',
  TIMEOUT,
  async (t) => {
    const vm = await requireVm(t);
    if (!vm) return;
    assert.deepEqual((await waitVmClean(vm, 60_000)).left, [], 'the VM is clean before the test');
    const target = await connectVm(vm);
    t.after(() => target.close());
    const agent = await TracefsAgent.start(target);
    const d = openat2Definitions(agent.group);
    assert.match(d.entry, /^p:\S+\/openat2 do_sys_openat2\+0 dfd=\$arg1:s32 filename=\+0\(\$arg2\):ustring how_flags=\+0\(\$arg3\):x64$/);
    assert.match(d.ret, /^r:\S+\/openat2_ret do_sys_openat2 retval=\$retval:s64$/);
    await agent.define(d.entry);
    await agent.define(d.ret);
    const lines = await kprobeLines(vm, agent.group);
    assert.equal(lines.length, 2, lines.join('\n'));
    // The kernel kept our fetchargs (with the session's sentinel framing around them).
    for (const arg of [' dfd=$arg1:s32 ', ' filename=+0($arg2):ustring ', ' how_flags=+0($arg3):x64 '])
      assert.ok(lines[0].includes(arg), `${arg} in ${lines[0]}`);
    assert.match(lines[1], /^r\d*:\S+ do_sys_openat2 .*retval=\$retval:s64/);
    // The kernel's verdict reaches the caller: an unknown symbol is refused.
    await assert.rejects(agent.define(`p:${agent.group}/nope no_such_kernel_function_pl+0`), /rejected/);
    await agent.stop();
    assert.deepEqual(await vmLeftovers(vm), []);
  },
);

test('kill -9 of a client with kprobes defined on the VM: the VM holds no kprobe, instance or reader afterwards', TIMEOUT, async (t) => {
  const vm = await requireVm(t);
  if (!vm) return;
  assert.deepEqual((await waitVmClean(vm, 60_000)).left, [], 'the VM is clean before the test');
  const child = spawn(process.execPath, ['--import', 'tsx', join(__dirname, 'kprobeClientProcess.ts'), JSON.stringify(vm)], {
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  t.after(() => child.kill('SIGKILL'));
  let out = '';
  let err = '';
  child.stdout.setEncoding('utf8').on('data', (s: string) => (out += s));
  child.stderr.setEncoding('utf8').on('data', (s: string) => (err += s));
  const until = Date.now() + 240_000;
  while (!out.includes('\n') && child.exitCode === null && Date.now() < until) await sleep(100);
  const group = out.trim();
  assert.match(group, /^probelens_/, `the client defined its probes: ${err}`);
  assert.equal((await kprobeLines(vm, group)).length, 2);
  child.kill('SIGKILL');
  const { left, ms } = await waitVmClean(vm, 60_000);
  assert.deepEqual(left, [], `left on the VM after ${ms} ms`);
  t.diagnostic(`VM clean of kprobes ${ms} ms after kill -9 of the client`);
});

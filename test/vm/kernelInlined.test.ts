// An inlined kernel function counted exactly on the VM kernel: `fdget_pos` (include/linux/file.h, static inline) has
// no out-of-line code in Debian's 6.1 kernel; it is inlined into ksys_read and ksys_write (fs/read_write.c: each
// read(2) and write(2) calls it once, before anything can fail) and a dozen other system calls (lseek, readv,
// writev, getdents…). `probelens trace VMLINUX fdget_pos --pid PID` arms every inlined copy at `HOLDER+OFFSET`, and a
// program in the VM that makes READS read(2) and WRITES write(2) calls is seen exactly READS + WRITES times, each
// at the copy inside the system call it made. And the kernel's own rule for notrace functions, which kernel.ts
// applies before writing: no offset of one is taken, an offset inside a traceable holder is.
import { test, type TestContext } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { scratch, sleep } from '../integration/engine-harness';
import { missing } from '../helpers/require';
import { requireVm, requireVmlinux, vmShell, vmSshArgs, waitVmClean, type VmConnection } from '../helpers/vm';
import { armOnVm, hits } from './kernelCli';
import { openBinary } from '../../src/core/binary';
import { kernelImage, kernelRefusal } from '../../src/core/probes/kernel';
import { decodeX86Flow } from '../../src/core/probes/x86decoder';

const TIMEOUT = { timeout: 900_000 };
const PROGRAM = '/tmp/probelens-readwrite';
const DATA = '/tmp/probelens-readwrite-data';
const FENCE = '/tmp/probelens-readwrite-fence';
const READS = 5;
const WRITES = 7;

/**
 * A program that prints its pid, opens its data file, waits for a line on stdin, then makes READS reads and
 * WRITES writes of one byte on that file, then opens FENCE (the test's sign that every call before it was made).
 * It makes no other read or write after the wait: it ends without printing.
 */
async function install(t: TestContext, vm: VmConnection): Promise<boolean> {
  const dir = scratch(t, 'pl-readwrite-');
  writeFileSync(
    join(dir, 'rw.c'),
    `#include <fcntl.h>
#include <stdio.h>
#include <unistd.h>
int main(void) {
  char go, c;
  int fd = open("${DATA}", O_RDWR);
  if (fd < 0) return 3;
  printf("pid %d\\n", getpid());
  fflush(stdout);
  if (read(0, &go, 1) != 1) return 2;
  for (int i = 0; i < ${READS}; i++) if (read(fd, &c, 1) != 1) return 4;
  for (int i = 0; i < ${WRITES}; i++) if (write(fd, "w", 1) != 1) return 5;
  return open("${FENCE}", O_RDONLY) < 0 ? 6 : 0;
}
`,
  );
  const cc = spawnSync('gcc', ['-O2', '-static', '-o', join(dir, 'rw'), join(dir, 'rw.c')], { encoding: 'utf8' });
  if (cc.error || cc.status !== 0) {
    missing(t, `gcc with a static libc (builds the program run in the VM): ${cc.error?.message ?? cc.stderr}`);
    return false;
  }
  const copy = spawnSync(
    'ssh',
    [...vmSshArgs(vm), '--', `cat > ${PROGRAM} && chmod +x ${PROGRAM} && echo 0123456789 > ${DATA} && echo fence > ${FENCE}`],
    { input: readFileSync(join(dir, 'rw')) },
  );
  assert.equal(copy.status, 0, String(copy.stderr));
  return true;
}

test(
  `trace VMLINUX fdget_pos (inlined only): a program's ${READS} reads and ${WRITES} writes are counted exactly, each at the copy in ksys_read or ksys_write`,
  TIMEOUT,
  async (t) => {
    const vm = await requireVm(t);
    if (!vm) return;
    const k = await requireVmlinux(t, vm);
    if (!k || !(await install(t, vm))) return;
    const child = spawn('ssh', [...vmSshArgs(vm), '--', PROGRAM], { stdio: ['pipe', 'pipe', 'pipe'] });
    let out = '';
    child.stdout.setEncoding('utf8').on('data', (d: string) => (out += d));
    const exited = new Promise<number | null>((resolve) => child.once('close', (code) => resolve(code)));
    const pid = await new Promise<number>((resolve, reject) => {
      child.stdout.on('data', () => {
        const m = /^pid (\d+)$/m.exec(out);
        if (m) resolve(Number(m[1]));
      });
      void exited.then(() => reject(new Error(`the program ended before printing its pid: ${out}`)));
    });
    // The fence fetches an argument, so it is an event of its own rather than a point of fdget_pos's.
    const cli = await armOnVm(t, vm, k.path, ['fdget_pos', 'do_sys_openat2 dfd'], ['--pid', String(pid)]);
    const defined = (await vmShell(vm, 'cat /sys/kernel/tracing/kprobe_events')).out;
    // Every inlined copy is armed at its holder's symbol plus an offset; fdget_pos has no symbol of its own.
    assert.match(defined, / ksys_read\+\d+ /, defined);
    assert.match(defined, / ksys_write\+\d+ /, defined);
    assert.doesNotMatch(defined, / fdget_pos\+/, defined);
    child.stdin.end('g');
    assert.equal(await exited, 0, `the program's reads and writes succeeded (${out})`);
    // The fence: the program's open after its last write. Its thread's hits arrive in time order.
    const mine = () => hits(cli).filter((h) => h.pid === pid);
    const until = Date.now() + 120_000;
    while (!mine().some((h) => h.probe === 'do_sys_openat2') && Date.now() < until) await sleep(250);
    cli.child.kill('SIGINT');
    await cli.exit;
    const calls = mine().filter((h) => h.probe === 'fdget_pos');
    assert.ok(
      mine().some((h) => h.probe === 'do_sys_openat2'),
      `the fence open arrived: ${cli.stdout()}\n${cli.stderr()}`,
    );
    assert.equal(calls.length, READS + WRITES, cli.stdout());
    const at = (caller: string) => calls.filter((h) => h.site?.kind === 'inlined' && h.site.caller === caller).length;
    assert.equal(at('ksys_read'), READS, 'each read(2) at the copy inlined into ksys_read');
    assert.equal(at('ksys_write'), WRITES, 'each write(2) at the copy inlined into ksys_write');
    const { left, ms } = await waitVmClean(vm, 60_000);
    assert.deepEqual(left, [], `left on the VM ${ms} ms after the CLI exited`);
  },
);

test(
  'the kernel refuses a kprobe at any offset of a notrace function and takes one inside a traceable holder, as kernel.ts says before writing',
  TIMEOUT,
  async (t) => {
    const vm = await requireVm(t);
    if (!vm) return;
    const vmlinux = await requireVmlinux(t, vm);
    if (!vmlinux) return;
    const k = kernelImage(await openBinary(vmlinux.path))!;
    // The second instruction of a function: an instruction boundary, not its entry.
    const second = (name: string): bigint => {
      const sym = k.funcs.find((f) => f.name === name)!;
      const insns = decodeX86Flow(k.image.elf.bytesAt(sym.address, 32), sym.address);
      return insns[1].address - sym.address;
    };
    const notrace = second('trace_clock_local');
    // Where fdget_pos's copy inlined into ksys_read begins (perf probe places it there too).
    const traced = 37n;
    const at = (name: string, off: bigint) => k.funcs.find((f) => f.name === name)!.address + off;
    assert.match(
      kernelRefusal(k, at('trace_clock_local', notrace), false) ?? '',
      /is inside trace_clock_local, which does not call __fentry__/,
    );
    assert.equal(kernelRefusal(k, at('ksys_read', traced), false), undefined);
    const write = (line: string) => vmShell(vm, `echo '${line}' >> /sys/kernel/tracing/kprobe_events`);
    try {
      const refused = await write(`p:probelens_notrace/inside trace_clock_local+${notrace}`);
      assert.notEqual(refused.code, 0, 'the kernel refuses an offset inside a notrace function');
      const taken = await write(`p:probelens_notrace/traced ksys_read+${traced}`);
      assert.equal(taken.code, 0, `the kernel takes an offset inside a traceable function: ${taken.err}`);
    } finally {
      await vmShell(vm, "echo '-:probelens_notrace/traced' >> /sys/kernel/tracing/kprobe_events; true");
    }
    assert.doesNotMatch((await vmShell(vm, 'cat /sys/kernel/tracing/kprobe_events')).out, /probelens_notrace/);
  },
);

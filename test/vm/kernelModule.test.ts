// A loadable module's functions on the VM kernel (af_key, insmod'ed by the image's /init with xfrm_algo): a static
// program in the VM opens PF_KEY sockets (socket(AF_KEY, SOCK_RAW, PF_KEY_V2), which the kernel creates in
// af_key's pfkey_create) a known number of times, and `probelens trace` counts exactly those calls, with their
// arguments and return values, two ways: `trace kernel 'af_key:pfkey_create …'` from the VM's own kallsyms and the
// module's split BTF (/sys/kernel/btf/af_key), and `trace AF_KEY.KO 'pfkey_create …'` from the module's .ko with
// DWARF out of the -dbg package (an ET_REL, relocated as it is read). A module that is not loaded, and a .ko of
// another build, are refused with the reason before anything is written.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import { closeSync, copyFileSync, openSync, readSync, writeSync } from 'node:fs';
import { join } from 'node:path';
import type { TestContext } from 'node:test';
import { readBinaryIdentity } from '../../src/core/index/identity';
import { loadIndex } from '../../src/core/index/load';
import { compileProbes } from '../../src/core/probes/compiler';
import { formatDefinition } from '../../src/core/probes/definition';
import { missing } from '../helpers/require';
import { scratch, sleep, startCli, type CliRun } from '../integration/engine-harness';
import { armOnVm, hits, installStatic, kernelEnv } from './kernelCli';
import { requireModuleKo, requireVm, vmCliFlags, vmLeftovers, vmShell, vmSshArgs, waitVmClean, type VmConnection } from '../helpers/vm';
import { vmDebugModule } from '../helpers/vmImage';
import { plainData } from '../helpers/plain';

const TIMEOUT = { timeout: 900_000 };
const PROGRAM = '/tmp/probelens-pfkey';
/** How many PF_KEY sockets the program opens (and closes). */
const SOCKETS = 7;

const installPfkey = (t: TestContext, vm: VmConnection): Promise<boolean> =>
  installStatic(
    t,
    vm,
    PROGRAM,
    `#include <stdio.h>
#include <sys/socket.h>
#include <unistd.h>
int main(void) {
  char go;
  printf("pid %d\\n", getpid());
  fflush(stdout);
  if (read(0, &go, 1) != 1) return 2;
  for (int i = 0; i < ${SOCKETS}; i++) {
    int fd = socket(15 /* AF_KEY */, SOCK_RAW, 2 /* PF_KEY_V2 */);
    printf("fd %d\\n", fd);
    fflush(stdout);
    if (fd >= 0) close(fd);
  }
  return 0;
}
`,
  );

/** Starts the program in the VM; `go()` lets it open its sockets; `done` resolves with the fds it got. */
function startPfkey(vm: VmConnection): { pid: Promise<number>; go(): void; done: Promise<number[]>; kill(): void } {
  const child = spawn('ssh', [...vmSshArgs(vm), '--', PROGRAM], { stdio: ['pipe', 'pipe', 'pipe'] });
  let out = '';
  child.stdout.setEncoding('utf8').on('data', (d: string) => (out += d));
  const pid = new Promise<number>((resolve, reject) => {
    child.stdout.on('data', () => {
      const m = /^pid (\d+)$/m.exec(out);
      if (m) resolve(Number(m[1]));
    });
    child.once('close', () => reject(new Error(`the program ended before printing its pid: ${out}`)));
  });
  const done = new Promise<number[]>((resolve) =>
    child.once('close', () => resolve([...out.matchAll(/^fd (-?\d+)$/gm)].map((m) => Number(m[1])))),
  );
  return { pid, go: () => child.stdin.end('g'), done, kill: () => child.kill() };
}

/** Lets the program run, stops the CLI once every return has arrived, and checks SOCKETS entries and returns of its pid. */
async function expectSocketsCaptured(cli: CliRun, program: ReturnType<typeof startPfkey>, pid: number): Promise<void> {
  program.go();
  const fds = await program.done;
  assert.equal(fds.length, SOCKETS);
  assert.ok(
    fds.every((fd) => fd >= 0),
    `the PF_KEY sockets were created: ${fds.join(' ')}`,
  );
  const until = Date.now() + 120_000;
  const mine = () => hits(cli).filter((h) => h.pid === pid);
  while (mine().filter((h) => h.kind === 'return').length < SOCKETS && Date.now() < until) await sleep(250);
  cli.child.kill('SIGINT');
  await cli.exit;
  const entries = mine().filter((h) => h.kind === 'entry');
  const returns = mine().filter((h) => h.kind === 'return');
  assert.equal(entries.length, SOCKETS, cli.stdout());
  assert.equal(returns.length, SOCKETS, cli.stdout());
  for (const e of entries) assert.deepEqual(plainData([e.args.protocol, e.args.kern]), [2, 0], 'PF_KEY_V2, from user space');
  for (const r of returns) assert.equal(r.retval, 0);
  // Every record the kernel counted arrived and was read (a module's symbol is printed with its module).
  const summary = JSON.parse(cli.stdout().trim().split('\n').pop()!) as { summary: { lost: number; mismatch: number } };
  assert.equal(summary.summary.lost, 0);
  assert.equal(summary.summary.mismatch, 0, "hits + lost = the kernel's count");
}

for (const via of ['btf', 'ko'] as const) {
  test(
    via === 'btf'
      ? "trace kernel 'af_key:pfkey_create protocol kern' and its %return: from the VM's kallsyms and the module's split BTF, each of the program's PF_KEY sockets is seen once"
      : "trace AF_KEY.KO 'pfkey_create protocol kern' and its %return: from the module's .ko with DWARF, each of the program's PF_KEY sockets is seen once",
    TIMEOUT,
    async (t) => {
      const vm = await requireVm(t);
      if (!vm) return;
      assert.match((await vmShell(vm, 'grep -c "\\[af_key\\]" /proc/kallsyms')).out, /^[1-9]/m, 'af_key is loaded in the VM');
      const ko = via === 'ko' ? await requireModuleKo(t, vm, 'af_key') : undefined;
      if ((via === 'ko' && !ko) || !(await installPfkey(t, vm))) return;
      const program = startPfkey(vm);
      t.after(() => program.kill());
      const pid = await program.pid;
      const specs =
        via === 'btf'
          ? ['af_key:pfkey_create protocol kern', 'af_key:pfkey_create%return $retval']
          : ['pfkey_create protocol kern', 'pfkey_create%return $retval'];
      const cli = await armOnVm(t, vm, ko?.path ?? 'kernel', specs, ['--pid', String(pid)]);
      const defined = (await vmShell(vm, 'cat /sys/kernel/tracing/kprobe_events')).out;
      // The kernel's own syntax for a module's symbol, arguments by $argN (BTF) or by register (DWARF).
      const args = via === 'btf' ? 'protocol=\\$arg3:s32 kern=\\$arg4:s32' : 'protocol=%dx:s32 kern=%cx:s32';
      assert.match(defined, new RegExp(`^p:\\S+ af_key:pfkey_create .*${args} `, 'm'), defined);
      assert.match(defined, /^r\d*:\S+ af_key:pfkey_create .*retval=\$retval:s32/m, defined);
      await expectSocketsCaptured(cli, program, pid);
      assert.match(
        cli.stderr(),
        via === 'btf'
          ? /^probelens: af_key:pfkey_create: from the target's BTF \(\/sys\/kernel\/btf\/af_key on \/sys\/kernel\/btf\/vmlinux\) and kallsyms/m
          : /^probelens: af_key:pfkey_create: from the module's DWARF \(af_key\.ko\)$/m,
        cli.stderr(),
      );
      const { left, ms } = await waitVmClean(vm, 60_000);
      assert.deepEqual(left, [], `left on the VM ${ms} ms after the CLI exited`);
    },
  );
}

test(
  'refused before anything is written: a module not loaded (by BTF and by its .ko), and a .ko of another build naming both build-ids',
  TIMEOUT,
  async (t) => {
    const vm = await requireVm(t);
    if (!vm) return;
    assert.equal((await vmShell(vm, 'test -d /sys/module/vsock && echo loaded || echo absent')).out.trim(), 'absent');
    const afKey = await requireModuleKo(t, vm, 'af_key');
    if (!afKey) return;
    // vsock's .ko is the same package's, but vsock is not loaded in the VM: its build-id check finds no notes.
    const [pkg, version] = vm.kernelPackage.split(' ');
    const vsock = vmDebugModule(pkg.replace(/^linux-image-/, ''), version, 'vsock').path;
    // af_key.ko with one byte of its GNU build-id changed.
    const id = readBinaryIdentity(afKey.path);
    const other = join(scratch(t, 'pl-other-ko-'), 'af_key.ko');
    copyFileSync(afKey.path, other);
    const fd = openSync(other, 'r+');
    const b = Buffer.alloc(1);
    readSync(fd, b, 0, 1, id.buildIdOffset!);
    b[0] ^= 0xff;
    writeSync(fd, b, 0, 1, id.buildIdOffset!);
    closeSync(fd);
    const otherId = readBinaryIdentity(other).buildId!;
    assert.notEqual(otherId, afKey.buildId);

    const cases: Array<[string[], RegExp, string[]]> = [
      [
        ['kernel', 'vsock:vsock_create'],
        /the module vsock is not loaded on the target \(\/proc\/kallsyms lists no symbol of \[vsock\]\)/,
        [],
      ],
      [['kernel', 'af_key:no_such_function_pl'], /the module af_key has no function no_such_function_pl/, []],
      [
        [vsock, 'vsock_create'],
        /module vsock is not loaded on \S+ \(no \/sys\/module\/vsock\/notes\/\.note\.gnu\.build-id\): load it \(modprobe vsock\)/,
        [],
      ],
      [
        [other, 'pfkey_create protocol'],
        // One sentence naming both builds, nothing nested in it.
        new RegExp(
          `(^|\\s)module af_key on \\S+ ${escapeRegExp(
            `differs from the local .ko (/sys/module/af_key/notes/.note.gnu.build-id: the loaded module's build-id is ${afKey.buildId}, ${other} is build ${otherId}): ` +
              'use the .ko (with its debug information) of the module it runs, or pass --no-build-id-check',
          )}$`,
          'm',
        ),
        [],
      ],
    ];
    for (const [argv, why, named] of cases) {
      assert.deepEqual((await waitVmClean(vm, 60_000)).left, [], 'the VM is clean before the test');
      const cli = startCli(t, ['trace', ...argv, ...vmCliFlags(vm)], kernelEnv(t));
      const { code } = await cli.exit;
      assert.notEqual(code, 0);
      assert.match(cli.stderr(), why);
      for (const n of named) assert.ok(cli.stderr().includes(n), `${n} in ${cli.stderr()}`);
      assert.equal((await vmShell(vm, 'cat /sys/kernel/tracing/kprobe_events')).out, '', `${argv.join(' ')}: nothing was written`);
      assert.deepEqual(await vmLeftovers(vm), []);
    }
  },
);

test(
  "define kernel pfkey_create --host: a name kallsyms lists only in af_key is that module's, written af_key:pfkey_create",
  TIMEOUT,
  async (t) => {
    const vm = await requireVm(t);
    if (!vm) return;
    const cli = startCli(t, ['define', 'kernel', 'pfkey_create protocol', '--json', ...vmCliFlags(vm)], kernelEnv(t));
    const { code } = await cli.exit;
    assert.equal(code, 0, cli.stderr());
    const [p] = JSON.parse(cli.stdout()) as Array<{ definition: string; source: string }>;
    assert.equal(p.source, 'btf');
    assert.match(p.definition, /^p:\S+\/pfkey_create af_key:pfkey_create protocol=\$arg3:s32 /);
    assert.equal((await vmShell(vm, 'cat /sys/kernel/tracing/kprobe_events')).out, '', 'define writes nothing');
  },
);

test(
  'every function of af_key.ko placed beside `perf probe -m KO -D FUNC`: the same MODULE:SYMBOL+OFFSET sets, differences by reason',
  TIMEOUT,
  async (t) => {
    const vm = await requireVm(t);
    if (!vm) return;
    const ko = await requireModuleKo(t, vm, 'af_key');
    if (!ko) return;
    if (spawnSync('perf', ['version']).status !== 0) return missing(t, 'perf (linux-perf: the placement oracle)');
    const { index } = await loadIndex(ko.path, { noCache: true });
    const names = [
      ...new Set(
        index
          .functions()
          .filter((f) => f.probeable)
          .map((f) => f.name),
      ),
    ];
    const points = (defs: string[]) => [...new Set(defs.map((d) => d.split(' ')[1].replace(/\+0$/, '')))].sort();
    const rows = {
      same: 0,
      refused: [] as string[],
      notraceHolder: [] as string[],
      oursOnly: [] as string[],
      callersTest: [] as string[],
      other: [] as string[],
    };
    // Functions with a copy whose DWARF entry pc is the caller's code before the test that decides whether the copy
    // runs (perf probe arms it, and counts the caller's runs of the test): we arm where the copy's code begins.
    const callersTest = new Set<string>();
    const notrace = new Set<string>();
    const perfOf = new Map<string, string[]>();
    const oursOf = new Map<string, string[] | string>();
    for (const name of names) {
      const perf = spawnSync('perf', ['probe', '-m', ko.path, '-D', name], { encoding: 'utf8' });
      perfOf.set(name, perf.status === 0 ? points(perf.stdout.trim().split('\n').filter(Boolean)) : []);
      try {
        const probes = await compileProbes([name], index, {});
        oursOf.set(name, points(probes.map((p) => formatDefinition(p.definition))));
        if (probes.some((p) => p.warnings.some((w) => /is the caller's code, outside the copy's, and control goes from it both/.test(w))))
          callersTest.add(name);
      } catch (e) {
        oursOf.set(name, (e as Error).message);
        if (/does not call __fentry__ at its start/.test((e as Error).message)) notrace.add(name);
      }
    }
    for (const name of names) {
      const perf = perfOf.get(name)!;
      const ours = oursOf.get(name)!;
      if (typeof ours === 'string') {
        // perf probe checks nothing the kernel refuses: code freed after loading, notrace, or a copy we cannot prove.
        (/\.init\.text|does not call __fentry__|entries can be proved/.test(ours) ? rows.refused : rows.other).push(`${name}: ${ours}`);
        continue;
      }
      if (ours.join(' ') === perf.join(' ')) {
        rows.same++;
        continue;
      }
      const perfOnly = perf.filter((p) => !ours.includes(p));
      const oursOnly = ours.filter((p) => !perf.includes(p));
      if (oursOnly.length === 0 && perfOnly.every((p) => notrace.has(p.replace(/^af_key:/, '').replace(/\+\d+$/, ''))))
        rows.notraceHolder.push(`${name}: ${perfOnly.join(' ')}`);
      else if (perfOnly.length === 0) rows.oursOnly.push(`${name}: ${oursOnly.join(' ')}`);
      else if (callersTest.has(name) && oursOnly.length <= perfOnly.length)
        rows.callersTest.push(`${name}: ours ${oursOnly.join(' ') || '(none: a lower bound)'} where perf arms ${perfOnly.join(' ')}`);
      else rows.other.push(`${name}: ours only ${oursOnly.join(' ')}; perf only ${perfOnly.join(' ')}`);
    }
    t.diagnostic(
      `${rows.same} of ${names.length} the same; refused by us ${rows.refused.length}, perf's copies in a notrace holder ${rows.notraceHolder.length}, inlined copies we arm and perf does not ${rows.oursOnly.length}, entry pcs on the caller's test ${rows.callersTest.length}, other ${rows.other.length}`,
    );
    for (const r of [...rows.refused, ...rows.notraceHolder, ...rows.oursOnly, ...rows.callersTest, ...rows.other]) t.diagnostic(r);
    assert.deepEqual(rows.other, [], 'every difference has a named reason');
    assert.ok(rows.same >= names.length - 15, `${rows.same} of ${names.length} placed as perf places them`);
    // An inlined function's copies, each at its holder: the same three points perf prints.
    assert.deepEqual(oursOf.get('pfkey_can_dump'), ['af_key:dump_sa+5', 'af_key:dump_sp+22', 'af_key:pfkey_do_dump+66']);
  },
);

const escapeRegExp = (text: string): string => text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');

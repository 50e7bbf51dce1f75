// The VM test host: a second real kernel (Debian 12's cloud kernel, see vmImage.ts) booted under TCG with qemu's
// user-mode network forwarding a free 127.0.0.1 port to the VM's sshd. The `vm` tier boots it once (test/run.mjs
// starts `node --import tsx test/helpers/vm.ts --serve FILE`, which writes the connection to FILE and keeps the VM
// up until its stdin closes) and hands FILE to every test process in PROBELENS_TEST_VM; a test file run on its own
// boots a VM for its process, stopped when the process ends. Another kernel line (Debian 11's 5.10) or another
// number of CPUs is asked for with requireVm(t, { kernel, cpus }): that VM is booted in the test's own process,
// once per kernel and CPU count, and stopped when the process ends (the tier's server serves the default alone).
//
// CLI: node --import tsx test/helpers/vm.ts --serve FILE | --build [debian12|debian11] (build the image, print its figures)
import type { TestContext } from 'node:test';
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fixture, type FixtureName } from './fixtures';
import { missing } from './require';
import { atProcessEnd, freePort } from './sshd';
import { KERNEL_LINES, READY_MARK, VmUnavailable, vmDebugKernel, vmDebugModule, vmImage, type VmImage, type VmKernel } from './vmImage';
import { openBinary } from '../../src/core/binary';
import { NT_GNU_BUILD_ID, parseNotes } from '../../src/core/binary/notes';

export { VmUnavailable, type VmKernel };

export const QEMU = 'qemu-system-x86_64';
/** The fixtures every VM image holds, at the paths they have on this machine. */
export const VM_FIXTURES: FixtureName[] = ['calls-O2', 'many-O2'];

/** Which VM a test wants: its kernel line (default debian12, 6.1) and its virtual CPUs (default 1). */
export interface VmOptions {
  kernel?: VmKernel;
  cpus?: number;
}

/** What a test needs to reach the VM; plain data, so the tier's server can hand it to other processes. */
export interface VmConnection {
  /** The kernel line it boots, and how many virtual CPUs it has. */
  kernelLine: VmKernel;
  cpus: number;
  host: string;
  port: number;
  user: 'root';
  identityFile: string;
  knownHostsFile: string;
  hostKey: string;
  kernelRelease: string;
  kernelPackage: string;
  /** Fixture name → its path inside the VM. */
  fixtures: Record<string, string>;
  timings: { imageMs: number; bootMs: number; imageCached: boolean };
}

export interface RunningVm extends VmConnection {
  pid: number;
  /** The serial console so far. */
  console(): string;
  stop(): Promise<void>;
}

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

/** ssh client arguments for the VM (`ssh ...sshArgs(vm) -- CMD`): its key, only its host key, batch mode. */
export function vmSshArgs(vm: VmConnection): string[] {
  return [
    '-F',
    '/dev/null',
    '-i',
    vm.identityFile,
    '-o',
    'IdentitiesOnly=yes',
    '-o',
    `UserKnownHostsFile=${vm.knownHostsFile}`,
    '-o',
    'GlobalKnownHostsFile=/dev/null',
    '-o',
    'StrictHostKeyChecking=yes',
    '-o',
    'BatchMode=yes',
    '-o',
    'ConnectTimeout=30',
    '-p',
    String(vm.port),
    `${vm.user}@${vm.host}`,
  ];
}

/** --host/--identity/--known-hosts for the probelens CLI. */
export function vmCliFlags(vm: VmConnection): string[] {
  return ['--host', `${vm.user}@${vm.host}:${vm.port}`, '--identity', vm.identityFile, '--known-hosts', vm.knownHostsFile];
}

/** Runs a shell command in the VM over SSH (bounded by `ms`). */
export function vmShell(vm: VmConnection, command: string, ms = 60_000): Promise<{ out: string; err: string; code: number | null }> {
  return new Promise((resolve, reject) => {
    const child = spawn('ssh', [...vmSshArgs(vm), '--', command], { stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    let err = '';
    child.stdout.setEncoding('utf8').on('data', (d: string) => (out += d));
    child.stderr.setEncoding('utf8').on('data', (d: string) => (err += d));
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`ssh to the VM: \`${command}\` did not end within ${ms} ms\n${err}`));
    }, ms);
    child.once('error', (e) => (clearTimeout(timer), reject(e)));
    child.once('close', (code) => (clearTimeout(timer), resolve({ out, err, code })));
  });
}

/** The separator the listing below puts between a process's arguments (`tr '\\0' '\\1'`). */
const SOH = String.fromCharCode(1);

/**
 * Everything ProbeLens could leave on the VM: definitions, synthetic events, hist triggers outside an instance,
 * instances (the triggers in one go with it), trace_pipe readers.
 */
export async function vmLeftovers(vm: VmConnection): Promise<string[]> {
  const r = await vmShell(
    vm,
    `cat /sys/kernel/tracing/uprobe_events /sys/kernel/tracing/kprobe_events; sed 's/^/synthetic /' /sys/kernel/tracing/synthetic_events; ` +
      `for f in /sys/kernel/tracing/events/probelens_*/*/trigger /sys/kernel/tracing/events/synthetic/*/trigger; do [ -f "$f" ] && grep -v '^#' "$f" | sed "s,^,trigger $f ,"; done; ` +
      `for d in /sys/kernel/tracing/instances/*; do [ -d "$d" ] && echo "instance $d"; done; ` +
      `for p in /proc/[0-9]*; do printf '\\ncmd %s ' "$p"; tr '\\0\\n' '\\1\\1' < $p/cmdline 2>/dev/null; done; true`,
  );
  if (r.code !== 0) throw new Error(`listing the VM's tracefs failed: ${r.err}`);
  const left: string[] = [];
  for (const l of r.out.split('\n')) {
    if (!l.trim()) continue;
    if (!l.startsWith('cmd ')) left.push(l);
    // A reader names the pipe by its absolute path as one argument.
    else if (l.split(SOH).some((a) => /\/instances\/[^/]+\/trace_pipe$/.test(a))) left.push(`reader ${l.split(SOH).join(' ')}`);
  }
  return left;
}

export async function waitVmClean(vm: VmConnection, ms: number): Promise<{ left: string[]; ms: number }> {
  const t0 = Date.now();
  for (;;) {
    const left = await vmLeftovers(vm);
    if (left.length === 0 || Date.now() - t0 > ms) return { left, ms: Date.now() - t0 };
    await sleep(250);
  }
}

/** Resolves once something on host:port answers with an SSH banner within a second. */
function sshBanner(host: string, port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const r = spawn('ssh-keyscan', ['-T', '5', '-t', 'ed25519', '-p', String(port), host], { stdio: ['ignore', 'pipe', 'ignore'] });
    let out = '';
    r.stdout.setEncoding('utf8').on('data', (d: string) => (out += d));
    r.once('error', () => resolve(false));
    r.once('close', () => resolve(/ssh-ed25519 /.test(out)));
  });
}

class PortTaken extends Error {}

/**
 * Boots the image with `cpus` virtual CPUs (default 1). Throws VmUnavailable without qemu; the VM is killed when this
 * process ends.
 */
export async function bootVm(
  image: VmImage,
  fixtures: Record<string, string>,
  opts: { cpus?: number; timeoutMs?: number } = {},
): Promise<RunningVm> {
  if (spawnSync('sh', ['-c', `command -v ${QEMU}`], { stdio: 'ignore' }).status !== 0) {
    throw new VmUnavailable(`${QEMU} is not installed (apt-get install qemu-system-x86)`);
  }
  const cpus = opts.cpus ?? 1;
  if (!Number.isInteger(cpus) || cpus < 1) throw new Error(`a VM needs a whole number of CPUs, not ${cpus}`);
  for (let attempt = 1; ; attempt++) {
    try {
      return await bootOnce(image, fixtures, opts.timeoutMs ?? 300_000, cpus);
    } catch (e) {
      if (!(e instanceof PortTaken) || attempt >= 5) throw e;
    }
  }
}

async function bootOnce(image: VmImage, fixtures: Record<string, string>, timeoutMs: number, cpus: number): Promise<RunningVm> {
  const host = '127.0.0.1';
  const port = await freePort(host);
  const started = Date.now();
  const args = [
    '-accel',
    'tcg',
    '-m',
    '768',
    '-smp',
    String(cpus),
    '-nodefaults',
    '-no-user-config',
    '-display',
    'none',
    '-monitor',
    'none',
    '-serial',
    'stdio',
    '-no-reboot',
    '-kernel',
    image.kernel,
    '-initrd',
    image.initrd,
    '-append',
    // no_timer_check: under emulation on a loaded host the kernel's check that the 8254 timer reaches the IO-APIC can
    // miss its window, and the kernel then panics ("IO-APIC + timer doesn't work!", seen in the e2e tier); the check
    // tests the (emulated) board, not anything ProbeLens does.
    'console=ttyS0 quiet panic=-1 rdinit=/init no_timer_check',
    '-netdev',
    `user,id=n0,hostfwd=tcp:${host}:${port}-:22`,
    '-device',
    'virtio-net-pci,netdev=n0',
  ];
  const child: ChildProcess = spawn(QEMU, args, { stdio: ['ignore', 'pipe', 'pipe'] });
  let consoleText = '';
  const onData = (d: string): void => {
    consoleText = (consoleText + d).slice(-256 * 1024);
  };
  child.stdout!.setEncoding('utf8').on('data', onData);
  child.stderr!.setEncoding('utf8').on('data', onData);
  child.unref();
  (child.stdout as unknown as { unref?: () => void }).unref?.();
  (child.stderr as unknown as { unref?: () => void }).unref?.();
  let exited = false;
  const exitedP = new Promise<void>((r) => child.once('exit', () => ((exited = true), r())));
  const pid = child.pid;
  if (pid === undefined) throw new VmUnavailable(`spawning ${QEMU} failed`);
  const kill = (): void => {
    try {
      process.kill(pid, 'SIGKILL');
    } catch {
      /* already gone */
    }
  };
  atProcessEnd(kill);
  const dir = mkdtempSync(join(tmpdir(), 'probelens-vm-'));
  let stopped: Promise<void> | undefined;
  const stop = (): Promise<void> => {
    stopped ??= (async () => {
      if (!exited) {
        child.kill('SIGTERM');
        for (let i = 0; i < 100 && !exited; i++) await sleep(50);
        if (!exited) kill();
        await exitedP;
      }
      rmSync(dir, { recursive: true, force: true });
    })();
    return stopped;
  };

  const deadline = started + timeoutMs;
  while (!(consoleText.includes(READY_MARK) && (await sshBanner(host, port)))) {
    if (exited || Date.now() > deadline) {
      await stop();
      const why = `the VM (${image.kernelPackage}, ${cpus} CPUs) did not come up${exited ? ' (qemu exited)' : ` within ${timeoutMs} ms`}:\n${consoleText}`;
      throw exited && /host forwarding rule|Address already in use/.test(consoleText) ? new PortTaken(why) : new Error(why);
    }
    await sleep(200);
  }
  const bootMs = Date.now() - started;
  const knownHostsFile = join(dir, 'known_hosts');
  writeFileSync(knownHostsFile, `[${host}]:${port} ${image.hostKey}\n`);
  return {
    kernelLine: image.kernelLine,
    cpus,
    host,
    port,
    user: 'root',
    identityFile: image.identityFile,
    knownHostsFile,
    hostKey: image.hostKey,
    kernelRelease: image.kernelRelease,
    kernelPackage: `${image.kernelPackage} ${image.kernelVersion}`,
    fixtures,
    timings: { imageMs: image.buildMs, bootMs, imageCached: image.buildMs === 0 },
    pid,
    console: () => consoleText,
    stop,
  };
}

/** Builds the fixtures and the image of `opts.kernel`'s line (cached), then boots it with `opts.cpus`. */
export async function startVm(opts: VmOptions = {}): Promise<RunningVm> {
  const t0 = Date.now();
  const fixtures: Record<string, string> = {};
  for (const name of VM_FIXTURES) fixtures[name] = (await fixture(name)).path;
  const image = vmImage(Object.values(fixtures), opts.kernel);
  const vm = await bootVm(image, fixtures, { cpus: opts.cpus });
  vm.timings.imageMs = vm.timings.imageCached ? Date.now() - t0 - vm.timings.bootMs : image.buildMs;
  return vm;
}

interface Served {
  vm?: VmConnection;
  error?: string;
  unavailable?: boolean;
}

let own: Promise<Served> | undefined;

const started = (opts: VmOptions): Promise<Served> =>
  startVm(opts).then(
    (vm) => ({ vm }),
    (e: Error) => ({ error: e.message, unavailable: e instanceof VmUnavailable }),
  );

/** VMs other than the tier's, booted in this process: `KERNEL/CPUS` → the VM (or why there is none). */
const others = new Map<string, Promise<Served>>();

function served(opts: VmOptions = {}): Promise<Served> {
  const kernel = opts.kernel ?? 'debian12';
  const cpus = opts.cpus ?? 1;
  if (!KERNEL_LINES.has(kernel)) throw new Error(`no VM kernel line ${kernel}`);
  if (kernel !== 'debian12' || cpus !== 1) {
    const key = `${kernel}/${cpus}`;
    let got = others.get(key);
    if (!got) others.set(key, (got = started({ kernel, cpus })));
    return got;
  }
  const file = process.env.PROBELENS_TEST_VM;
  if (file) {
    own ??= Promise.resolve(JSON.parse(readFileSync(file, 'utf8')) as Served);
  } else {
    own ??= started({});
  }
  return own;
}

/**
 * The tier's VM (Debian 12's kernel, one CPU), or with `opts` another kernel line or CPU count booted in this
 * process; `undefined` after marking the test skipped when it cannot run here (under CI=true: failed). A VM that
 * should have come up and did not fails the test with qemu's console.
 */
export async function requireVm(t: TestContext, opts?: VmOptions): Promise<VmConnection | undefined> {
  const s = await served(opts);
  if (s.vm) return s.vm;
  if (s.unavailable) {
    missing(t, s.error!);
    return undefined;
  }
  throw new Error(s.error);
}

/** The GNU build-id of the VM's running kernel, from its /sys/kernel/notes. */
export async function vmKernelBuildId(vm: VmConnection, notes = '/sys/kernel/notes'): Promise<string> {
  const r = await vmShell(vm, `od -An -v -tx1 ${notes}`);
  if (r.code !== 0) throw new Error(`reading the VM's ${notes} failed: ${r.err}`);
  const bytes = Buffer.from(r.out.replace(/\s+/g, ''), 'hex');
  const note = parseNotes(bytes, true, 4, notes, 0).find((n) => n.owner === 'GNU' && n.type === NT_GNU_BUILD_ID);
  if (!note) throw new Error(`the VM's ${notes} holds no GNU build-id`);
  return Buffer.from(note.desc).toString('hex');
}

/**
 * The path of a module's `.ko` with DWARF from the VM kernel's `-dbg` package (extracted into the test cache once,
 * see vmDebugModule), after checking that its GNU build-id is the loaded module's
 * (/sys/module/NAME/notes/.note.gnu.build-id). Skips when it cannot be had (under CI=true: fails).
 */
export const requireModuleKo = (t: TestContext, vm: VmConnection, name: string): Promise<{ path: string; buildId: string } | undefined> =>
  requireDebugFile(
    t,
    vm,
    (release, version, kernel) => vmDebugModule(release, version, name, kernel),
    `/sys/module/${name}/notes/.note.gnu.build-id`,
    `loaded ${name}`,
  );

/**
 * The path of the VM kernel's vmlinux with DWARF (its `-dbg` package's, extracted into the test cache once, see
 * vmDebugKernel), after checking that its GNU build-id is the booted kernel's. Skips when it cannot be had (under
 * CI=true: fails).
 */
export const requireVmlinux = (t: TestContext, vm: VmConnection): Promise<{ path: string; buildId: string } | undefined> =>
  requireDebugFile(t, vm, vmDebugKernel, '/sys/kernel/notes', 'kernel');

/** A file of the VM kernel's `-dbg` package, fetched by `fetch`, whose build-id must be the one `notes` holds. */
async function requireDebugFile(
  t: TestContext,
  vm: VmConnection,
  fetch: (release: string, version: string, kernel: VmKernel) => { path: string; extractMs: number },
  notes: string,
  what: string,
): Promise<{ path: string; buildId: string } | undefined> {
  const [pkg, version] = vm.kernelPackage.split(' ');
  let path: string;
  try {
    const got = fetch(pkg.replace(/^linux-image-/, ''), version, vm.kernelLine);
    path = got.path;
    if (got.extractMs) t.diagnostic(`downloaded and extracted ${path} in ${got.extractMs} ms`);
  } catch (e) {
    if (!(e instanceof VmUnavailable)) throw e;
    missing(t, e.message);
    return undefined;
  }
  const buildId = (await openBinary(path)).buildId;
  const running = await vmKernelBuildId(vm, notes);
  if (buildId !== running) throw new Error(`${path} has build-id ${buildId ?? 'none'}, the VM's ${what} ${running}`);
  return { path, buildId };
}

// --- the tier's server ---

async function serve(file: string): Promise<void> {
  let vm: RunningVm | undefined;
  let result: Served;
  try {
    vm = await startVm();
    const { console: _c, stop: _s, pid: _p, ...conn } = vm;
    result = { vm: conn };
    const t = vm.timings;
    console.log(
      `vm: ${vm.kernelPackage} up on ${vm.host}:${vm.port}: image ${t.imageCached ? 'cached' : 'built'} in ${t.imageMs} ms, boot ${t.bootMs} ms`,
    );
  } catch (e) {
    result = { error: (e as Error).message, unavailable: e instanceof VmUnavailable };
    console.log(`vm: not available: ${(e as Error).message}`);
  }
  writeFileSync(file, JSON.stringify(result));
  console.log('vm: ready');
  // Up until the tier is over: the runner closes our stdin (also when it dies).
  await new Promise<void>((r) => {
    process.stdin
      .on('end', r)
      .on('close', r)
      .on('error', () => r());
    process.stdin.resume();
    process.once('SIGTERM', r);
  });
  await vm?.stop();
}

if (require.main === module) {
  const [mode, arg] = process.argv.slice(2);
  if (mode === '--serve' && arg) {
    serve(arg).then(
      () => process.exit(0),
      (e: Error) => (console.error(e), process.exit(1)),
    );
  } else if (mode === '--build' && (arg === undefined || KERNEL_LINES.has(arg as VmKernel))) {
    const fixtures: string[] = [];
    void (async () => {
      for (const name of VM_FIXTURES) fixtures.push((await fixture(name)).path);
      const image = vmImage(fixtures, arg as VmKernel | undefined);
      const size = existsSync(image.initrd) ? readFileSync(image.initrd).length : 0;
      console.log(`${image.dir}: ${image.kernelPackage} ${image.kernelVersion}, initrd ${size} bytes, built in ${image.buildMs} ms`);
    })();
  } else {
    console.error(`usage: node --import tsx test/helpers/vm.ts --serve FILE | --build [${[...KERNEL_LINES.keys()].join('|')}]`);
    process.exit(2);
  }
}

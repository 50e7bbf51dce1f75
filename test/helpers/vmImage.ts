// The VM test host's image: a Debian cloud kernel (Debian 12's 6.1 by default, Debian 11's 5.10 as the second kernel
// line: see KERNEL_LINES) and an initramfs assembled here from this machine's own
// programs — a static busybox (Debian's busybox-static, unpacked, not installed: it conflicts with `busybox`),
// OpenSSH's sshd and the libraries ldd names, generated host and client keys, the modules (virtio, af_key) the kernel package
// ships (insmod'ed by /init in dependency order) and the fixture binaries at the paths they have here. The kernel
// and busybox packages come from `apt-get download` + `dpkg-deb -x` and are kept in the test cache; an image is
// built once per input hash under ${XDG_CACHE_HOME:-~/.cache}/probelens-test/vm/image-HASH and lands by rename, so
// processes building side by side never see half an image. The kernel lines and their packages: vmPackages.ts.
import { execFileSync, spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import {
  closeSync,
  copyFileSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  openSync,
  readdirSync,
  readFileSync,
  realpathSync,
  renameSync,
  rmSync,
  statSync,
  writeFileSync,
  writeSync,
} from 'node:fs';
import { basename, dirname, join } from 'node:path';
import {
  aptOptions,
  candidateVersion,
  KERNEL_LINES,
  kernelLine,
  newestCloudKernelPackage,
  run,
  unpackedPackage,
  vmCacheRoot,
  VmUnavailable,
  type VmKernel,
} from './vmPackages';

export { aptOptions, candidateVersion, KERNEL_LINES, newestCloudKernelPackage, unpackedPackage, vmCacheRoot, VmUnavailable, type VmKernel };

export const SSHD = '/usr/sbin/sshd';

/** The files ldd says `bin` loads (the dynamic loader included), as absolute paths. */
export function sharedLibraries(bin: string): string[] {
  const out = run('ldd', [bin]);
  const libs: string[] = [];
  for (const line of out.split('\n')) {
    const m = /=>\s*(\/\S+)/.exec(line) ?? /^\s*(\/\S+)\s+\(/.exec(line);
    if (m) libs.push(m[1]);
  }
  return libs;
}

/** `depends=` of a kernel module's .modinfo (NUL-separated key=value strings). */
export function moduleDepends(ko: Buffer): string[] {
  const at = ko.indexOf('\0depends=');
  if (at < 0) return [];
  const end = ko.indexOf(0, at + 1);
  const v = ko.subarray(at + 9, end).toString('latin1');
  return v ? v.split(',') : [];
}

/** `wanted` and their dependencies, each after everything it depends on: the order to insmod them in. */
export function moduleLoadOrder(wanted: string[], modules: Map<string, string>): string[] {
  const order: string[] = [];
  const visit = (name: string, path: string[]): void => {
    if (order.includes(name)) return;
    if (path.includes(name)) throw new Error(`module dependency cycle: ${[...path, name].join(' → ')}`);
    const file = modules.get(name);
    if (!file) throw new VmUnavailable(`the kernel package has no module ${name}`);
    for (const dep of moduleDepends(readFileSync(file))) visit(dep.replace(/-/g, '_'), [...path, name]);
    order.push(name);
  };
  for (const w of wanted) visit(w, []);
  return order;
}

function modulesOf(kernelRoot: string, release: string): Map<string, string> {
  const map = new Map<string, string>();
  const walk = (d: string): void => {
    for (const e of readdirSync(d, { withFileTypes: true })) {
      const p = join(d, e.name);
      if (e.isDirectory()) walk(p);
      else if (e.name.endsWith('.ko')) map.set(e.name.slice(0, -3).replace(/-/g, '_'), p);
    }
  };
  walk(join(kernelRoot, 'lib', 'modules', release, 'kernel'));
  return map;
}

/** The modules the kernel has built in (its package's modules.builtin), by name: nothing to load for them. */
export function builtinModules(kernelRoot: string, release: string): Set<string> {
  const file = join(kernelRoot, 'lib', 'modules', release, 'modules.builtin');
  if (!existsSync(file)) return new Set();
  return new Set(
    readFileSync(file, 'utf8')
      .split('\n')
      .filter((l) => l.endsWith('.ko'))
      .map((l) => basename(l, '.ko').replace(/-/g, '_')),
  );
}

// --- the newc cpio archive the kernel unpacks as its initramfs ---

interface Entry {
  /** Path inside the image, without the leading slash. */
  path: string;
  mode: number;
  /** File contents (regular files) or the link target (symlinks); none for directories. */
  data?: Buffer;
}

const S_IFDIR = 0o040000;
const S_IFREG = 0o100000;
const S_IFLNK = 0o120000;

export function writeCpio(file: string, entries: Entry[]): void {
  const fd = openSync(file, 'w');
  let offset = 0;
  const put = (b: Buffer): void => {
    writeSync(fd, b);
    offset += b.length;
  };
  const pad = (): void => {
    if (offset % 4) put(Buffer.alloc(4 - (offset % 4)));
  };
  const hex = (n: number): string => n.toString(16).padStart(8, '0');
  const one = (ino: number, e: Entry): void => {
    const size = e.data?.length ?? 0;
    const name = Buffer.from(`${e.path}\0`);
    const fields = [ino, e.mode, 0, 0, e.mode & S_IFDIR ? 2 : 1, 0, size, 0, 0, 0, 0, name.length, 0];
    put(Buffer.from(`070701${fields.map(hex).join('')}`, 'latin1'));
    put(name);
    pad();
    if (e.data) put(e.data);
    pad();
  };
  try {
    entries.forEach((e, i) => one(i + 1, e));
    one(0, { path: 'TRAILER!!!', mode: 0 });
  } finally {
    closeSync(fd);
  }
}

// --- the image ---

export interface VmImage {
  dir: string;
  /** The kernel line it boots. */
  kernelLine: VmKernel;
  /** The kernel's bzImage. */
  kernel: string;
  initrd: string;
  /** `uname -r` in the VM, e.g. 6.1.0-56-cloud-amd64. */
  kernelRelease: string;
  kernelPackage: string;
  kernelVersion: string;
  /** Client key accepted for root. */
  identityFile: string;
  /** The VM's ed25519 host key, `TYPE BASE64`. */
  hostKey: string;
  /** Absolute paths of the fixture binaries inside the VM (the same as here). */
  binaries: string[];
  /** ms spent building (0 when it came from the cache). */
  buildMs: number;
}

export const READY_MARK = 'PROBELENS-VM-READY';

function initScript(release: string, modules: string[]): string {
  return `#!/bin/busybox sh
/bin/busybox --install -s
export PATH=/usr/sbin:/usr/bin:/sbin:/bin
mount -t proc proc /proc
mount -t sysfs sysfs /sys
mount -t devtmpfs devtmpfs /dev
mkdir -p /dev/pts /dev/shm
mount -t devpts devpts /dev/pts
mount -t tmpfs tmpfs /run
mount -t tmpfs tmpfs /tmp
mount -t debugfs debugfs /sys/kernel/debug
mount -t tracefs tracefs /sys/kernel/tracing
for m in ${modules.join(' ')}; do insmod /lib/modules/${release}/$m.ko || echo "insmod $m failed"; done
hostname probelens-vm
ip link set lo up
ip link set eth0 up
ip addr add 10.0.2.15/24 dev eth0
ip route add default via 10.0.2.2
mkdir -p /run/sshd /var/empty
chmod 755 /run/sshd
/usr/sbin/sshd -f /etc/ssh/sshd_config -E /run/sshd.log || cat /run/sshd.log
echo ${READY_MARK} $(uname -r)
while :; do sleep 3600; done
`;
}

const SSHD_CONFIG = `Port 22
HostKey /etc/ssh/ssh_host_ed25519_key
PermitRootLogin prohibit-password
PubkeyAuthentication yes
PasswordAuthentication no
KbdInteractiveAuthentication no
UsePAM no
AuthorizedKeysFile /root/.ssh/authorized_keys
StrictModes no
UseDNS no
PrintMotd no
PrintLastLog no
MaxStartups 100:30:200
MaxSessions 100
LogLevel VERBOSE
`;

function fileEntry(path: string, data: Buffer, mode = 0o644): Entry {
  return { path: path.replace(/^\/+/, ''), mode: S_IFREG | mode, data };
}

/** Every directory above `paths`, parents first. */
function directoriesFor(paths: string[]): Entry[] {
  const dirs = new Set<string>();
  for (const p of paths) for (let d = dirname(p); d !== '.' && d !== '/' && d !== ''; d = dirname(d)) dirs.add(d);
  return [...dirs]
    .sort((a, b) => a.split('/').length - b.split('/').length || a.localeCompare(b))
    .map((d) => ({ path: d, mode: S_IFDIR | 0o755 }));
}

/**
 * Builds (or finds in the cache) the image of `kernel`'s newest cloud kernel holding `binaries` (absolute paths,
 * copied to the same paths in the VM, with their libraries).
 */
export function vmImage(binaries: string[], kernel: VmKernel = 'debian12'): VmImage {
  for (const tool of ['apt-cache', 'apt-get', 'dpkg-deb', 'ldd', 'ssh-keygen']) {
    if (spawnSync('sh', ['-c', `command -v ${tool}`], { stdio: 'ignore' }).status !== 0)
      throw new VmUnavailable(`${tool} is not installed`);
  }
  if (!existsSync(SSHD)) throw new VmUnavailable(`${SSHD} is not installed (apt-get install openssh-server)`);
  const started = Date.now();
  const line = kernelLine(kernel);
  const kernelPackage = newestCloudKernelPackage(kernel);
  const kernelPkg = unpackedPackage(kernelPackage, kernel);
  // Userland is this machine's whatever the kernel: busybox from its own (Debian 12) lists.
  const busybox = unpackedPackage('busybox-static');
  const release = kernelPackage.replace(/^linux-image-/, '');
  const vmlinuz = join(kernelPkg.dir, 'boot', `vmlinuz-${release}`);
  if (!existsSync(vmlinuz)) throw new VmUnavailable(`${kernelPackage} holds no boot/vmlinuz-${release}`);
  const modules = modulesOf(kernelPkg.dir, release);
  const builtin = builtinModules(kernelPkg.dir, release);
  const order = moduleLoadOrder(
    line.modules.filter((m) => !builtin.has(m)),
    modules,
  );

  // Inputs: path in the image → where its bytes come from (or the bytes).
  const files = new Map<string, { src?: string; data?: Buffer; mode: number }>();
  files.set('/init', { data: Buffer.from(initScript(release, order)), mode: 0o755 });
  files.set('/bin/busybox', { src: join(busybox.dir, 'bin', 'busybox'), mode: 0o755 });
  for (const bin of [SSHD, ...binaries]) {
    files.set(bin, { src: bin, mode: 0o755 });
    for (const lib of sharedLibraries(bin)) files.set(lib, { src: lib, mode: 0o755 });
  }
  for (const m of order) files.set(`/lib/modules/${release}/${m}.ko`, { src: modules.get(m)!, mode: 0o644 });
  files.set('/etc/ssh/sshd_config', { data: Buffer.from(SSHD_CONFIG), mode: 0o644 });
  files.set('/etc/passwd', {
    data: Buffer.from(
      'root:x:0:0:root:/root:/bin/sh\nsshd:x:100:65534::/run/sshd:/bin/false\nnobody:x:65534:65534:nobody:/nonexistent:/bin/false\n',
    ),
    mode: 0o644,
  });
  files.set('/etc/group', { data: Buffer.from('root:x:0:\nnogroup:x:65534:\n'), mode: 0o644 });
  // `*`, not `!`: sshd refuses even key logins for a locked (`!`) account.
  files.set('/etc/shadow', { data: Buffer.from('root:*:19000:0:99999:7:::\nsshd:*:19000:0:99999:7:::\n'), mode: 0o600 });

  const hash = createHash('sha256');
  hash.update(`vm-image-v1\0${kernelPackage}\0${kernelPkg.version}\0${busybox.version}\0`);
  hash.update(readFileSync(__filename));
  const sorted = [...files.entries()].sort(([a], [b]) => a.localeCompare(b));
  for (const [path, f] of sorted) {
    hash.update(`${path}\0${f.mode}\0`);
    hash.update(f.data ?? readFileSync(f.src!));
  }
  const id = hash.digest('hex').slice(0, 16);
  const dir = join(vmCacheRoot(), `image-${id}`);
  const meta = (buildMs: number): VmImage => ({
    dir,
    kernelLine: kernel,
    kernel: join(dir, 'vmlinuz'),
    initrd: join(dir, 'initrd.cpio'),
    kernelRelease: release,
    kernelPackage,
    kernelVersion: kernelPkg.version,
    identityFile: join(dir, 'id_ed25519'),
    hostKey: readFileSync(join(dir, 'ssh_host_ed25519_key.pub'), 'utf8').trim().split(' ').slice(0, 2).join(' '),
    binaries,
    buildMs,
  });
  if (existsSync(join(dir, 'initrd.cpio'))) return meta(0);

  const tmp = mkdtempSync(join(vmCacheRoot(), '.build-'));
  try {
    for (const name of ['ssh_host_ed25519_key', 'id_ed25519']) {
      execFileSync('ssh-keygen', ['-q', '-t', 'ed25519', '-N', '', '-C', `probelens-vm-${name}`, '-f', join(tmp, name)], {
        stdio: 'ignore',
      });
    }
    files.set('/etc/ssh/ssh_host_ed25519_key', { src: join(tmp, 'ssh_host_ed25519_key'), mode: 0o600 });
    files.set('/root/.ssh/authorized_keys', { src: join(tmp, 'id_ed25519.pub'), mode: 0o600 });
    const emptyDirs = ['proc', 'sys', 'dev', 'run', 'tmp', 'root', 'sbin', 'usr/bin', 'usr/sbin', 'var/empty', 'lib64'];
    const regular = [...files.entries()].map(([path, f]) => fileEntry(path, f.data ?? readFileSync(realpathSync(f.src!)), f.mode));
    const entries: Entry[] = [
      ...directoriesFor([...regular.map((e) => e.path), ...emptyDirs.map((d) => `${d}/x`)]),
      ...regular,
      // /bin/sh for sshd's sessions before /init's --install has run is never needed, but a link costs nothing.
      { path: 'bin/sh', mode: S_IFLNK | 0o777, data: Buffer.from('busybox') },
    ];
    writeCpio(join(tmp, 'initrd.cpio'), entries);
    copyFileSync(vmlinuz, join(tmp, 'vmlinuz'));
    writeFileSync(join(tmp, 'inputs.txt'), sorted.map(([p, f]) => `${p} ${f.src ?? '(generated)'}`).join('\n') + '\n');
    try {
      renameSync(tmp, dir);
    } catch (e) {
      if (!existsSync(join(dir, 'initrd.cpio'))) throw e; // another process built the same image first
    }
  } finally {
    rmSync(tmp, { recursive: true, force: true });
  }
  return meta(Date.now() - started);
}

/** Size in bytes of the image's initramfs (for the README's figures). */
export function initrdSize(image: VmImage): number {
  return statSync(image.initrd).size;
}

/**
 * The modules whose `.ko` with DWARF the VM tests want from the default line's `-dbg` package (af_key loaded in the
 * VM, vsock not).
 */
export const DEBUG_MODULES = kernelLine('debian12').debugModules;

const debDir = (release: string, version: string) => join(vmCacheRoot(), `kdebug-${release}_${version.replace(/[^\w.+~-]/g, '_')}`);
const oldVmlinux = (release: string, version: string) =>
  join(vmCacheRoot(), `vmlinux-${release}_${version.replace(/[^\w.+~-]/g, '_')}`, `vmlinux-${release}`);

/**
 * The VM kernel's `vmlinux` with its DWARF: `apt-get download` (from `kernel`'s apt lists) of exactly
 * `release`/`version`'s `-dbg` package (≈ 283 MB), of which `usr/lib/debug/boot/vmlinux-RELEASE` and the line's
 * debug modules' (DEBUG_MODULES for the default) `.ko`s are extracted in one pass
 * (`dpkg-deb --fsys-tarfile | tar -x`) into the cache, `kdebug-RELEASE_VERSION/` (`vmlinux-RELEASE`,
 * `modules/NAME.ko`); the .deb is removed afterwards. An older cache's `vmlinux-RELEASE_VERSION/` is used as it is.
 * Done once: later calls return the cached file. Throws VmUnavailable when it cannot be had (no apt lists naming
 * it, no network).
 */
export function vmDebugKernel(release: string, version: string, kernel: VmKernel = 'debian12'): { path: string; extractMs: number } {
  const path = join(debDir(release, version), `vmlinux-${release}`);
  if (existsSync(path)) return { path, extractMs: 0 };
  if (existsSync(oldVmlinux(release, version))) return { path: oldVmlinux(release, version), extractMs: 0 };
  const extractMs = extractDebugFiles(release, version, true, kernelLine(kernel).debugModules, kernel);
  return { path, extractMs };
}

/**
 * A module's `.ko` with its DWARF from the same `-dbg` package, cached as `kdebug-RELEASE_VERSION/modules/NAME.ko`
 * (keyed by release, version and module); fetched with the vmlinux when that is not cached either, so a fresh
 * machine downloads the package once.
 */
export function vmDebugModule(
  release: string,
  version: string,
  name: string,
  kernel: VmKernel = 'debian12',
): { path: string; extractMs: number } {
  const path = join(debDir(release, version), 'modules', `${name}.ko`);
  if (existsSync(path)) return { path, extractMs: 0 };
  const haveVmlinux = existsSync(join(debDir(release, version), `vmlinux-${release}`)) || existsSync(oldVmlinux(release, version));
  const wanted = [...new Set([...kernelLine(kernel).debugModules, name])].filter(
    (m) => !existsSync(join(debDir(release, version), 'modules', `${m}.ko`)),
  );
  const extractMs = extractDebugFiles(release, version, !haveVmlinux, wanted, kernel);
  return { path, extractMs };
}

/** Downloads the `-dbg` package once and extracts the vmlinux (when asked) and `modules`' `.ko`s into the cache. */
function extractDebugFiles(release: string, version: string, vmlinux: boolean, modules: string[], kernel: VmKernel): number {
  const started = Date.now();
  const dir = debDir(release, version);
  mkdirSync(join(dir, 'modules'), { recursive: true });
  const tmp = mkdtempSync(join(vmCacheRoot(), '.kdebug-'));
  try {
    const pkg = `linux-image-${release}-dbg`;
    run('apt-get', [...aptOptions(kernel), 'download', '-q', `${pkg}=${version}`], tmp);
    const deb = readdirSync(tmp).find((f) => f.endsWith('.deb'));
    if (!deb) throw new VmUnavailable(`apt-get download ${pkg}=${version} left no .deb`);
    const kernelMember = `./usr/lib/debug/boot/vmlinux-${release}`;
    const koMember = (m: string) => `./usr/lib/debug/lib/modules/${release}/kernel/*/${m}.ko`;
    const members = [...(vmlinux ? [kernelMember] : []), ...modules.map(koMember)];
    const r = spawnSync(
      'sh',
      [
        '-c',
        'deb=$1; dir=$2; shift 2; dpkg-deb --fsys-tarfile "$deb" | tar -x --wildcards -C "$dir" "$@"',
        'sh',
        join(tmp, deb),
        tmp,
        ...members,
      ],
      { encoding: 'utf8' },
    );
    if (r.status !== 0) throw new VmUnavailable(`extracting ${members.join(' ')} from ${deb} failed: ${r.stderr.trim()}`);
    rmSync(join(tmp, deb));
    // Each file lands by rename, so a process reading the cache never sees half of one.
    for (const m of modules) {
      const found = findFile(join(tmp, 'usr', 'lib', 'debug', 'lib', 'modules', release, 'kernel'), `${m}.ko`);
      if (!found) throw new VmUnavailable(`${deb} holds no ${m}.ko`);
      renameSync(found, join(dir, 'modules', `${m}.ko`));
    }
    if (vmlinux) renameSync(join(tmp, kernelMember), join(dir, `vmlinux-${release}`));
  } finally {
    rmSync(tmp, { recursive: true, force: true });
  }
  return Date.now() - started;
}

function findFile(dir: string, name: string): string | undefined {
  if (!existsSync(dir)) return undefined;
  for (const e of readdirSync(dir, { withFileTypes: true })) {
    const p = join(dir, e.name);
    if (e.isDirectory()) {
      const got = findFile(p, name);
      if (got) return got;
    } else if (e.name === name) return p;
  }
  return undefined;
}

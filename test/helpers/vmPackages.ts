// The VM test host's packages: the kernel lines the vm tier boots (Debian 12's 6.1, Debian 11's 5.10), the apt
// configuration each is fetched with (this machine's own lists, or a private one kept in the cache for Debian 11, so
// this machine's apt sources are never touched), and the packages `apt-get download`ed and unpacked into the cache.
// Used by vmImage.ts, which assembles the image from them.
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { homedir } from 'node:os';
import { join } from 'node:path';

/** The VM cannot be built or booted here (no qemu, no apt lists, no network): a missing prerequisite. */
export class VmUnavailable extends Error {
  constructor(reason: string) {
    super(`cannot provide the VM test host: ${reason}`);
    this.name = 'VmUnavailable';
  }
}

export function vmCacheRoot(): string {
  const base = process.env.XDG_CACHE_HOME || join(homedir(), '.cache');
  return join(base, 'probelens-test', 'vm');
}

/** The kernel lines the VM tier can boot: Debian 12's 6.1 cloud kernel (the default) and Debian 11's 5.10. */
export type VmKernel = 'debian12' | 'debian11';

interface KernelLine {
  /** The cloud kernel's `linux-image-…` package names, as an `apt-cache search` pattern. */
  search: string;
  /** The same names, with the ABI number N (the newest is taken) as the first group. */
  name: RegExp;
  /**
   * `deb` lines of a private apt configuration in the cache; none: this machine's own apt lists (Debian 12), as the
   * tier has always used.
   */
  sources?: string[];
  /**
   * Modules /init loads, unless the kernel has them built in; their dependencies are found from each module's
   * `depends=` and loaded first. af_key (PF_KEY sockets, with xfrm_algo) is there for the module tests
   * (test/vm/kernelModule.test.ts), which run on the default line only.
   */
  modules: string[];
  /** The modules whose `.ko` with DWARF the VM tests want from the `-dbg` package, extracted with the vmlinux. */
  debugModules: string[];
  /**
   * The mirror's lists name `-dbg` packages it does not serve (Debian 11's security archive answers 404 for its
   * newest ones): take the newest kernel whose image and `-dbg` both download (checked with HEAD requests, the choice
   * kept in the line's apt directory), so the tests' vmlinux is the booted kernel's.
   */
  debugMustDownload?: boolean;
}

const DEBIAN_KEYRING = '/usr/share/keyrings/debian-archive-keyring.gpg';

export const KERNEL_LINES = new Map<VmKernel, KernelLine>([
  [
    'debian12',
    {
      search: '^linux-image-6\\.1\\.0-[0-9]+-cloud-amd64$',
      name: /^linux-image-6\.1\.0-(\d+)-cloud-amd64$/,
      modules: ['virtio_pci', 'virtio_net', 'af_key'],
      debugModules: ['af_key', 'vsock'],
    },
  ],
  [
    'debian11',
    {
      search: '^linux-image-5\\.10\\.0-[0-9]+-cloud-amd64$',
      name: /^linux-image-5\.10\.0-(\d+)-cloud-amd64$/,
      sources: [
        `deb [signed-by=${DEBIAN_KEYRING}] http://deb.debian.org/debian bullseye main`,
        `deb [signed-by=${DEBIAN_KEYRING}] http://deb.debian.org/debian-security bullseye-security main`,
      ],
      modules: ['virtio_pci', 'virtio_net'],
      debugModules: [],
      debugMustDownload: true,
    },
  ],
]);

export function kernelLine(kernel: VmKernel): KernelLine {
  const line = KERNEL_LINES.get(kernel);
  if (!line) throw new Error(`no VM kernel line ${String(kernel)}`);
  return line;
}

export function run(cmd: string, args: string[], cwd?: string): string {
  const r = spawnSync(cmd, args, { cwd, encoding: 'utf8', maxBuffer: 64 << 20 });
  if (r.error) throw new VmUnavailable(`${cmd} failed to start: ${r.error.message}`);
  if (r.status !== 0) throw new VmUnavailable(`${cmd} ${args.join(' ')} exited ${r.status}: ${r.stderr.trim()}`);
  return r.stdout;
}

/** `-o` options that point apt at the configuration in `dir` alone (its sources, lists and cache; no dpkg status). */
const aptDirOptions = (dir: string): string[] =>
  [
    `Dir::Etc::SourceList=${join(dir, 'sources.list')}`,
    'Dir::Etc::SourceParts=/nonexistent',
    `Dir::State::Lists=${join(dir, 'lists')}`,
    `Dir::Cache=${join(dir, 'cache')}`,
    'Dir::State::status=/dev/null',
  ].flatMap((o) => ['-o', o]);

const aptReady = new Map<VmKernel, string[]>();

/**
 * The apt options for `kernel`'s packages: none for this machine's own lists; for a line with its own sources, those
 * of its private configuration under the cache (vm/apt-NAME/), whose lists are fetched once, when missing. It is
 * assembled in a temporary directory and lands by rename, so a process never reads half-fetched lists.
 */
export function aptOptions(kernel: VmKernel = 'debian12'): string[] {
  const line = kernelLine(kernel);
  if (!line.sources) return [];
  const known = aptReady.get(kernel);
  if (known) return known;
  const dir = join(vmCacheRoot(), `apt-${kernel}`);
  if (!existsSync(join(dir, 'lists'))) {
    mkdirSync(vmCacheRoot(), { recursive: true });
    const tmp = mkdtempSync(join(vmCacheRoot(), '.apt-'));
    try {
      writeFileSync(join(tmp, 'sources.list'), line.sources.join('\n') + '\n');
      for (const d of ['lists/partial', 'cache/archives/partial']) mkdirSync(join(tmp, d), { recursive: true });
      // As root apt warns that _apt cannot write here and fetches unsandboxed: harmless.
      run('apt-get', [...aptDirOptions(tmp), 'update', '-q']);
      const lists = readdirSync(join(tmp, 'lists')).filter((f) => /_Packages(\.\w+)?$/.test(f));
      if (lists.length < line.sources.length)
        throw new VmUnavailable(`apt-get update for ${kernel} fetched ${lists.length} of ${line.sources.length} package lists`);
      try {
        renameSync(tmp, dir);
      } catch (e) {
        if (!existsSync(join(dir, 'lists'))) throw e; // another process fetched them first: use theirs
      }
    } finally {
      rmSync(tmp, { recursive: true, force: true });
    }
  }
  const opts = aptDirOptions(dir);
  aptReady.set(kernel, opts);
  return opts;
}

/** The newest cloud kernel package of `kernel`'s line (`linux-image-6.1.0-N-cloud-amd64` by default) the apt lists know. */
export function newestCloudKernelPackage(kernel: VmKernel = 'debian12'): string {
  const line = kernelLine(kernel);
  const out = run('apt-cache', [...aptOptions(kernel), 'search', '--names-only', line.search]);
  const abi = (n: string): number => Number(line.name.exec(n)![1]);
  const names = out
    .split('\n')
    .map((l) => l.split(' ')[0])
    .filter((n) => line.name.test(n))
    .sort((a, b) => abi(a) - abi(b));
  if (names.length === 0) throw new VmUnavailable(`apt lists name no package matching ${line.search} (run apt-get update)`);
  if (!line.debugMustDownload) return names[names.length - 1];
  const choice = join(vmCacheRoot(), `apt-${kernel}`, 'kernel-choice');
  const chosen = existsSync(choice) ? readFileSync(choice, 'utf8').trim() : '';
  if (names.includes(chosen)) return chosen;
  for (const name of names.reverse()) {
    if (![name, `${name}-dbg`].every((pkg) => served(packageUri(pkg, kernel)))) continue;
    writeFileSync(choice, `${name}\n`);
    return name;
  }
  throw new VmUnavailable(`the mirror serves no ${line.search} whose -dbg package downloads too`);
}

/** The URI `apt-get download` fetches `pkg`'s candidate from. */
function packageUri(pkg: string, kernel: VmKernel): string {
  const out = run('apt-get', [...aptOptions(kernel), 'download', '--print-uris', '-q', pkg]);
  const m = /^'(\S+)' /m.exec(out);
  if (!m) throw new VmUnavailable(`apt-get download --print-uris ${pkg} named no URI: ${out.trim()}`);
  return m[1];
}

/** Whether a HEAD request for `uri` answers 200 (node's fetch in a child: this module is synchronous). */
function served(uri: string): boolean {
  const r = spawnSync(
    process.execPath,
    ['-e', "fetch(process.argv[1], { method: 'HEAD' }).then((r) => process.exit(r.ok ? 0 : 1), () => process.exit(2))", uri],
    { stdio: 'ignore', timeout: 60_000 },
  );
  if (r.status === 2 || r.error) throw new VmUnavailable(`cannot reach ${uri}`);
  return r.status === 0;
}

/** `pkg`'s candidate version in the apt lists (`kernel`'s, for a line with its own sources). */
export function candidateVersion(pkg: string, kernel: VmKernel = 'debian12'): string {
  const m = /^Version: (\S+)$/m.exec(run('apt-cache', [...aptOptions(kernel), 'show', '--no-all-versions', pkg]));
  if (!m) throw new VmUnavailable(`apt-cache show ${pkg} names no version`);
  return m[1];
}

/**
 * `pkg`'s candidate version, downloaded (from `kernel`'s apt lists) and unpacked (not installed) into the cache once:
 * returns the directory holding its files.
 */
export function unpackedPackage(pkg: string, kernel: VmKernel = 'debian12'): { dir: string; version: string } {
  const version = candidateVersion(pkg, kernel);
  const root = join(vmCacheRoot(), 'debs');
  const dir = join(root, `${pkg}_${version.replace(/[^\w.+~-]/g, '_')}`);
  if (existsSync(dir)) return { dir, version };
  mkdirSync(root, { recursive: true });
  const tmp = mkdtempSync(join(root, '.tmp-'));
  try {
    // As root apt warns that _apt cannot write here and downloads unsandboxed: harmless.
    run('apt-get', [...aptOptions(kernel), 'download', '-q', `${pkg}=${version}`], tmp);
    const deb = readdirSync(tmp).find((f) => f.endsWith('.deb'));
    if (!deb) throw new VmUnavailable(`apt-get download ${pkg} left no .deb`);
    run('dpkg-deb', ['-x', join(tmp, deb), join(tmp, 'root')]);
    rmSync(join(tmp, deb));
    try {
      renameSync(join(tmp, 'root'), dir);
    } catch (e) {
      if (!existsSync(dir)) throw e; // another process unpacked it first: use theirs
    }
  } finally {
    rmSync(tmp, { recursive: true, force: true });
  }
  return { dir, version };
}

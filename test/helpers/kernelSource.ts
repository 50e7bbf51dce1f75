// A few files of the VM kernel's own source, for tests that open them in the editor: Debian's
// `linux-source-MAJOR.MINOR` package of exactly the kernel's version is `apt-get download`ed (≈ 140 MB), the named
// files are extracted from the tarball it ships (`usr/src/linux-source-X.Y.tar.xz`) and only they are kept in the test
// cache, under ${XDG_CACHE_HOME:-~/.cache}/probelens-test/vm/linux-source-VERSION-HASH/ (HASH: of the file list) (landed by rename, so concurrent
// processes never see half a tree); the .deb and the tarball are removed. Throws VmUnavailable when that version's
// source is not in the apt lists or cannot be downloaded.
//
// CLI: node --import tsx test/helpers/kernelSource.ts VERSION FILE… (prints the tree's folder)
import { spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, renameSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { candidateVersion, newestCloudKernelPackage, VmUnavailable, vmCacheRoot } from './vmImage';

function run(cmd: string, args: string[], cwd?: string): string {
  const r = spawnSync(cmd, args, { cwd, encoding: 'utf8', maxBuffer: 64 << 20 });
  if (r.error) throw new VmUnavailable(`${cmd} failed to start: ${r.error.message}`);
  if (r.status !== 0) throw new VmUnavailable(`${cmd} ${args.join(' ')} exited ${r.status}: ${r.stderr.trim()}`);
  return r.stdout;
}

/**
 * The folder holding `files` (paths relative to the kernel tree, e.g. `fs/open.c`) of the Debian kernel source
 * `version` (e.g. `6.1.192-2`, the version of the linux-image package). Cached per version and file list.
 */
export function kernelSourceFiles(version: string, files: readonly string[]): { dir: string; extractMs: number } {
  for (const f of files) if (!/^[\w.+-]+(\/[\w.+-]+)*$/.test(f) || f.split('/').includes('..')) throw new Error(`not a tree path: ${f}`);
  const m = /^(\d+\.\d+)\./.exec(version);
  if (!m) throw new Error(`not a kernel package version: ${version}`);
  const pkg = `linux-source-${m[1]}`;
  const safe = version.replace(/[^\w.+~-]/g, '_');
  const key = createHash('sha256')
    .update([...files].sort().join('\n'))
    .digest('hex')
    .slice(0, 12);
  const dir = join(vmCacheRoot(), `linux-source-${safe}-${key}`);
  if (files.every((f) => existsSync(join(dir, f)))) return { dir, extractMs: 0 };
  const known: string[] = run('apt-cache', ['show', pkg]).match(/^Version: \S+$/gm) ?? [];
  if (!known.includes(`Version: ${version}`))
    throw new VmUnavailable(
      `the apt lists hold no ${pkg}=${version} (they have ${known.map((k) => k.slice(9)).join(', ') || 'none'}); run apt-get update`,
    );
  const started = Date.now();
  mkdirSync(vmCacheRoot(), { recursive: true });
  const tmp = mkdtempSync(join(vmCacheRoot(), '.linux-source-'));
  try {
    run('apt-get', ['download', '-q', `${pkg}=${version}`], tmp);
    const deb = readdirSync(tmp).find((f) => f.endsWith('.deb'));
    if (!deb) throw new VmUnavailable(`apt-get download ${pkg}=${version} left no .deb`);
    const tarball = `./usr/src/${pkg}.tar.xz`;
    const r = spawnSync('sh', ['-c', 'dpkg-deb --fsys-tarfile "$1" | tar -x -C "$2" "$3"', 'sh', join(tmp, deb), tmp, tarball], {
      encoding: 'utf8',
    });
    if (r.status !== 0) throw new VmUnavailable(`extracting ${tarball} from ${deb} failed: ${r.stderr.trim()}`);
    rmSync(join(tmp, deb));
    mkdirSync(join(tmp, 'out'));
    run('tar', ['-xJf', join(tmp, tarball), '-C', join(tmp, 'out'), '--strip-components=1', ...files.map((f) => `${pkg}/${f}`)]);
    rmSync(join(tmp, 'usr'), { recursive: true, force: true });
    try {
      renameSync(join(tmp, 'out'), dir);
    } catch (e) {
      if (!files.every((f) => existsSync(join(dir, f)))) throw e; // else another process extracted them first
    }
  } finally {
    rmSync(tmp, { recursive: true, force: true });
  }
  return { dir, extractMs: Date.now() - started };
}

/** kernelSourceFiles() of the kernel the VM tests boot (the newest 6.1 cloud kernel the apt lists know), without the VM. */
export function vmKernelSourceFiles(files: readonly string[]): { dir: string; extractMs: number; version: string } {
  const version = candidateVersion(newestCloudKernelPackage());
  return { ...kernelSourceFiles(version, files), version };
}

if (require.main === module) {
  const [version, ...files] = process.argv.slice(2);
  if (!version || files.length === 0) {
    console.error('usage: node --import tsx test/helpers/kernelSource.ts VERSION FILE…');
    process.exit(2);
  }
  const got = kernelSourceFiles(version, files);
  console.log(`${got.dir} (${got.extractMs} ms)`);
}

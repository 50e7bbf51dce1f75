// The e2e tier installs ProbeLens the way users do: from the .vsix `npm run package` builds, so packaging
// (the manifest, .vscodeignore, the production bundles) is tested with every run.
import { spawnSync } from 'node:child_process';
import { copyFileSync, existsSync, mkdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { basename, dirname, join } from 'node:path';
import { withLock } from './setup';

export const REPO_ROOT = join(__dirname, '..', '..', '..');
export const VSIX_PATH = join(REPO_ROOT, 'dist', 'probelens.vsix');

let packaged: string | undefined;

/**
 * Runs `npm run package` once per process and returns a private copy of the .vsix (in `outDir`, default the OS
 * temp dir), so another process repackaging dist/ later cannot change it while code-server installs it.
 */
export function packageVsix(outDir = tmpdir()): string {
  if (packaged && existsSync(packaged)) return packaged;
  mkdirSync(dirname(VSIX_PATH), { recursive: true });
  packaged = withLock(join(dirname(VSIX_PATH), '.package.lock'), () => {
    const r = spawnSync('npm', ['run', 'package'], { cwd: REPO_ROOT, encoding: 'utf8', timeout: 300_000 });
    if (r.status !== 0 || !existsSync(VSIX_PATH)) {
      throw new Error(
        `npm run package failed (exit ${r.status ?? r.signal}):\n${r.stdout}${r.stderr}\n` +
          '  next step: run `npm run package` and fix what vsce reports',
      );
    }
    const copy = join(outDir, `probelens-${process.pid}.vsix`);
    copyFileSync(VSIX_PATH, copy);
    return copy;
  });
  process.once('exit', () => rmSync(packaged!, { force: true }));
  return packaged;
}

/** Packages a test-only extension folder (plain JS, no build) into `outDir` and returns the .vsix path. */
export function packageTestExtension(dir: string, outDir: string): string {
  const out = join(outDir, `${basename(dir)}.vsix`);
  const vsce = join(REPO_ROOT, 'node_modules', '.bin', 'vsce');
  const r = spawnSync(vsce, ['package', '--no-dependencies', '--allow-missing-repository', '--skip-license', '--out', out], {
    cwd: dir,
    encoding: 'utf8',
    timeout: 120_000,
  });
  if (r.status !== 0 || !existsSync(out)) {
    throw new Error(`vsce package in ${dir} failed (exit ${r.status ?? r.signal}):\n${r.stdout}${r.stderr}`);
  }
  return out;
}

// The real-program corpus: programs people ship, built by their own build systems from Debian source packages
// (recipes in test/helpers/corpusRecipes.ts) into ${XDG_CACHE_HOME:-~/.cache}/probelens-test/corpus/<name>-<version>[-r<revision>]/,
// cached by the source package's version and the recipe's revision (revision 1 has no suffix).
//
// The build is in-tree and the tree's absolute path is baked into the DWARF (DW_AT_comp_dir), so a tree cannot
// be built elsewhere and renamed into place as the fixtures are. Instead a build happens in its final directory
// under a lock, and only a manifest (<name>-<version>.json, written by atomic rename as the last step) marks it
// complete; a directory without a manifest is an interrupted build, resumed by make (or, failing that, redone
// from a clean copy of the sources).
//
// CLI (a CI stage): node --import tsx test/helpers/corpus.ts --all | NAME…
import { execFile } from 'node:child_process';
import { createHash } from 'node:crypto';
import { cpSync, existsSync, mkdirSync, openSync, closeSync, readFileSync, readdirSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { homedir } from 'node:os';
import { join, isAbsolute } from 'node:path';
import type { TestContext } from 'node:test';
import { promisify } from 'node:util';
import { CORPUS_NAMES, CORPUS_RECIPES, COUNT_RUNTIME, type CorpusName, type Run } from './corpusRecipes';
import { orSkip } from './require';

export { CORPUS_NAMES, CORPUS_RECIPES, type CorpusName };

const execFileP = promisify(execFile);

export interface CorpusProject {
  name: CorpusName;
  /** The Debian source package's version (e.g. 5:7.0.15-1~deb12u10), or the Go toolchain's for GOROOT programs. */
  version: string;
  /** The built source tree (an in-tree build; for Go programs GOROOT, which is not ours to build in). */
  srcDir: string;
  /** Absolute paths of the built binaries and libraries, by name. */
  binaries: Record<string, string>;
}

/** Fetching or building a corpus project failed; the message says what to install or fix. */
export class CorpusUnavailable extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'CorpusUnavailable';
  }
}

export function corpusCacheRoot(): string {
  const base = process.env.XDG_CACHE_HOME || join(homedir(), '.cache');
  return join(base, 'probelens-test', 'corpus');
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

function pidAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (e) {
    return (e as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/** Takes `lockFile` (holding our pid), waiting while a live process holds it; stale locks are broken. */
async function withLock<T>(lockFile: string, fn: () => Promise<T>): Promise<T> {
  for (;;) {
    try {
      closeSync(openSync(lockFile, 'wx'));
      writeFileSync(lockFile, String(process.pid));
      break;
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code !== 'EEXIST') throw e;
    }
    const holder = Number((existsSync(lockFile) ? readFileSync(lockFile, 'utf8') : '').trim() || '0');
    if (holder > 0 && !pidAlive(holder)) rmSync(lockFile, { force: true });
    else await sleep(500);
  }
  try {
    return await fn();
  } finally {
    rmSync(lockFile, { force: true });
  }
}

async function capture(cmd: string, args: string[]): Promise<string> {
  try {
    return (await execFileP(cmd, args, { maxBuffer: 64 << 20 })).stdout;
  } catch (e) {
    const err = e as NodeJS.ErrnoException & { stderr?: string };
    if (err.code === 'ENOENT')
      throw new CorpusUnavailable(`${cmd} is not installed (apt-get install -y ${cmd === 'go' ? 'golang-go' : 'apt'})`);
    throw new CorpusUnavailable(`${cmd} ${args.join(' ')} failed: ${(err.stderr ?? err.message).trim()}`);
  }
}

/** The source package's versions, newest first, as `apt-cache showsrc` lists them (needs deb-src lines). */
async function sourceVersions(pkg: string): Promise<string[]> {
  const out = await capture('apt-cache', ['showsrc', pkg]);
  const vs = [...new Set([...out.matchAll(/^Version: (\S+)$/gm)].map((m) => m[1]))];
  if (vs.length === 0) {
    throw new CorpusUnavailable(
      `apt knows no source package ${pkg}: add deb-src lines (a deb822 "Types: deb-src" copy of ` +
        '/etc/apt/sources.list.d/debian.sources, as .ci/run does) and run apt-get update',
    );
  }
  const newer = async (a: string, b: string) => {
    try {
      await execFileP('dpkg', ['--compare-versions', a, 'gt', b]);
      return true;
    } catch {
      return false;
    }
  };
  // Insertion sort: a handful of versions, compared by dpkg's own rules.
  const sorted: string[] = [];
  for (const v of vs) {
    let i = 0;
    while (i < sorted.length && !(await newer(v, sorted[i]))) i++;
    sorted.splice(i, 0, v);
  }
  return sorted;
}

const safe = (v: string) => v.replace(/^\d+:/, '').replace(/[^A-Za-z0-9.+-]/g, '_');

/**
 * The unpacked source tree of `pkg` (a directory under .sources/), fetched with `apt-get source` if needed.
 * A mirror may lack the newest version's files (seen with security updates), so each listed version is tried,
 * newest first.
 */
async function fetchSource(pkg: string, root: string): Promise<{ version: string; tree: string }> {
  const sources = join(root, '.sources');
  mkdirSync(sources, { recursive: true });
  const failures: string[] = [];
  const versions = await sourceVersions(pkg);
  const fetched = (version: string) => {
    const dir = join(sources, `${pkg}_${safe(version)}`);
    if (!existsSync(dir)) return undefined;
    const tree = readdirSync(dir, { withFileTypes: true }).find((e) => e.isDirectory());
    return tree ? { version, tree: join(dir, tree.name) } : undefined;
  };
  // A version fetched before wins (no network, and the built tree stays cached) until it leaves the archive.
  for (const version of versions) {
    const ready = fetched(version);
    if (ready) return ready;
  }
  for (const version of versions) {
    const dir = join(sources, `${pkg}_${safe(version)}`);
    const found = () => fetched(version);
    const got = await withLock(`${dir}.lock`, async () => {
      if (found()) return true;
      const tmp = `${dir}.tmp-${process.pid}`;
      rmSync(tmp, { recursive: true, force: true });
      mkdirSync(tmp);
      try {
        await execFileP('apt-get', ['source', '-qq', `${pkg}=${version}`], { cwd: tmp, maxBuffer: 64 << 20 });
        renameSync(tmp, dir);
        return true;
      } catch (e) {
        failures.push(`${version}: ${((e as { stderr?: string }).stderr ?? String(e)).trim().split('\n').slice(-2).join(' ')}`);
        return false;
      } finally {
        rmSync(tmp, { recursive: true, force: true });
      }
    });
    if (got) return found()!;
  }
  throw new CorpusUnavailable(`apt-get source ${pkg} failed for every listed version:\n  ${failures.join('\n  ')}`);
}

interface Manifest {
  name: CorpusName;
  version: string;
  revision: number;
  runtime?: string;
  srcDir: string;
  binaries: Record<string, string>;
  buildSeconds: number;
}

function runtimeHash(name: CorpusName): string | undefined {
  if (!CORPUS_RECIPES[name].countRuntime) return undefined;
  return createHash('sha256').update(readFileSync(COUNT_RUNTIME)).digest('hex').slice(0, 16);
}

function runner(name: CorpusName, logFile: string): Run {
  return async (cmd, args, opts = {}) => {
    const env = { ...process.env, ...opts.env, LC_ALL: 'C' };
    try {
      const r = await execFileP('nice', ['-n', '10', cmd, ...args], { cwd: opts.cwd, env, maxBuffer: 256 << 20 });
      writeFileSync(logFile, `$ ${cmd} ${args.join(' ')}\n${r.stdout}${r.stderr}`, { flag: 'a' });
    } catch (e) {
      const err = e as { stdout?: string; stderr?: string; message: string };
      const out = `${err.stdout ?? ''}${err.stderr ?? ''}` || err.message;
      writeFileSync(logFile, `$ ${cmd} ${args.join(' ')}\n${out}`, { flag: 'a' });
      const deps = CORPUS_RECIPES[name].aptBuildDeps.join(' ');
      throw new CorpusUnavailable(
        `building corpus project ${name} failed: ${cmd} ${args.join(' ')}\n${out.trim().split('\n').slice(-15).join('\n')}\n` +
          `(full log: ${logFile}; its build dependencies: apt-get install -y --no-install-recommends ${deps})`,
      );
    }
  };
}

async function build(name: CorpusName): Promise<CorpusProject> {
  const recipe = CORPUS_RECIPES[name];
  const root = corpusCacheRoot();
  mkdirSync(root, { recursive: true });
  let version: string;
  let tree: string | undefined;
  if (recipe.aptSource) ({ version, tree } = await fetchSource(recipe.aptSource, root));
  else version = (await capture('go', ['env', 'GOVERSION'])).trim();
  // The revision is part of the name: checkouts whose recipes differ (branches, an older CI tree) sharing one cache
  // would otherwise rebuild the tree under each other's running tests.
  const dir = join(root, `${name}-${safe(version)}${recipe.revision > 1 ? `-r${recipe.revision}` : ''}`);
  const manifestFile = `${dir}.json`;
  const current = (): Manifest | undefined => {
    if (!existsSync(manifestFile)) return undefined;
    const m = JSON.parse(readFileSync(manifestFile, 'utf8')) as Manifest;
    return m.revision === recipe.revision && m.runtime === runtimeHash(name) ? m : undefined;
  };
  let m = current();
  if (!m) {
    m = await withLock(`${dir}.lock`, async () => {
      const done = current();
      if (done) return done;
      const t0 = Date.now();
      rmSync(manifestFile, { force: true });
      const fresh = () => {
        rmSync(dir, { recursive: true, force: true });
        if (tree) cpSync(tree, dir, { recursive: true, verbatimSymlinks: true });
        else mkdirSync(dir, { recursive: true });
        writeFileSync(log, '');
      };
      const log = join(dir, '.probelens-build.log');
      if (existsSync(join(dir, '.probelens-build.log'))) {
        // An interrupted build of this very version: make resumes where it stopped (it deletes the target it
        // was writing when signalled); if that fails, start again from a clean copy.
        try {
          await recipe.build(dir, runner(name, log));
        } catch {
          fresh();
          await recipe.build(dir, runner(name, log));
        }
      } else {
        fresh();
        await recipe.build(dir, runner(name, log));
      }
      const srcDir = tree ? dir : (await capture('go', ['env', 'GOROOT'])).trim();
      const binaries: Record<string, string> = {};
      for (const [b, rel] of Object.entries(recipe.binaries)) {
        const p = isAbsolute(rel) ? rel : join(dir, rel);
        if (!existsSync(p)) throw new CorpusUnavailable(`building corpus project ${name} produced no ${rel} (log: ${log})`);
        binaries[b] = p;
      }
      const made: Manifest = {
        name,
        version,
        revision: recipe.revision,
        runtime: runtimeHash(name),
        srcDir,
        binaries,
        buildSeconds: Math.round((Date.now() - t0) / 1000),
      };
      writeFileSync(`${manifestFile}.tmp`, JSON.stringify(made, null, 2));
      renameSync(`${manifestFile}.tmp`, manifestFile);
      return made;
    });
  }
  return { name, version: m.version, srcDir: m.srcDir, binaries: m.binaries };
}

/**
 * A corpus binary already built (any cached version, newest manifest first), without fetching or building:
 * for benchmarks that use the corpus when it is there.
 */
export function builtCorpusBinary(name: CorpusName, binary: string): string | undefined {
  const root = corpusCacheRoot();
  if (!existsSync(root)) return undefined;
  const manifests = readdirSync(root)
    .filter((f) => f.startsWith(`${name}-`) && f.endsWith('.json'))
    .map((f) => JSON.parse(readFileSync(join(root, f), 'utf8')) as Manifest)
    .filter((m) => m.name === name && m.binaries[binary] && existsSync(m.binaries[binary]))
    .sort((a, b) => b.version.localeCompare(a.version, 'en', { numeric: true }) || b.revision - a.revision);
  return manifests[0]?.binaries[binary];
}

/**
 * A copy of a built corpus project's tree in `dir` (a developer's own tree, edited and rebuilt): `rebuild()` runs
 * the project's build again there, which make keeps incremental (the copy keeps the files' times). The copy's
 * objects still name the original tree in their DWARF until they are compiled again in the copy.
 */
export interface CorpusWorkTree {
  dir: string;
  binary(name: string): string;
  rebuild(): Promise<void>;
}

export function corpusWorkTree(p: CorpusProject, dir: string): CorpusWorkTree {
  cpSync(p.srcDir, dir, { recursive: true, preserveTimestamps: true, verbatimSymlinks: true });
  const recipe = CORPUS_RECIPES[p.name];
  return {
    dir,
    binary: (name) => join(dir, recipe.binaries[name]),
    rebuild: () => recipe.build(dir, runner(p.name, join(dir, '.probelens-rebuild.log'))),
  };
}

const memo = new Map<CorpusName, Promise<CorpusProject>>();

/**
 * The named corpus project, built on first use (minutes: redis ~2, postgres ~6, ninja ~1 on two cores) and
 * then taken from the cache. Throws CorpusUnavailable with what to install or fix.
 */
export function corpusProject(name: CorpusName): Promise<CorpusProject> {
  if (!CORPUS_RECIPES[name]) throw new Error(`unknown corpus project ${JSON.stringify(name)}; known: ${CORPUS_NAMES.join(', ')}`);
  let p = memo.get(name);
  if (!p) {
    p = build(name);
    memo.set(name, p);
    p.catch(() => memo.delete(name));
  }
  return p;
}

/** corpusProject(), except that an unavailable project skips the test (and fails it under CI=true). */
export function corpusProjectOrSkip(t: TestContext, name: CorpusName): Promise<CorpusProject | undefined> {
  return orSkip(t, () => corpusProject(name), CorpusUnavailable);
}

if (require.main === module) {
  const args = process.argv.slice(2);
  const names = (args.includes('--all') ? [...CORPUS_NAMES] : args) as CorpusName[];
  if (names.length === 0 || names.some((n) => !CORPUS_NAMES.includes(n))) {
    console.error(`usage: node --import tsx test/helpers/corpus.ts --all | ${CORPUS_NAMES.join('|')}…`);
    process.exit(2);
  }
  void (async () => {
    // One at a time: each build already uses both cores.
    for (const n of names) {
      const t0 = Date.now();
      try {
        const p = await corpusProject(n);
        console.log(`${n}\t${p.version}\t${((Date.now() - t0) / 1000).toFixed(0)} s\t${p.srcDir}`);
        for (const [b, path] of Object.entries(p.binaries)) console.log(`  ${b}\t${path}`);
      } catch (e) {
        console.error((e as Error).message);
        process.exit(1);
      }
    }
    console.log(`corpus cache: ${corpusCacheRoot()}`);
  })();
}

// Test fixtures, built at test time from the committed sources under test/fixtures/src (recipes in
// test/fixtures/recipes.ts) into ${XDG_CACHE_HOME:-~/.cache}/probelens-test/fixtures/<unit>-<hash>/, where the
// hash covers the sources, the recipes, this file, the source directory's absolute path (it is baked into the
// DWARF) and the toolchains' versions. A build happens once per process and lands by atomic rename, so test
// processes running side by side never see a half-built directory; a lock file keeps them from building the
// same unit twice.
//
// CLI (a CI stage): node --import tsx test/helpers/fixtures.ts --all | NAME…
import { execFile, execFileSync } from 'node:child_process';
import { createHash, randomBytes } from 'node:crypto';
import { existsSync, mkdirSync, readdirSync, readFileSync, renameSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { homedir } from 'node:os';
import { delimiter, join, resolve } from 'node:path';
import type { TestContext } from 'node:test';
import { promisify } from 'node:util';
import { parseFixtureOutput, type FixtureOutput } from '../fixtures/output';
import { FIXTURE_NAMES, RECIPES, type Fixture, type FixtureName, type Tool, type Unit } from '../fixtures/recipes';
import { orSkip } from './require';

export { FIXTURE_NAMES, parseFixtureOutput };
export type { Fixture, FixtureName, FixtureOutput };
export type { FixtureCall } from '../fixtures/output';

const execFileP = promisify(execFile);
const REPO = resolve(__dirname, '..', '..');
const SRC_ROOT = join(REPO, 'test', 'fixtures', 'src');

const APT_PACKAGE: Record<Tool | 'strip', string> = {
  gcc: 'gcc',
  'g++': 'g++',
  objcopy: 'binutils',
  readelf: 'binutils',
  strip: 'binutils',
  go: 'golang-go',
  rustc: 'rustc (or rustup)',
  'aarch64-linux-gnu-gcc': 'gcc-aarch64-linux-gnu',
  'sdt.h': 'systemtap-sdt-dev',
};

export class ToolchainMissing extends Error {
  constructor(
    readonly tool: string,
    readonly fixtureName: string,
  ) {
    super(
      `cannot build fixture ${fixtureName}: ${tool} is not installed; install it with ` +
        `\`apt-get install -y ${APT_PACKAGE[tool as Tool] ?? tool}\``,
    );
    this.name = 'ToolchainMissing';
  }
}

export class FixtureBuildFailed extends Error {
  constructor(unit: string, command: string, output: string) {
    super(
      `building fixture unit ${unit} failed: ${command}\n${output.trim()}\n` +
        'fix the fixture source or recipe (test/fixtures), or the toolchain it names',
    );
    this.name = 'FixtureBuildFailed';
  }
}

export function fixturesCacheRoot(): string {
  const base = process.env.XDG_CACHE_HOME || join(homedir(), '.cache');
  return join(base, 'probelens-test', 'fixtures');
}

// --- toolchains -----------------------------------------------------------------------------------------------

const SDT_HEADERS = ['/usr/include/x86_64-linux-gnu/sys/sdt.h', '/usr/include/sys/sdt.h'];
const toolPaths = new Map<string, string | null>();

function findTool(tool: Tool | 'strip'): string | null {
  if (toolPaths.has(tool)) return toolPaths.get(tool)!;
  let found: string | null = null;
  if (tool === 'sdt.h') {
    found = SDT_HEADERS.find((h) => existsSync(h)) ?? null;
  } else {
    // rustup installs into ~/.cargo/bin, which a non-login shell's PATH often lacks.
    const dirs = [...(process.env.PATH ?? '').split(delimiter), join(homedir(), '.cargo', 'bin'), '/usr/lib/go/bin'];
    for (const d of dirs) {
      const p = join(d, tool);
      if (d && existsSync(p) && statSync(p).isFile()) {
        found = p;
        break;
      }
    }
  }
  toolPaths.set(tool, found);
  return found;
}

const versions = new Map<string, string>();
function toolVersion(tool: Tool, fixtureName: string): string {
  const path = findTool(tool);
  if (!path) throw new ToolchainMissing(tool, fixtureName);
  let v = versions.get(tool);
  if (v === undefined) {
    if (tool === 'sdt.h') v = createHash('sha256').update(readFileSync(path)).digest('hex');
    else v = execFileSync(path, [tool === 'go' ? 'version' : '--version'], { encoding: 'utf8' }).split('\n')[0];
    versions.set(tool, v);
  }
  return `${tool}=${v}`;
}

// --- cache keys, locking, building ----------------------------------------------------------------------------

function filesUnder(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true })
    .flatMap((e) => (e.isDirectory() ? filesUnder(join(dir, e.name)) : [join(dir, e.name)]))
    .sort();
}

function unitKey(unit: Unit, fixtureName: string): string {
  const h = createHash('sha256');
  const srcDir = join(SRC_ROOT, unit.src);
  h.update(`unit ${unit.id}\nsrcDir ${srcDir}\n`);
  for (const f of [__filename, join(REPO, 'test', 'fixtures', 'recipes.ts'), ...filesUnder(srcDir)]) {
    h.update(`file ${f}\n`).update(readFileSync(f)).update('\n');
  }
  for (const t of unit.tools) h.update(`${toolVersion(t, fixtureName)}\n`);
  if (unit.tools.some((t) => t === 'gcc' || t === 'g++' || t === 'aarch64-linux-gnu-gcc')) {
    h.update(`${toolVersion('objcopy', fixtureName)}\n`); // the assembler and linker come with binutils
  }
  return h.digest('hex').slice(0, 16);
}

function pidAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (e) {
    return (e as NodeJS.ErrnoException).code === 'EPERM';
  }
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Takes the unit's lock, or waits while a live process holds it. Returns false if the unit appeared meanwhile. */
async function lock(lockFile: string, finalDir: string): Promise<boolean> {
  for (;;) {
    if (existsSync(finalDir)) return false;
    try {
      writeFileSync(lockFile, String(process.pid), { flag: 'wx' });
      return true;
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code !== 'EEXIST') throw e;
    }
    let holder: number;
    try {
      holder = Number(readFileSync(lockFile, 'utf8').trim() || '0');
    } catch {
      continue; // released between our attempt and this read
    }
    // A lock with no pid yet is being written right now; one whose process is gone is stale.
    if (holder > 0 && !pidAlive(holder)) rmSync(lockFile, { force: true });
    else await sleep(150);
  }
}

/** Half-built directories of this unit left by processes that died mid-build (we hold the unit's lock). */
function removeAbandoned(root: string, unitId: string): void {
  const re = /^\.tmp-(.+)-(\d+)-[0-9a-f]{8}$/;
  for (const name of readdirSync(root)) {
    const m = re.exec(name);
    if (m && m[1] === unitId && !pidAlive(Number(m[2]))) rmSync(join(root, name), { recursive: true, force: true });
  }
}

async function buildUnit(unit: Unit, fixtureName: string, root: string): Promise<string> {
  const finalDir = join(root, `${unit.id}-${unitKey(unit, fixtureName)}`);
  if (existsSync(finalDir)) return finalDir;
  mkdirSync(root, { recursive: true });
  const lockFile = `${finalDir}.lock`;
  if (!(await lock(lockFile, finalDir))) return finalDir;
  const tmp = join(root, `.tmp-${unit.id}-${process.pid}-${randomBytes(4).toString('hex')}`);
  try {
    if (existsSync(finalDir)) return finalDir;
    removeAbandoned(root, unit.id);
    mkdirSync(tmp, { recursive: true });
    const srcDir = join(SRC_ROOT, unit.src);
    await unit.build({
      out: tmp,
      srcDir,
      async run(tool, args, opts = {}) {
        const path = findTool(tool);
        if (!path) throw new ToolchainMissing(tool, fixtureName);
        const env = { ...process.env, ...opts.env, PATH: `${process.env.PATH ?? ''}${delimiter}${join(homedir(), '.cargo', 'bin')}` };
        try {
          const r = await execFileP(path, args, { cwd: opts.cwd ?? srcDir, env, maxBuffer: 64 << 20 });
          return r.stdout;
        } catch (e) {
          const err = e as { stdout?: string; stderr?: string; message: string };
          throw new FixtureBuildFailed(unit.id, [tool, ...args].join(' '), `${err.stderr ?? ''}${err.stdout ?? ''}` || err.message);
        }
      },
      async buildIdOf(file) {
        const path = findTool('readelf');
        if (!path) throw new ToolchainMissing('readelf', fixtureName);
        const { stdout } = await execFileP(path, ['-n', file]);
        const m = /Build ID: ([0-9a-f]+)/.exec(stdout);
        if (!m)
          throw new FixtureBuildFailed(
            unit.id,
            `readelf -n ${file}`,
            'no GNU build-id note (gcc links with --build-id by default on Debian)',
          );
        return m[1];
      },
    });
    writeFileSync(join(tmp, 'UNIT'), `${unit.id}\n`);
    try {
      renameSync(tmp, finalDir);
    } catch (e) {
      // Someone else's build landed first (possible only after a stale-lock takeover): theirs is as good.
      if (!existsSync(finalDir)) throw e;
    }
    return finalDir;
  } finally {
    rmSync(tmp, { recursive: true, force: true });
    rmSync(lockFile, { force: true });
  }
}

const built = new Map<string, Promise<string>>();

/** Builds (or finds in the cache) the named fixture. Throws ToolchainMissing or FixtureBuildFailed. */
export async function fixture(name: FixtureName): Promise<Fixture> {
  const recipe = RECIPES[name];
  if (!recipe) throw new Error(`unknown fixture ${JSON.stringify(name)}; known: ${FIXTURE_NAMES.join(', ')}`);
  const root = fixturesCacheRoot();
  const memoKey = `${root}\0${recipe.unit.id}`;
  let p = built.get(memoKey);
  if (!p) {
    p = buildUnit(recipe.unit, name, root);
    built.set(memoKey, p);
    p.catch(() => built.delete(memoKey)); // a later call retries after, say, installing the toolchain
  }
  const dir = await p;
  const srcDir = join(SRC_ROOT, recipe.unit.src);
  const f: Fixture = {
    name,
    path: join(dir, recipe.file),
    srcDir,
    sourceFiles: recipe.sources.map((s) => join(srcDir, s)),
    ...recipe.meta,
  };
  if (recipe.debugFile) {
    f.debugFile = join(dir, typeof recipe.debugFile === 'string' ? recipe.debugFile : recipe.debugFile(dir));
  }
  if (recipe.debugDirs) f.debugDirs = recipe.debugDirs.map((d) => join(dir, d));
  if (recipe.libraries) f.libraries = recipe.libraries.map((l) => join(dir, l));
  return f;
}

/** fixture(), except that a missing toolchain skips the test (and fails it under CI=true) via missing(). */
export function fixtureOrSkip(t: TestContext, name: FixtureName): Promise<Fixture | undefined> {
  return orSkip(t, () => fixture(name), ToolchainMissing);
}

/** Builds every fixture, two units at a time (the machines have two cores). */
export async function buildAllFixtures(): Promise<Fixture[]> {
  const out: Fixture[] = [];
  const queue = [...FIXTURE_NAMES];
  const worker = async () => {
    for (let name = queue.shift(); name; name = queue.shift()) out.push(await fixture(name));
  };
  await Promise.all([worker(), worker()]);
  return FIXTURE_NAMES.map((n) => out.find((f) => f.name === n)!);
}

/** The 1-based line of the source line carrying `@line:MARKER` (a comment in the fixture source). */
export function markerLine(f: Fixture, marker: string): { file: string; line: number } {
  for (const file of f.sourceFiles) {
    const lines = readFileSync(file, 'utf8').split('\n');
    const i = lines.findIndex((l) => l.includes(`@line:${marker}`));
    if (i >= 0) return { file, line: i + 1 };
  }
  throw new Error(`no @line:${marker} marker in ${f.sourceFiles.join(', ')}`);
}

/** Runs a fixture program to completion and parses what it printed. */
export async function runFixture(f: Fixture, args: string[] = []): Promise<FixtureOutput> {
  if (f.arch !== 'x86_64') throw new Error(`fixture ${f.name} is built for ${f.arch} and cannot run here`);
  const { stdout } = await execFileP(f.path, args, { maxBuffer: 64 << 20 });
  return parseFixtureOutput(stdout);
}

if (require.main === module) {
  const args = process.argv.slice(2);
  const names = args.includes('--all') ? [...FIXTURE_NAMES] : (args as FixtureName[]);
  if (names.length === 0) {
    console.error('usage: node --import tsx test/helpers/fixtures.ts --all | NAME…');
    process.exit(2);
  }
  const job = args.includes('--all') ? buildAllFixtures() : Promise.all(names.map((n) => fixture(n)));
  job.then(
    (fs) => {
      for (const f of fs) console.log(`${f.name}\t${f.path}`);
      console.log(`fixtures cache: ${fixturesCacheRoot()}`);
    },
    (e: Error) => {
      console.error(e.message);
      process.exit(1);
    },
  );
}

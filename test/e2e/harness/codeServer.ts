// Starts a real VS Code (code-server, run by the Node 24 from the test cache) on 127.0.0.1 with ProbeLens
// installed from its packaged .vsix, and opens it in Debian's Chromium driven by playwright-core.
// Everything it writes (user data, extensions, the workspace copy) lives in one throwaway folder.
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { createWriteStream, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { chromium, type Browser, type Page } from 'playwright-core';
import { codeServerEnv, ensureE2eSetup, type E2ePaths } from './setup';
import { packageVsix } from './vsix';
import { prepareWorkspace } from './workspaces';

export class CodeServerError extends Error {
  constructor(message: string, nextStep: string) {
    super(`${message}\n  next step: ${nextStep}`);
    this.name = 'CodeServerError';
  }
}

export interface CodeServerOptions {
  /** A fixture workspace name (test/fixtures/workspaces/NAME) or an absolute folder opened as it is. */
  workspace: string;
  /** User settings on top of the quiet defaults below. */
  settings?: Record<string, unknown>;
  /** The .vsix to install; default: `npm run package` once per test process. */
  vsix?: string;
  /** More .vsix files to install beside ProbeLens (test-only helper extensions). */
  extraVsix?: string[];
  /** Open Chromium (default true); `npm start` leaves the browser to the user. */
  browser?: boolean;
  /** Port on 127.0.0.1; default 0, a free one chosen by the kernel. */
  port?: number;
  /** Aborting (e.g. a test's `t.signal` on timeout) stops a start that is still under way. */
  signal?: AbortSignal;
  /**
   * Seconds code-server keeps a window's extension host after its browser tab goes away (code-server's own
   * default is hours, waiting for the tab to reconnect).
   */
  reconnectionGraceSeconds?: number;
  /** Extra environment for code-server and its extension host (e.g. a throwaway XDG_CACHE_HOME for a cold start). */
  env?: Record<string, string>;
}

export interface CodeServer {
  /** The workbench URL with the workspace folder open. */
  url: string;
  /** The folder open in the workbench (a copy for fixture workspaces). */
  workspaceDir: string;
  /** Throwaway root: user-data/, extensions/, code-server.log, the workspace copy. */
  workDir: string;
  logPath: string;
  browser?: Browser;
  page?: Page;
  /** Settles when code-server exits, with its exit code (null when killed by a signal). */
  exited: Promise<number | null>;
  /** Saves a full-page screenshot and returns its path. */
  screenshot(path: string): Promise<string>;
  /** Closes the browser, stops code-server and deletes the throwaway folder unless `keep`. */
  stop(opts?: { keep?: boolean }): Promise<void>;
}

// Quiet, deterministic workbench: no welcome page, no trust prompt, no tips, telemetry and update checks off,
// no restored editors from an earlier run.
const DEFAULT_SETTINGS: Record<string, unknown> = {
  'workbench.startupEditor': 'none',
  'workbench.tips.enabled': false,
  'workbench.secondarySideBar.defaultVisibility': 'hidden',
  'workbench.enableExperiments': false,
  'workbench.welcomePage.walkthroughs.openOnInstall': false,
  'workbench.editor.restoreViewState': false,
  'window.restoreWindows': 'none',
  'security.workspace.trust.enabled': false,
  'telemetry.telemetryLevel': 'off',
  'update.mode': 'none',
  'extensions.autoCheckUpdates': false,
  'extensions.autoUpdate': false,
  'extensions.ignoreRecommendations': true,
  'chat.disableAIFeatures': true,
  'chat.commandCenter.enabled': false,
  'git.enabled': false,
  'editor.minimap.enabled': false,
  // A blinking cursor is sometimes invisible; the helpers locate lines by the cursor's box.
  'editor.cursorBlinking': 'solid',
  'editor.codeLens': true,
};

export const CHROMIUM_ARGS = [
  '--no-sandbox',
  '--disable-gpu',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
  '--no-first-run',
  '--disable-quic',
];

const START_TIMEOUT_MS = 90_000;

export async function startCodeServer(opts: CodeServerOptions): Promise<CodeServer> {
  const paths = ensureE2eSetup();
  const workDir = mkdtempSync(join(tmpdir(), 'probelens-e2e-'));
  const userData = join(workDir, 'user-data');
  const extensions = join(workDir, 'extensions');
  mkdirSync(join(userData, 'User'), { recursive: true });
  mkdirSync(extensions, { recursive: true });
  writeFileSync(join(userData, 'User', 'settings.json'), JSON.stringify({ ...DEFAULT_SETTINGS, ...opts.settings }, null, 2));
  const workspaceDir = opts.workspace.startsWith('/') ? opts.workspace : prepareWorkspace(opts.workspace, workDir);
  const vsix = opts.vsix ?? packageVsix();
  for (const v of [vsix, ...(opts.extraVsix ?? [])]) installExtension(paths, v, workDir, userData, extensions);

  const logPath = join(workDir, 'code-server.log');
  const log = createWriteStream(logPath);
  const child = spawn(
    paths.nodeBin,
    [
      paths.codeServerEntry,
      // Port 0: the kernel picks a free port and code-server logs it, so parallel runs never collide.
      '--bind-addr',
      `127.0.0.1:${opts.port ?? 0}`,
      '--auth',
      'none',
      '--disable-telemetry',
      '--disable-update-check',
      '--disable-workspace-trust',
      '--disable-getting-started-override',
      '--ignore-last-opened',
      '--user-data-dir',
      userData,
      '--extensions-dir',
      extensions,
      ...(opts.reconnectionGraceSeconds !== undefined ? ['--reconnection-grace-time', String(opts.reconnectionGraceSeconds)] : []),
    ],
    // Its own process group, so stop() also ends the extension host and the other helpers it forks.
    { cwd: workDir, env: { ...codeServerEnv(paths, workDir), ...opts.env }, stdio: ['ignore', 'pipe', 'pipe'], detached: true },
  );
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  child.stdout!.pipe(log, { end: false });
  child.stderr!.pipe(log, { end: false });

  let browser: Browser | undefined;
  const stop = async ({ keep = false } = {}): Promise<void> => {
    await browser?.close().catch(() => undefined);
    await killGroup(child);
    log.end();
    if (!keep) rmSync(workDir, { recursive: true, force: true });
  };

  const onAbort = (): void => void stop({ keep: true });
  opts.signal?.addEventListener('abort', onAbort, { once: true });
  try {
    const base = await waitForListening(child, logPath);
    const url = `${base}?folder=${encodeURIComponent(workspaceDir)}`;
    let page: Page | undefined;
    if (opts.browser !== false) {
      browser = await chromium.launch({ executablePath: paths.chromium, headless: true, args: CHROMIUM_ARGS });
      const context = await browser.newContext({ viewport: { width: 1400, height: 900 } });
      page = await context.newPage();
      await page.goto(url);
      await waitForWorkbench(page);
    }
    const screenshot = async (path: string): Promise<string> => {
      if (!page) throw new CodeServerError('no browser page to screenshot', 'start with browser: true');
      await page.screenshot({ path, fullPage: true });
      return path;
    };
    opts.signal?.removeEventListener('abort', onAbort);
    return { url, workspaceDir, workDir, logPath, browser, page, exited, screenshot, stop };
  } catch (e) {
    opts.signal?.removeEventListener('abort', onAbort);
    await stop({ keep: true });
    throw new CodeServerError(
      `code-server did not come up: ${(e as Error).message}\n--- ${logPath} (tail) ---\n${tail(logPath)}`,
      `inspect ${workDir} (kept); rerun node scripts/e2e-setup.mjs if the cache looks broken`,
    );
  }
}

function installExtension(paths: E2ePaths, vsix: string, workDir: string, userData: string, extensions: string): void {
  const r = spawnSync(
    paths.nodeBin,
    [paths.codeServerEntry, '--install-extension', vsix, '--user-data-dir', userData, '--extensions-dir', extensions],
    { encoding: 'utf8', timeout: 120_000, env: codeServerEnv(paths, workDir) },
  );
  if (r.status !== 0 || !/successfully installed/i.test(r.stdout)) {
    throw new CodeServerError(
      `installing ${vsix} into code-server failed (exit ${r.status ?? r.signal}):\n${r.stdout}${r.stderr}`,
      "check the .vsix with `npx vsce ls` and the manifest's engines.vscode against code-server's VS Code",
    );
  }
}

function waitForListening(child: ChildProcess, logPath: string): Promise<string> {
  return new Promise((resolve, reject) => {
    let seen = '';
    const timer = setTimeout(
      () => fail(new Error(`no "HTTP server listening" line within ${START_TIMEOUT_MS / 1000} s`)),
      START_TIMEOUT_MS,
    );
    const onData = (b: Buffer): void => {
      seen += b.toString();
      const m = /HTTP server listening on (http:\/\/127\.0\.0\.1:\d+\/?)/.exec(seen);
      if (m) done(m[1].endsWith('/') ? m[1] : `${m[1]}/`);
    };
    const onExit = (code: number | null, signal: string | null): void =>
      fail(new Error(`code-server exited early (${code ?? signal}); log: ${logPath}`));
    function cleanup(): void {
      clearTimeout(timer);
      child.stdout!.off('data', onData);
      child.stderr!.off('data', onData);
      child.off('exit', onExit);
    }
    function done(url: string): void {
      cleanup();
      resolve(url);
    }
    function fail(e: Error): void {
      cleanup();
      reject(e);
    }
    child.stdout!.on('data', onData);
    child.stderr!.on('data', onData);
    child.on('exit', onExit);
  });
}

/** The workbench is usable once its parts are laid out and the status bar is drawn. */
async function waitForWorkbench(page: Page): Promise<void> {
  await page.locator('.monaco-workbench .part.statusbar').waitFor({ state: 'visible', timeout: START_TIMEOUT_MS });
  await page
    .locator('.monaco-workbench .part.activitybar, .monaco-workbench .part.sidebar')
    .first()
    .waitFor({ state: 'visible', timeout: START_TIMEOUT_MS });
}

async function killGroup(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null || child.pid === undefined) return;
  const exited = new Promise<void>((r) => child.once('exit', () => r()));
  try {
    process.kill(-child.pid, 'SIGTERM');
  } catch {
    return;
  }
  const timer = setTimeout(() => {
    try {
      process.kill(-child.pid!, 'SIGKILL');
    } catch {
      // already gone
    }
  }, 5_000);
  await exited;
  clearTimeout(timer);
}

function tail(path: string, lines = 40): string {
  try {
    return readFileSync(path, 'utf8').split('\n').slice(-lines).join('\n');
  } catch {
    return '(no log)';
  }
}

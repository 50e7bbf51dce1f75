// The live panel's real page in real Chromium, for the webview tests and `npm run bench:panel`:
// the webview bundle built from webview/main.ts, the exact HTML and CSP LivePanel serves, and a fake
// VS Code host (`fakeVsCodeApi`, standing in for acquireVsCodeApi) that records what the webview posts.
import { existsSync, mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import * as esbuild from 'esbuild';
import { chromium, type Browser, type Page } from 'playwright-core';
import type { FromWebview, ToWebview } from '../src/shared/protocol';
import { renderPanelHtml } from '../src/vscode/panel/html';

export const CHROMIUM = process.env.PROBELENS_CHROMIUM ?? '/usr/bin/chromium';
export const chromiumMissing = (): string | null =>
  existsSync(CHROMIUM) ? null : `Chromium at ${CHROMIUM} (apt-get install chromium, or set PROBELENS_CHROMIUM)`;

const ORIGIN = 'https://probelens-webview.test';
const ROOT = resolve(__dirname, '..');

export interface PanelBundle {
  js: string;
  css: string;
}

/** Builds the webview like esbuild.mjs does, into a private folder (tests must see the current source). */
export async function buildWebview(minify = false): Promise<PanelBundle> {
  const outdir = mkdtempSync(join(tmpdir(), 'probelens-webview-'));
  await esbuild.build({
    entryPoints: { webview: join(ROOT, 'webview/main.ts') },
    bundle: true,
    platform: 'browser',
    target: 'es2022',
    format: 'iife',
    outdir,
    minify,
    logLevel: 'silent',
    legalComments: 'none',
  });
  return { js: readFileSync(join(outdir, 'webview.js'), 'utf8'), css: readFileSync(join(outdir, 'webview.css'), 'utf8') };
}

export const BENCH_WORKER_URL = `${ORIGIN}/bench-worker.js`;

/** The benchmark's feed (SyntheticHitSource + PanelFeed) bundled for a browser worker. */
export async function buildBenchWorker(): Promise<string> {
  const r = await esbuild.build({
    entryPoints: [join(ROOT, 'bench/panelWorker.ts')],
    bundle: true,
    platform: 'browser',
    target: 'es2022',
    format: 'iife',
    write: false,
    minify: true,
    logLevel: 'silent',
  });
  return r.outputFiles[0].text;
}

export async function launchChromium(): Promise<Browser> {
  return chromium.launch({
    executablePath: CHROMIUM,
    args: [
      '--no-sandbox',
      '--disable-gpu',
      '--headless',
      '--disable-background-networking',
      '--disable-component-update',
      '--disable-sync',
    ],
  });
}

export interface PanelPage {
  page: Page;
  /** deliver messages as the extension host would (window 'message' events) */
  send(...msgs: ToWebview[]): Promise<void>;
  /** everything the webview posted to the host so far */
  posted(): Promise<FromWebview[]>;
  /** the state the webview last saved with setState */
  savedState(): Promise<unknown>;
  /** uncaught exceptions and console errors in the page */
  readonly errors: string[];
  /** Content-Security-Policy violations the page reported */
  cspViolations(): Promise<string[]>;
  close(): Promise<void>;
}

export interface OpenOptions {
  bundle: PanelBundle;
  /** what getState() returns, as if the panel were being restored */
  state?: unknown;
  width?: number;
  height?: number;
  /** bench only: serve this worker script and allow it in the CSP (`worker-src`) */
  worker?: string;
  /** tests: the page's timers, animation frames and clocks are Playwright's, moved with `page.clock` */
  fakeClock?: boolean;
}

/**
 * Installed before any page script: the stand-in for VS Code's acquireVsCodeApi. Kept as source text:
 * a function passed to addInitScript would be serialised after tsx's transform, helpers and all.
 */
function fakeVsCodeApiScript(initialState: unknown): string {
  return `(() => {
  const fake = { posted: [], state: ${JSON.stringify(initialState ?? null)}, violations: [] };
  window.__fakeVsCodeHost = fake;
  document.addEventListener('securitypolicyviolation', (e) => {
    fake.violations.push(e.violatedDirective + ': ' + (e.blockedURI || 'inline') + ' ' + e.sourceFile + ':' + e.lineNumber);
  });
  let acquired = false;
  window.acquireVsCodeApi = function fakeVsCodeApi() {
    if (acquired) throw new Error('acquireVsCodeApi may be called once (as in VS Code)');
    acquired = true;
    return {
      postMessage: (m) => { fake.posted.push(JSON.parse(JSON.stringify(m))); if (fake.onPost) fake.onPost(m); },
      getState: () => (fake.state === null ? undefined : fake.state),
      setState: (s) => { fake.state = JSON.parse(JSON.stringify(s)); },
    };
  };
})();`;
}

export async function openPanelPage(browser: Browser, o: OpenOptions): Promise<PanelPage> {
  const context = await browser.newContext({ viewport: { width: o.width ?? 1200, height: o.height ?? 700 } });
  const page = await context.newPage();
  const nonce = 'bm9uY2UtZm9yLXRlc3Rz';
  let html = renderPanelHtml({ cspSource: ORIGIN, scriptUri: `${ORIGIN}/webview.js`, styleUri: `${ORIGIN}/webview.css`, nonce });
  if (o.worker) html = html.replace("default-src 'none'", `default-src 'none'; worker-src ${ORIGIN}`);
  await page.route(`${ORIGIN}/**`, (route) => {
    const path = new URL(route.request().url()).pathname;
    if (path === '/index.html') return route.fulfill({ contentType: 'text/html', body: html });
    if (path === '/webview.js') return route.fulfill({ contentType: 'text/javascript', body: o.bundle.js });
    if (path === '/webview.css') return route.fulfill({ contentType: 'text/css', body: o.bundle.css });
    if (path === '/bench-worker.js' && o.worker) return route.fulfill({ contentType: 'text/javascript', body: o.worker });
    return route.fulfill({ status: 404, body: '' });
  });
  const errors: string[] = [];
  page.on('pageerror', (e) => errors.push(e.message));
  page.on('console', (m) => {
    if (m.type() === 'error') errors.push(m.text());
  });
  await page.addInitScript({ content: fakeVsCodeApiScript(o.state) });
  if (o.fakeClock) await page.clock.install();
  await page.goto(`${ORIGIN}/index.html`);
  const fake = '__fakeVsCodeHost';
  return {
    page,
    errors,
    send: async (...msgs) => {
      // unknown[]: playwright's serializability check recurses without end into the recursive HitValue type.
      await page.evaluate((ms) => {
        for (const m of ms) window.postMessage(m, '*');
      }, msgs as unknown[]);
    },
    posted: () => page.evaluate((k) => (window as unknown as Record<string, { posted: FromWebview[] }>)[k].posted, fake),
    savedState: () => page.evaluate((k) => (window as unknown as Record<string, { state: unknown }>)[k].state, fake),
    cspViolations: () => page.evaluate((k) => (window as unknown as Record<string, { violations: string[] }>)[k].violations, fake),
    close: () => context.close(),
  };
}

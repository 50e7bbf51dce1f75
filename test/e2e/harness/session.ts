// One test's code-server: started, handed to the test body, and always stopped. On failure a screenshot goes to
// test-results/ (its path printed) and the throwaway folder with code-server's and the extension host's logs is
// kept and named, so a red CI run says where to look.
import { existsSync, mkdirSync } from 'node:fs';
import { arch, platform } from 'node:os';
import { join } from 'node:path';
import type { TestContext } from 'node:test';
import type { Page } from 'playwright-core';
import { CHROMIUM } from './setup';
import { missing } from '../../helpers/require';
import { startCodeServer, type CodeServer, type CodeServerOptions } from './codeServer';
import { REPO_ROOT } from './vsix';

export const RESULTS_DIR = join(REPO_ROOT, 'test-results');

/** What the e2e tier needs that setup cannot install; false (after marking the test skipped) when missing. */
export function e2ePrerequisites(t: TestContext): boolean {
  if (platform() !== 'linux' || arch() !== 'x64') {
    missing(t, `the e2e tier's Node 24 and code-server builds are for linux-x64, not ${platform()}-${arch()}`);
    return false;
  }
  // As root the setup installs Debian's chromium itself; otherwise it has to be there already.
  const canInstall = CHROMIUM === '/usr/bin/chromium' && process.getuid?.() === 0 && existsSync('/usr/bin/apt-get');
  if (!existsSync(CHROMIUM) && !canInstall) {
    missing(t, `no Chromium at ${CHROMIUM} (apt-get install -y chromium, or set PROBELENS_CHROMIUM)`);
    return false;
  }
  return true;
}

export type OpenWorkbench = CodeServer & { page: Page };

/**
 * Starts code-server with a browser for test `t`, runs `body`, and stops everything in a `t.after` hook, which
 * node:test also runs when the test times out: a hung step can neither leak code-server nor keep the test
 * process alive. A failure or timeout leaves a screenshot in test-results/ and the throwaway folder in place,
 * and prints where both are.
 */
export async function withCodeServer(t: TestContext, opts: CodeServerOptions, body: (cs: OpenWorkbench) => Promise<void>): Promise<void> {
  const cs = await startCodeServer({ ...opts, browser: true, signal: t.signal });
  let passed = false;
  t.after(async () => {
    if (!passed) await reportFailure(t, cs);
    await cs.stop({ keep: !passed });
  });
  await body(cs as OpenWorkbench);
  passed = true;
}

async function reportFailure(t: TestContext, cs: CodeServer): Promise<void> {
  mkdirSync(RESULTS_DIR, { recursive: true });
  const shot = join(RESULTS_DIR, `${slug(t.name)}.png`);
  const saved = await cs.screenshot(shot).then(
    () => `failure screenshot: ${shot}`,
    (err) => `no screenshot (${err})`,
  );
  const where = `${saved}\ncode-server log: ${cs.logPath}\nuser data (extension host logs under logs/): ${join(cs.workDir, 'user-data')}`;
  console.error(where);
  t.diagnostic(where.replace(/\n/g, ' | '));
}

function slug(name: string): string {
  return (
    name
      .replace(/[^A-Za-z0-9._-]+/g, '-')
      .replace(/^-+|-+$/g, '')
      .slice(0, 80) || 'e2e'
  );
}

/**
 * Saves a screenshot for the README: into media/NAME.png when PROBELENS_UPDATE_MEDIA=1 (so ordinary runs leave
 * the committed images alone), otherwise into test-results/. Returns the path.
 */
export async function mediaScreenshot(page: Page, name: string): Promise<string> {
  const dir = process.env.PROBELENS_UPDATE_MEDIA === '1' ? join(REPO_ROOT, 'media') : RESULTS_DIR;
  mkdirSync(dir, { recursive: true });
  const path = join(dir, `${name}.png`);
  await page.screenshot({ path });
  return path;
}

// The webview DOM tests' shared Chromium: one browser and one webview build per test file (registered as
// that describe block's before/after hooks), and a page per test that closes with the test. Without
// Chromium a test is missing (it fails under CI=true).
import { after, before, type TestContext } from 'node:test';
import type { Browser } from 'playwright-core';
import { missing } from './require';
import {
  buildWebview,
  chromiumMissing,
  launchChromium,
  openPanelPage,
  type OpenOptions,
  type PanelBundle,
  type PanelPage,
} from '../../bench/panelPage';

export interface PanelBrowser {
  /** The panel's page for this test, or null (the test is reported missing) when Chromium is unavailable. */
  open(t: TestContext, o?: Omit<OpenOptions, 'bundle'>): Promise<PanelPage | null>;
}

/** Call inside a `describe`. */
export function usePanelBrowser(): PanelBrowser {
  let browser: Browser | undefined;
  let bundle: PanelBundle | undefined;
  const skip = chromiumMissing();
  before(async () => {
    if (skip) return;
    bundle = await buildWebview();
    browser = await launchChromium();
  });
  after(async () => {
    await browser?.close();
  });
  return {
    async open(t, o = {}) {
      if (skip || !browser || !bundle) {
        missing(t, skip ?? 'Chromium did not start');
        return null;
      }
      const p = await openPanelPage(browser, { ...o, bundle });
      t.after(() => p.close());
      return p;
    },
  };
}

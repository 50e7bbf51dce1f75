// What a user does in the workbench, as bounded steps: every wait has a timeout and fails with what it was
// waiting for, never hangs. Selectors are the workbench's own stable class names and ARIA attributes.
import type { Frame, Locator, Page } from 'playwright-core';

export const DEFAULT_TIMEOUT_MS = 30_000;
/** Quick Open's first file search waits for the extension host to start (see openFile). */
const FIRST_SEARCH_TIMEOUT_MS = 120_000;

export interface WaitOptions {
  timeout?: number;
}

const QUICK_INPUT = '.quick-input-widget';
const QUICK_INPUT_BOX = `${QUICK_INPUT} .quick-input-box input`;
const QUICK_INPUT_ROW = `${QUICK_INPUT} .quick-input-list .monaco-list-row`;

function escapeRegExp(s: string): string {
  return s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}

/**
 * The quick input row whose label is exactly `label` (not merely containing it: "Trace" ≠ "Trace Returns"), or
 * matches `label` when it is a RegExp.
 */
export function quickInputRow(page: Page, label: string | RegExp): Locator {
  const text = typeof label === 'string' ? new RegExp(`^\\s*${escapeRegExp(label)}\\s*$`) : label;
  const name = page.locator('.label-name', { hasText: text });
  return page.locator(QUICK_INPUT_ROW).filter({ has: name }).first();
}

/** Opens `relPath` with Quick Open (Ctrl+P) and waits for its editor tab to be active. */
export async function openFile(page: Page, relPath: string, opts: WaitOptions = {}): Promise<void> {
  const timeout = opts.timeout ?? DEFAULT_TIMEOUT_MS;
  const base = relPath.split('/').pop()!;
  await focusWorkbench(page);
  await page.keyboard.press('Control+P');
  const input = page.locator(QUICK_INPUT_BOX);
  await input.waitFor({ state: 'visible', timeout });
  await input.fill(relPath);
  // The file search runs in the extension host (its ripgrep file search provider), which answers only once it has
  // started and activated the workspace's extensions: on a loaded 2-core machine that alone has taken over 30 s
  // (seen in CI with the status bar still saying "Activating Extensions…"). Wait for the row for this file — not
  // whatever is highlighted first — with a bound that covers a cold extension host.
  const row = quickInputRow(page, base);
  await row.waitFor({ state: 'visible', timeout: Math.max(timeout, FIRST_SEARCH_TIMEOUT_MS) });
  await row.click();
  await activeTab(page, base).waitFor({ state: 'visible', timeout });
  await page.locator('.editor-instance .monaco-editor').first().waitFor({ state: 'visible', timeout });
}

/** The active editor tab whose label is `name`. */
export function activeTab(page: Page, name: string): Locator {
  return page.locator(`.tabs-container .tab.active[aria-label^="${name}"], .title .label-name:text-is("${name}")`).first();
}

/**
 * Runs a command from the palette (F1) by its full title, e.g. "ProbeLens: Show Version". Extensions register
 * their commands when they activate, after the workbench is up, so this retries until the command is listed.
 */
export async function runCommand(page: Page, title: string, opts: WaitOptions = {}): Promise<void> {
  const timeout = opts.timeout ?? DEFAULT_TIMEOUT_MS;
  const deadline = Date.now() + timeout;
  const row = quickInputRow(page, title);
  for (;;) {
    await focusWorkbench(page);
    await page.keyboard.press('F1');
    const input = page.locator(QUICK_INPUT_BOX);
    await input.waitFor({ state: 'visible', timeout: Math.max(1_000, deadline - Date.now()) });
    await input.fill(`>${title}`);
    try {
      await row.waitFor({ state: 'visible', timeout: Math.min(5_000, Math.max(1_000, deadline - Date.now())) });
    } catch (e) {
      // Not listed yet (the extension has not activated): close the palette and ask again. Escape is pressed only
      // here, never after the click: with notifications on screen it would also hide them (notifications.hideToasts),
      // the very toast a test waits for next.
      await page.keyboard.press('Escape');
      if (Date.now() >= deadline) {
        throw new Error(`command "${title}" not in the command palette after ${timeout} ms (${(e as Error).message.split('\n')[0]})`);
      }
      continue;
    }
    await row.click();
    // The command runs once clicked; on a loaded machine the palette may take a while to close.
    await page.locator(QUICK_INPUT).waitFor({ state: 'hidden', timeout: Math.max(10_000, deadline - Date.now()) });
    return;
  }
}

/**
 * Opens a quick pick with `open` and clicks its row `row`, opening it again (three times in all at most) when the pick
 * closed before the row could be clicked, as a user would. A quick pick closes when it loses the focus, and on a
 * loaded machine the workbench may still be moving the focus to a view or an editor it has just opened (seen in CI:
 * the row found, "not stable", then hidden for good). A pick still open whose row cannot be clicked is a failure.
 */
async function pickRow(page: Page, open: () => Promise<void>, row: Locator): Promise<void> {
  for (let i = 1; ; i++) {
    await open();
    try {
      await row.waitFor({ state: 'visible', timeout: DEFAULT_TIMEOUT_MS });
      await row.click({ timeout: 15_000 });
      return;
    } catch (e) {
      if (i >= 3 || (await page.locator(QUICK_INPUT).isVisible())) throw e;
    }
  }
}

/**
 * Probes view → "Add SSH Target…": the host `host` from the ssh config, run as the login user, the workspace not
 * mirrored there (the binary has the same path). The mirror-folder prompt replaces the quick pick in the same widget,
 * whose input box was visible all along: the prompt itself is waited for before it is answered.
 */
export async function addSshTarget(page: Page, host: string): Promise<void> {
  await pickRow(
    page,
    async () => {
      await showProbeLensView(page);
      await page.locator('.action-label[aria-label^="Add SSH Target"]').first().click();
    },
    quickInputRow(page, host),
  );
  await quickInputRow(page, /As the login user/).click();
  const mirror = page.locator(QUICK_INPUT).filter({ hasText: 'mirrors this workspace folder' });
  await mirror.waitFor({ state: 'visible', timeout: DEFAULT_TIMEOUT_MS });
  await mirror.locator('.quick-input-box input').press('Enter');
  await mirror.waitFor({ state: 'hidden', timeout: DEFAULT_TIMEOUT_MS });
}

/**
 * Runs `title` from the palette and waits for the notification it shows, running it again (at most `attempts` times
 * in all) when none came: on a loaded machine a click on a palette row that is being re-rendered can close the
 * palette without running anything, as it would for a user, who would run the command again.
 */
export async function runCommandFor(
  page: Page,
  title: string,
  notification: string | RegExp,
  opts: WaitOptions & { attempts?: number } = {},
): Promise<Locator> {
  const attempts = opts.attempts ?? 3;
  for (let i = 1; ; i++) {
    await runCommand(page, title, opts);
    try {
      return await waitForNotification(page, notification, { timeout: 20_000 });
    } catch (e) {
      if (i >= attempts) throw e;
    }
  }
}

/** Waits for a notification toast containing `text` and returns it. */
export async function waitForNotification(page: Page, text: string | RegExp, opts: WaitOptions = {}): Promise<Locator> {
  const toast = page.locator('.notifications-toasts .notification-toast').filter({ hasText: text }).first();
  await toast.waitFor({ state: 'visible', timeout: opts.timeout ?? DEFAULT_TIMEOUT_MS });
  return toast;
}

/** The code lens links of the visible editor(s) whose text matches `text`. */
export function codeLens(page: Page, text: string | RegExp): Locator {
  return page.locator('.monaco-editor .codelens-decoration a').filter({ hasText: text });
}

/**
 * Clicks a code lens link matching `text`. With `line`, first moves the cursor there (which scrolls it into view:
 * lenses exist in the DOM only for visible lines) and clicks the matching lens drawn right above that line;
 * without it, the first matching lens on screen.
 */
export async function clickCodeLens(page: Page, text: string | RegExp, opts: WaitOptions & { line?: number } = {}): Promise<void> {
  const timeout = opts.timeout ?? DEFAULT_TIMEOUT_MS;
  const lenses = codeLens(page, text);
  if (opts.line === undefined) {
    await lenses.first().waitFor({ state: 'visible', timeout });
    await lenses.first().click();
    return;
  }
  await goToLine(page, opts.line, opts);
  const deadline = Date.now() + timeout;
  // Lenses arrive asynchronously and push the lines below them down, so measure the cursor and the lenses
  // together on every poll and click only once the same lens has been found on two polls in a row.
  let previous: { i: number; bottom: number } | undefined;
  for (;;) {
    const cursor = await cursorBox(page, timeout);
    // The lens row sits directly above its line: the matching lens whose box ends closest above the cursor.
    let best: { i: number; bottom: number } | undefined;
    const n = await lenses.count();
    for (let i = 0; i < n; i++) {
      // A lens can vanish between count() and here (lens rows are re-rendered as providers answer): skip it
      // for this poll rather than wait for it.
      const box = await lenses
        .nth(i)
        .boundingBox({ timeout: 1000 })
        .catch(() => null);
      if (!box) continue;
      const bottom = box.y + box.height;
      if (bottom <= cursor.y + 2 && cursor.y - bottom < cursor.height * 1.5 && (!best || bottom > best.bottom)) best = { i, bottom };
    }
    if (best && previous && best.i === previous.i && Math.abs(best.bottom - previous.bottom) < 1) {
      await lenses.nth(best.i).click();
      return;
    }
    previous = best;
    if (Date.now() >= deadline) throw new Error(`no code lens matching ${String(text)} above line ${opts.line} within ${timeout} ms`);
    await page.waitForTimeout(300);
  }
}

/** The cursor's box once it has stopped moving (code lenses and decorations arriving shift lines down). */
async function stableCursorBox(page: Page, timeout: number): Promise<{ x: number; y: number; height: number }> {
  const deadline = Date.now() + timeout;
  let last = await cursorBox(page, timeout);
  for (;;) {
    await page.waitForTimeout(300);
    const now = await cursorBox(page, timeout);
    if (Math.abs(now.y - last.y) < 1 && Math.abs(now.x - last.x) < 1) return now;
    if (Date.now() >= deadline) throw new Error(`the editor cursor kept moving for ${timeout} ms`);
    last = now;
  }
}

async function cursorBox(page: Page, timeout: number): Promise<{ x: number; y: number; height: number }> {
  const cursor = page.locator('.editor-instance .monaco-editor.focused .cursors-layer .cursor').first();
  await cursor.waitFor({ state: 'visible', timeout });
  const box = await cursor.boundingBox();
  if (!box) throw new Error('the editor cursor has no box (editor hidden?)');
  return box;
}

/** Moves the cursor of the active editor to `line` (1-based) with Go to Line (Ctrl+G). */
export async function goToLine(page: Page, line: number, opts: WaitOptions = {}): Promise<void> {
  const timeout = opts.timeout ?? DEFAULT_TIMEOUT_MS;
  await page.locator('.editor-instance .monaco-editor textarea').first().focus();
  await page.keyboard.press('Control+G');
  const input = page.locator(QUICK_INPUT_BOX);
  await input.waitFor({ state: 'visible', timeout });
  await input.fill(`:${line}`);
  await page.keyboard.press('Enter');
  await page.locator(QUICK_INPUT).waitFor({ state: 'hidden', timeout });
  await page
    .locator('.statusbar-item', { hasText: new RegExp(`Ln ${line},`) })
    .first()
    .waitFor({ state: 'visible', timeout });
}

/** Right-clicks in the active editor at `line`, where the cursor is, and returns the context menu. */
export async function openEditorContextMenu(page: Page, line: number, opts: WaitOptions = {}): Promise<Locator> {
  const timeout = opts.timeout ?? DEFAULT_TIMEOUT_MS;
  await goToLine(page, line, opts);
  const box = await stableCursorBox(page, timeout);
  await page.mouse.click(box.x + 1, box.y + box.height / 2, { button: 'right' });
  const menu = page.locator('.context-view .monaco-menu').first();
  await menu.waitFor({ state: 'visible', timeout });
  return menu;
}

/**
 * Clicks the context menu entry labelled exactly `label` (the menu must be open). Monaco's menus ignore a click
 * that arrives right after they open (so the right-click's own mouseup cannot pick an entry), and the ignored click
 * leaves the menu open with the entry highlighted. So: hover the entry, wait until the menu has taken the hover (it
 * marks the entry `focused`: it accepts input now), click, and wait for the menu to close — the sign the click was
 * taken. A click the menu ignored leaves it open, and only then is it safe to click again.
 */
export async function clickContextMenuItem(page: Page, label: string, opts: WaitOptions = {}): Promise<void> {
  const timeout = opts.timeout ?? DEFAULT_TIMEOUT_MS;
  const menu = page.locator('.context-view .monaco-menu').first();
  const entry = page
    .locator('.context-view .monaco-menu .action-item')
    .filter({ has: page.locator('.action-label', { hasText: new RegExp(`^\\s*${escapeRegExp(label)}\\s*$`) }) })
    .first();
  const deadline = Date.now() + timeout;
  for (;;) {
    await entry.waitFor({ state: 'visible', timeout: Math.max(1, deadline - Date.now()) });
    await entry.hover();
    await page.waitForFunction((el) => el?.classList.contains('focused') ?? false, await entry.elementHandle(), {
      timeout: Math.max(1, deadline - Date.now()),
    });
    await entry.click();
    try {
      await menu.waitFor({ state: 'hidden', timeout: Math.min(2_000, Math.max(1, deadline - Date.now())) });
      return;
    } catch (e) {
      if (Date.now() >= deadline) throw e;
    }
  }
}

/** The labels of the open context menu's entries, in order (separators left out). */
export async function contextMenuLabels(page: Page): Promise<string[]> {
  const labels = await page.locator('.context-view .monaco-menu .action-item .action-label').allInnerTexts();
  return labels.map((l) => l.trim()).filter((l) => l.length > 0);
}

/**
 * The content frame of a webview (editor panel or view) that contains `selector`. Webviews are nested
 * iframes (a host frame and its `active-frame`), so this polls every frame until one matches.
 */
export async function webviewFrame(page: Page, selector: string, opts: WaitOptions = {}): Promise<Frame> {
  const timeout = opts.timeout ?? DEFAULT_TIMEOUT_MS;
  const deadline = Date.now() + timeout;
  for (;;) {
    for (const frame of page.frames()) {
      if (frame === page.mainFrame()) continue;
      if (
        (await frame
          .locator(selector)
          .count()
          .catch(() => 0)) > 0
      )
        return frame;
    }
    if (Date.now() >= deadline) throw new Error(`no webview frame containing ${selector} within ${timeout} ms`);
    await page.waitForTimeout(250);
  }
}

/** The status bar entry containing `text`. */
export function statusBarItem(page: Page, text: string | RegExp): Locator {
  return page.locator('.part.statusbar .statusbar-item').filter({ hasText: text }).first();
}

/** Closes any quick input or menu and leaves keyboard focus in the workbench, not in the page's URL bar. */
async function focusWorkbench(page: Page): Promise<void> {
  if (await page.locator(QUICK_INPUT).isVisible()) await page.keyboard.press('Escape');
  if (await page.locator('.context-view .monaco-menu').isVisible()) await page.keyboard.press('Escape');
}

/**
 * Shows the ProbeLens side bar as a user does, by its activity bar icon, which toggles: the icon is clicked only when
 * its container is not the one showing (the item's `checked` class, set as the click is taken). Judging by a row of
 * the view instead races its first render: a second click on a view still drawing closes it again. Callers wait for
 * the rows they need.
 */
export async function showProbeLensView(page: Page, opts: WaitOptions = {}): Promise<void> {
  const item = page
    .locator('.activitybar .action-item')
    .filter({ has: page.locator('a[aria-label^="ProbeLens"]') })
    .first();
  const deadline = Date.now() + (opts.timeout ?? DEFAULT_TIMEOUT_MS);
  const showing = async () => (await item.getAttribute('class'))?.split(/\s+/).includes('checked') === true;
  while (!(await showing())) {
    if (Date.now() > deadline) throw new Error('the ProbeLens side bar did not show');
    await item.locator('a').click();
    const until = Date.now() + 5_000;
    while (!(await showing()) && Date.now() < until) await page.waitForTimeout(100);
  }
}

// Reading ProbeLens's inline results and building the C workspace for the e2e tests. Decorations draw their
// `contentText` as CSS ::after content, which is not DOM text: it is read from the computed style.
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { TestContext } from 'node:test';
import type { Page } from 'playwright-core';
import { missing } from '../helpers/require';
import { requireTracefs } from '../helpers/tracefs';
import { e2ePrerequisites } from './harness/session';
import { prepareWorkspace } from './harness/workspaces';

/** A copy of the C fixture workspace with build/calls built inside it (so DWARF names the files the editor opens). */
export function buildCWorkspace(parent: string): { dir: string; binary: string; rebuild(): void } {
  const dir = prepareWorkspace('c', parent);
  mkdirSync(join(dir, 'build'));
  const binary = join(dir, 'build', 'calls');
  const rebuild = () => execFileSync('gcc', ['-g', '-O0', '-o', binary, join(dir, 'calls.c')], { cwd: dir });
  rebuild();
  return { dir, binary, rebuild };
}

/** 1-based line of the definition of `fn` in calls.c. */
export function definitionLine(dir: string, fn: string): number {
  const lines = readFileSync(join(dir, 'calls.c'), 'utf8').split('\n');
  const i = lines.findIndex((l) => new RegExp(`^\\w[\\w\\s*]*?\\b${fn}\\s*\\([^;]*$`).test(l));
  assert.ok(i >= 0, `no definition of ${fn} in calls.c`);
  return i + 1;
}

/** 1-based line of the `@line:NAME` marker in calls.c. */
export function markerLine(dir: string, name: string): number {
  const i = readFileSync(join(dir, 'calls.c'), 'utf8')
    .split('\n')
    .findIndex((l) => l.includes(`@line:${name} `));
  assert.ok(i >= 0, `no marker @line:${name} in calls.c`);
  return i + 1;
}

/** The texts ProbeLens draws after lines of the visible editors. */
export async function inlineTexts(page: Page): Promise<string[]> {
  const raw = await page.evaluate(() => {
    const out: string[] = [];
    for (const el of Array.from(document.querySelectorAll('.monaco-editor .view-lines span'))) {
      const c = getComputedStyle(el, '::after').content;
      if (c && c !== 'none' && c !== 'normal') out.push(c);
    }
    return out;
  });
  // Computed content is a CSS string: quoted, with non-ASCII possibly as \HEX escapes.
  const texts = raw.map((c) => {
    try {
      return JSON.parse(c.replace(/\\([0-9a-f]{1,6}) ?/gi, (_m, h: string) => String.fromCodePoint(parseInt(h, 16)))) as string;
    } catch {
      return '';
    }
  });
  return texts.filter((s) => s.startsWith('●') || s.startsWith('○'));
}

export async function waitForInline(page: Page, want: RegExp, timeout: number, pollMs = 300): Promise<string> {
  const deadline = Date.now() + timeout;
  for (;;) {
    const seen = await inlineTexts(page);
    const hit = seen.find((s) => want.test(s));
    if (hit) return hit;
    if (Date.now() >= deadline) throw new Error(`no inline result matching ${want} within ${timeout} ms (saw: ${JSON.stringify(seen)})`);
    await page.waitForTimeout(pollMs);
  }
}

/** uprobe_events lines that name `path` (what a session left armed on this machine). */
export function uprobeEventsFor(tracefs: string, path: string): string[] {
  return readFileSync(join(tracefs, 'uprobe_events'), 'utf8')
    .split('\n')
    .filter((l) => l.includes(path));
}

/**
 * Chromium and code-server, tracefs, and root to trace on this machine: tracefs's path, or undefined (skipped, or
 * failed under CI).
 */
export function localTracingPrerequisites(t: TestContext): string | undefined {
  if (!e2ePrerequisites(t)) return undefined;
  const tracefs = requireTracefs(t);
  if (!tracefs) return undefined;
  if (process.getuid?.() !== 0) {
    missing(t, 'tracing on the local target needs root (or probelens.local.sudo with passwordless sudo)');
    return undefined;
  }
  return tracefs;
}

/**
 * What every local-tracing e2e test needs first: Chromium and code-server, tracefs, root, and a freshly built
 * C workspace in a scratch folder removed after the test. Undefined (skipped, or failed under CI) otherwise.
 */
export function localTracingWorkspace(t: TestContext): { tracefs: string; dir: string; binary: string; rebuild(): void } | undefined {
  const tracefs = localTracingPrerequisites(t);
  if (!tracefs) return undefined;
  const scratch = mkdtempSync(join(tmpdir(), 'probelens-e2e-ws-'));
  t.after(() => rmSync(scratch, { recursive: true, force: true }));
  return { tracefs, ...buildCWorkspace(scratch) };
}

/**
 * Hovers the mouse over ProbeLens's inline result matching `want` and returns the hover's text once it shows
 * `until`. The hover opens after the editor's hover delay and can be dismissed by a re-render (a decoration
 * update moves the text), so the mouse moves away and back until it shows or the time is up.
 */
export async function hoverInline(page: Page, want: RegExp, until: RegExp, timeout: number): Promise<string> {
  const deadline = Date.now() + timeout;
  const hover = page.locator('.monaco-hover').filter({ hasText: until }).first();
  for (;;) {
    const box = await page.evaluate(
      ({ source, flags }) => {
        const re = new RegExp(source, flags);
        for (const el of Array.from(document.querySelectorAll('.monaco-editor .view-lines span'))) {
          const c = getComputedStyle(el, '::after').content;
          if (!c || c === 'none' || c === 'normal') continue;
          let text = '';
          try {
            text = JSON.parse(c.replace(/\\([0-9a-f]{1,6}) ?/gi, (_m, h: string) => String.fromCodePoint(parseInt(h, 16)))) as string;
          } catch {
            continue;
          }
          if (!re.test(text)) continue;
          const r = el.getBoundingClientRect();
          if (r.width > 0) return { x: r.left, y: r.top, w: r.width, h: r.height };
        }
        return null;
      },
      { source: want.source, flags: want.flags },
    );
    if (box) {
      await page.mouse.move(box.x + Math.min(box.w / 2, 40), box.y + box.h / 2, { steps: 4 });
      if (
        await hover.waitFor({ state: 'visible', timeout: 3_000 }).then(
          () => true,
          () => false,
        )
      )
        return hover.innerText();
      await page.mouse.move(box.x, box.y + box.h * 4);
    }
    if (Date.now() >= deadline) throw new Error(`no hover matching ${until} over the inline result ${want} within ${timeout} ms`);
    await page.waitForTimeout(300);
  }
}

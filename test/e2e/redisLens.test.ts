// redis's own source tree, built -O2 -g by its own Makefile, as the workspace: the "Trace" lens above
// mixStringObjectDigest, a function GCC split (a `.cold` block) and inlined into xorObjectDigest, counts exactly
// the calls a known workload makes. DEBUG DIGEST-VALUE on a list of N elements and a string calls it once per
// element (the copy inlined into xorObjectDigest's list loop) and once for the string (a call of the out-of-line
// function), and nothing else in redis calls it: N + 1 calls, N at the inlined copy and 1 at the entry. The lens
// shows the sum; the hover and the live panel show the same calls per site.
import assert from 'node:assert/strict';
import { execFileSync, spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test, type TestContext } from 'node:test';
import { corpusProjectOrSkip } from '../helpers/corpus';
import { missing } from '../helpers/require';
import { requireTracefs } from '../helpers/tracefs';
import { e2ePrerequisites, withCodeServer } from './harness/session';
import { clickCodeLens, codeLens, goToLine, openFile, runCommand, statusBarItem, webviewFrame } from './harness/workbench';
import { hoverInline, waitForInline } from './inlineResults';

const FUNC = 'mixStringObjectDigest';
const LIST = ['a', 'b', 'c', 'd', 'e', 'f', 'g'];

/** A redis-server of the tree on a private unix socket (no port to collide on), stopped after the test. */
async function startRedis(t: TestContext, server: string, cli: string): Promise<(...args: string[]) => string> {
  const dir = mkdtempSync(join(tmpdir(), 'probelens-e2e-redis-'));
  const sock = join(dir, 'redis.sock');
  const child = spawn(
    server,
    ['--port', '0', '--unixsocket', sock, '--save', '', '--appendonly', 'no', '--enable-debug-command', 'yes', '--dir', dir],
    { stdio: ['ignore', 'ignore', 'inherit'] },
  );
  t.after(() => {
    child.kill('SIGKILL');
    rmSync(dir, { recursive: true, force: true });
  });
  const exited = new Promise<never>((_, reject) => child.once('exit', (code) => reject(new Error(`redis-server exited (${code})`))));
  exited.catch(() => undefined);
  const cmd = (...args: string[]): string => execFileSync(cli, ['-s', sock, ...args], { encoding: 'utf8' }).trim();
  // Ready once it answers on its socket.
  for (const deadline = Date.now() + 60_000; ;) {
    if (child.exitCode !== null) await exited;
    try {
      if (existsSync(sock) && cmd('PING') === 'PONG') return cmd;
    } catch {
      // not listening yet
    }
    if (Date.now() >= deadline) throw new Error('redis-server did not answer PING within 60 s');
    await new Promise((r) => setTimeout(r, 200));
  }
}

/** "entry 0x… : 1 hit" lines of the hover's per-site breakdown, as [kind, caller, hits]. */
function hoverSites(text: string): Array<[string, string, number]> {
  return [...text.matchAll(/^\s*(entry|clone|part|inlined)(?: (?:into|of) (\S+))?.*? \((0x[0-9a-f]+)\): ([\d,]+) hits?\s*$/gm)].map((m) => [
    m[1],
    m[2] ?? '',
    Number(m[4].replace(/,/g, '')),
  ]);
}

test(
  "redis tree: the Trace lens above a function with a .cold part and an inlined copy counts exactly the workload's calls, per site in the hover and the panel",
  { timeout: 3_600_000 },
  async (t) => {
    if (!e2ePrerequisites(t)) return;
    if (!requireTracefs(t)) return;
    if (process.getuid?.() !== 0) {
      missing(t, 'tracing on the local target needs root (or probelens.local.sudo with passwordless sudo)');
      return;
    }
    const redis = await corpusProjectOrSkip(t, 'redis');
    if (!redis) return;
    const server = redis.binaries['redis-server'];
    // The premise, from the symbol table: GCC split off a cold block of the function.
    const nm = execFileSync('nm', [server], { encoding: 'utf8', maxBuffer: 64 << 20 });
    assert.match(nm, new RegExp(`\\s${FUNC}\\.cold\\n`), `${FUNC} has a .cold part in this build`);
    const source = join(redis.srcDir, 'src', 'debug.c');
    const line =
      readFileSync(source, 'utf8')
        .split('\n')
        .findIndex((l) => l.startsWith(`void ${FUNC}(`)) + 1;
    assert.ok(line > 0, `${FUNC} is defined in src/debug.c`);
    // The session's probe set is saved in the workspace: leave the cached tree as it was.
    const vscodeDir = join(redis.srcDir, '.vscode');
    if (!existsSync(vscodeDir)) t.after(() => rmSync(vscodeDir, { recursive: true, force: true }));
    const redisCli = await startRedis(t, server, redis.binaries['redis-cli']);

    await withCodeServer(t, { workspace: redis.srcDir }, async ({ page }) => {
      await openFile(page, 'src/debug.c');
      await goToLine(page, line);
      await statusBarItem(page, /redis-server/).waitFor({ state: 'visible', timeout: 120_000 });
      await codeLens(page, /^Trace$/)
        .filter({ visible: true })
        .first()
        .waitFor({ state: 'visible', timeout: 180_000 });
      await clickCodeLens(page, /^Trace$/, { line, timeout: 60_000 });
      // xorObjectDigest, which holds the inlined copy, also has a computed jump whose targets are not decoded, so
      // ProbeLens cannot prove the copy's entries and says its count is a lower bound (≥); it is exact all the same.
      await codeLens(page, /Trace: ≥ 0 hits · armed/)
        .first()
        .waitFor({ state: 'visible', timeout: 120_000 });
      await waitForInline(page, /^● ≥ 0 hits/, 30_000);

      assert.equal(redisCli('RPUSH', 'probelens:list', ...LIST), String(LIST.length));
      assert.equal(redisCli('SET', 'probelens:string', 'octi fest'), 'OK');
      const digests = redisCli('DEBUG', 'DIGEST-VALUE', 'probelens:list', 'probelens:string').split('\n');
      assert.equal(digests.length, 2, 'one digest per key');
      const calls = LIST.length + 1;

      await codeLens(page, new RegExp(`Trace: ≥ ${calls} hits · armed`))
        .first()
        .waitFor({ state: 'visible', timeout: 60_000 });
      const inline = await waitForInline(page, new RegExp(`^● ≥ ${calls} hits`), 30_000);
      t.diagnostic(`inline result: ${inline}`);

      const hover = await hoverInline(page, /^● /, /By site/, 60_000);
      const sites = hoverSites(hover);
      assert.deepEqual(
        sites.map(([kind, caller, n]) => `${kind}${caller ? ` in ${caller}` : ''}: ${n}`).sort(),
        ['entry: 1', `inlined in xorObjectDigest: ${LIST.length}`],
        `the hover's sites (${hover})`,
      );
      assert.equal(
        sites.reduce((s, [, , n]) => s + n, 0),
        calls,
        'the sites add up to the lens',
      );
      await page.mouse.move(5, 5);
      await page.keyboard.press('Escape');

      await runCommand(page, 'ProbeLens: Open Live Panel');
      const frame = await webviewFrame(page, `.pl-counts li[data-probe^="${FUNC}"]`, { timeout: 60_000 });
      await frame.locator(`.pl-counts li[data-probe^="${FUNC}"]`).first().click();
      const siteRows = frame.locator('.pl-sites li');
      await siteRows.nth(1).waitFor({ state: 'visible', timeout: 30_000 });
      const panelSites = await frame.evaluate(() =>
        [...document.querySelectorAll<HTMLElement>('.pl-sites li')].map((li) => ({
          address: li.dataset.site ?? '',
          name: li.querySelector('.pl-site-name')?.textContent ?? '',
          count: Number((li.querySelector('.pl-badge')?.textContent ?? '').replace(/,/g, '')),
          where: li.querySelector('.pl-site-where')?.textContent ?? '',
        })),
      );
      assert.equal(panelSites.length, 2, JSON.stringify(panelSites));
      const inlined = panelSites.find((s) => s.name.startsWith('inlined '));
      const entry = panelSites.find((s) => s.name.startsWith('entry '));
      assert.ok(inlined && entry, JSON.stringify(panelSites));
      assert.equal(entry.count, 1);
      assert.equal(inlined.count, LIST.length);
      assert.match(inlined.where, /^into xorObjectDigest at debug\.c:\d+$/);
      // Clicking the inlined copy narrows the table to its calls.
      await frame.locator(`.pl-sites li[data-site="${inlined.address}"]`).click();
      await frame.waitForFunction(
        (n) => [...document.querySelectorAll<HTMLElement>('.pl-spacer > .pl-row')].filter((r) => r.style.display !== 'none').length === n,
        LIST.length,
        { timeout: 30_000 },
      );
      assert.equal(await frame.locator('#pl-filter input').inputValue(), `site:${inlined.address}`);
    });
  },
);

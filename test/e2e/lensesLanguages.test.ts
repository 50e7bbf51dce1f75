// Lenses in the C++, Rust and Go fixture workspaces: each program is built inside its workspace copy (so the
// DWARF names the files the editor opens) and the lenses appear above one of its functions. Go's lens sits on
// the `func` line, not on the body's first statement its DWARF names. "Trace" there, then the program run:
// the lens and the inline result count exactly the calls the program says it made, with the values it printed.
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { homedir, tmpdir } from 'node:os';
import { join } from 'node:path';
import { test, type TestContext } from 'node:test';
import { parseFixtureOutput } from '../fixtures/output';
import { missing } from '../helpers/require';
import { requireTracefs } from '../helpers/tracefs';
import { e2ePrerequisites, withCodeServer } from './harness/session';
import { prepareWorkspace } from './harness/workspaces';
import { clickCodeLens, codeLens, openFile } from './harness/workbench';
import { waitForInline } from './inlineResults';

interface Lang {
  name: 'cpp' | 'rust' | 'go';
  file: string;
  /** a line that declares a probe-able function */
  definition: RegExp;
  /** that function as the program prints its calls, and its arguments the lens's `$params` show */
  func: string;
  args: string[];
  /** the built program, relative to the workspace */
  binary: string;
  build(dir: string): void;
}

const env = { ...process.env, PATH: `${process.env.PATH}:${join(homedir(), '.cargo', 'bin')}` };

const LANGS: Lang[] = [
  {
    name: 'cpp',
    file: 'cpp.cpp',
    definition: /^FX_PROBE int shout\(/,
    func: 'probelens::text::shout',
    args: ['times'],
    binary: 'build/cpp',
    build: (d) => execFileSync('g++', ['-g', '-O0', '-o', 'build/cpp', 'cpp.cpp'], { cwd: d, env }),
  },
  {
    name: 'rust',
    file: 'main.rs',
    definition: /^pub fn add_ints\(/,
    func: 'main::add_ints',
    args: ['a', 'b'],
    binary: 'build/main',
    build: (d) => execFileSync('rustc', ['-g', '-C', 'opt-level=0', '-o', 'build/main', 'main.rs'], { cwd: d, env }),
  },
  {
    name: 'go',
    file: 'main.go',
    definition: /^func addInts\(/,
    func: 'main.addInts',
    args: ['a', 'b'],
    binary: 'build/app',
    build: (d) =>
      execFileSync('go', ['build', '-buildvcs=false', '-o', 'build/app', '.'], {
        cwd: d,
        env: { ...env, GOFLAGS: '', GOPROXY: 'off', GO111MODULE: 'on', GOTOOLCHAIN: 'local', GOWORK: 'off' },
      }),
  },
];

function buildOrSkip(t: TestContext, lang: Lang, parent: string): string | undefined {
  const dir = prepareWorkspace(lang.name, parent);
  mkdirSync(join(dir, 'build'));
  try {
    lang.build(dir);
  } catch (e) {
    const err = e as NodeJS.ErrnoException;
    if (err.code === 'ENOENT') {
      missing(t, `the ${lang.name} toolchain is not installed (${err.message})`);
      return undefined;
    }
    throw e;
  }
  return dir;
}

for (const lang of LANGS) {
  test(
    `${lang.name} workspace: lenses above its functions; "Trace" counts the run's calls with their values`,
    { timeout: 900_000 },
    async (t) => {
      if (!e2ePrerequisites(t)) return;
      if (!requireTracefs(t)) return;
      if (process.getuid?.() !== 0) {
        missing(t, 'tracing on the local target needs root (or probelens.local.sudo with passwordless sudo)');
        return;
      }
      const scratch = mkdtempSync(join(tmpdir(), `probelens-e2e-${lang.name}-`));
      t.after(() => rmSync(scratch, { recursive: true, force: true }));
      const dir = buildOrSkip(t, lang, scratch);
      if (!dir) return;
      const lines = readFileSync(join(dir, lang.file), 'utf8').split('\n');
      const line = lines.findIndex((l) => lang.definition.test(l)) + 1;
      assert.ok(line > 0, `no line matching ${lang.definition} in ${lang.file}`);

      await withCodeServer(t, { workspace: dir }, async ({ page }) => {
        await openFile(page, lang.file);
        // Indexing a Rust or Go binary (its runtime and std included) takes a while on a loaded machine.
        await codeLens(page, /^Trace returns$/)
          .first()
          .waitFor({ state: 'visible', timeout: 240_000 });
        // The lens drawn right above the definition line is ProbeLens's, clickable, and arms without error.
        await clickCodeLens(page, /^Trace$/, { line, timeout: 60_000 });
        await codeLens(page, /Trace: 0 hits · armed/)
          .first()
          .waitFor({ state: 'visible', timeout: 120_000 });
        await waitForInline(page, /^● 0 hits/, 30_000);

        const out = parseFixtureOutput(execFileSync(join(dir, lang.binary), ['3'], { encoding: 'utf8', env }));
        const calls = out.calls.filter((c) => c.func === lang.func);
        assert.equal(calls.length, 3, `the program calls ${lang.func} once per iteration`);
        const text = await waitForInline(page, /^● 3 hits/, 60_000);
        const last = calls[calls.length - 1].args;
        for (const a of lang.args) {
          assert.ok(last[a] !== undefined, `the program printed ${a}`);
          assert.match(text, new RegExp(`[\\s·]${a}=${last[a]}(\\s|$)`), `${a} as the program printed it (${text})`);
        }
        await codeLens(page, /Trace: 3 hits · armed/)
          .first()
          .waitFor({ state: 'visible', timeout: 30_000 });
      });
    },
  );
}

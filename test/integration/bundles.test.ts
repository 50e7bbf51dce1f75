// The bundles as a user runs them, built here by esbuild.mjs into a directory of their own: the CLI, ssh2's and
// iced-x86's own bundles and the two WebAssembly files beside them. A start that needs none of those reads none of
// them (each used to be inside every bundle, read and compiled at every start); each is read from beside the bundle
// when it is needed — a Rust binary's symbols demangled, a Go function's returns decoded, a trace over SSH — and the
// answer equals the CLI's from source. A preload (`node --require`) records, per thread, the modules loaded and the
// WebAssembly files read.
import { test, before, type TestContext } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { basename, join } from 'node:path';
import { promisify } from 'node:util';
import { fixtureOrSkip } from '../helpers/fixtures';
import { requireSshd } from '../helpers/sshd';
import { requireTracefs } from '../helpers/tracefs';
import { isolatedEnv, parseJsonOutput, privateCopy, REPO, runCli, sshFlags, traceOneHit } from './engine-harness';

const TIMEOUT = { timeout: 300_000 };
const OUT = mkdtempSync(join(tmpdir(), 'pl-bundles-'));
const PRELOAD = join(OUT, 'preload.cjs');
process.on('exit', () => rmSync(OUT, { recursive: true, force: true }));

// Every thread (the CLI's and its index workers') appends one line at its exit: require.cache's files and the
// .wasm files read.
const PRELOAD_SOURCE = `
const fs = require('node:fs');
const read = fs.readFileSync;
const wasm = [];
fs.readFileSync = function (p, ...rest) {
  if (typeof p === 'string' && p.endsWith('.wasm')) wasm.push(p);
  return read.call(this, p, ...rest);
};
process.on('exit', () => {
  const file = process.env.PL_LOADED_LOG;
  if (file) fs.appendFileSync(file, JSON.stringify({ modules: Object.keys(require.cache), wasm }) + '\\n');
});
`;

before(async () => {
  writeFileSync(PRELOAD, PRELOAD_SOURCE);
  await promisify(execFile)(process.execPath, ['esbuild.mjs', '--outdir', OUT], { cwd: REPO, timeout: 240_000 });
});

interface Loaded {
  /** Files of OUT loaded as modules, by any thread (basenames). */
  modules: Set<string>;
  /** .wasm files read, by any thread (basenames). */
  wasm: Set<string>;
}

function bundled(t: TestContext) {
  const log = join(mkdtempSync(join(tmpdir(), 'pl-bundles-log-')), 'loaded.jsonl');
  t.after(() => rmSync(join(log, '..'), { recursive: true, force: true }));
  const env = { ...isolatedEnv(t), PL_LOADED_LOG: log };
  const node = ['--require', PRELOAD, join(OUT, 'cli.js')];
  const loaded = (): Loaded => {
    const out: Loaded = { modules: new Set(), wasm: new Set() };
    for (const line of existsSync(log) ? readFileSync(log, 'utf8').split('\n') : []) {
      if (!line) continue;
      const v = JSON.parse(line) as { modules: string[]; wasm: string[] };
      for (const m of v.modules) if (m.startsWith(OUT + '/')) out.modules.add(basename(m));
      for (const w of v.wasm) out.wasm.add(basename(w));
    }
    return out;
  };
  return { env, node, loaded };
}

/** A definition's text without its group's process id, so two runs compare. */
const sameGroup = (s: string) => s.replace(/probelens_\d+_/g, 'probelens_N_');

test('the bundles: the CLI is small, and ssh2, iced-x86 and the WebAssembly are files beside it', () => {
  for (const f of ['cli.js', 'extension.js', 'worker.js', 'ssh2.js', 'iced-x86.js', 'demangle.wasm', 'iced_x86_bg.wasm'])
    assert.ok(existsSync(join(OUT, f)), `${f} is in the output`);
  for (const f of ['cli.js', 'extension.js', 'worker.js']) {
    const text = readFileSync(join(OUT, f), 'utf8');
    // "AGFzbQ" is the base64 of a WebAssembly module's magic number.
    assert.ok(!text.includes('AGFzbQ'), `${f} embeds no WebAssembly`);
    assert.ok(!/node_modules\/(ssh2|iced-x86)\//.test(text), `${f} holds neither ssh2 nor iced-x86`);
    assert.ok(statSync(join(OUT, f)).size < 1.5e6, `${f} is ${statSync(join(OUT, f)).size} bytes`);
  }
  const vscodeignore = readFileSync(join(REPO, '.vscodeignore'), 'utf8');
  for (const f of ['ssh2.js', 'iced-x86.js']) assert.ok(vscodeignore.includes(`!dist/${f}`), `the .vsix ships dist/${f}`);
  assert.ok(vscodeignore.includes('!dist/*.wasm'), 'the .vsix ships the WebAssembly files');
});

/** `functions FIX --no-cache` by the bundle and from source: the bundle's output (equal to the source's) and what it loaded. */
async function functionsBothWays(t: TestContext, name: 'calls-O2' | 'rust-O2') {
  const f = await fixtureOrSkip(t, name);
  if (!f) return undefined;
  const b = bundled(t);
  const r = await runCli(t, ['functions', f.path, '--no-cache'], b.env, 120_000, { node: b.node });
  assert.equal(r.code, 0, r.stderr);
  const src = await runCli(t, ['functions', f.path, '--no-cache'], b.env);
  assert.equal(r.stdout, src.stdout, 'the bundle lists what the source lists');
  const l = b.loaded();
  assert.ok(l.modules.has('cli.js'), [...l.modules].join(' '));
  assert.ok(!l.modules.has('ssh2.js') && !l.modules.has('iced-x86.js'), [...l.modules].join(' '));
  return { stdout: r.stdout, wasm: [...l.wasm] };
}

test('the bundled CLI: an index of a C binary loads neither ssh2 nor iced-x86 nor any WebAssembly', TIMEOUT, async (t) => {
  const r = await functionsBothWays(t, 'calls-O2');
  if (!r) return;
  assert.match(r.stdout, /\badd_ints\(/);
  assert.deepEqual(r.wasm, []);
});

test('the bundled CLI: a Rust binary names its symbol-only functions demangled, by the WebAssembly beside it', TIMEOUT, async (t) => {
  const r = await functionsBothWays(t, 'rust-O2');
  if (!r) return;
  // __rust_alloc's symbol is v0-mangled (_RNv…) and has no DWARF: only the demangler names it so.
  assert.match(r.stdout, /__rustc::__rust_alloc\(\)\s+\(no source\)/);
  assert.deepEqual(r.wasm, ['demangle.wasm']);
});

test("the bundled CLI: a Go function's return sites are decoded by iced-x86's own bundle", TIMEOUT, async (t) => {
  const f = await fixtureOrSkip(t, 'go');
  if (!f) return;
  const b = bundled(t);
  const args = ['define', f.path, 'main.classify%return'];
  const r = await runCli(t, args, b.env, 120_000, { node: b.node });
  assert.equal(r.code, 0, r.stderr);
  // A HOME of its own: the source indexes the binary too, rather than loading what the bundle stored.
  const src = await runCli(t, args, isolatedEnv(t));
  assert.equal(sameGroup(r.stdout), sameGroup(src.stdout), 'the bundle defines what the source defines');
  // Go returns are found by decoding the function's code: one probe per RET.
  assert.ok(r.stdout.trim().split('\n').length >= 2, r.stdout);
  const l = b.loaded();
  assert.ok(l.modules.has('iced-x86.js') && l.wasm.has('iced_x86_bg.wasm'), `${[...l.modules].join(' ')} / ${[...l.wasm].join(' ')}`);
  assert.ok(!l.modules.has('ssh2.js'), [...l.modules].join(' '));
});

test('the bundled CLI: a trace over SSH loads ssh2 from its own bundle and gets its hit', TIMEOUT, async (t) => {
  if (!requireTracefs(t)) return;
  const sshd = await requireSshd(t);
  if (!sshd) return;
  const f = await fixtureOrSkip(t, 'calls-O2');
  if (!f) return;
  const bin = privateCopy(t, f.path);
  const b = bundled(t);
  const r = await traceOneHit(t, bin, sshFlags(sshd), b.env, { node: b.node });
  assert.equal(r.code, 0, r.stderr);
  const { hits, summary } = parseJsonOutput(r.stdout);
  assert.ok(hits.length >= 1 && hits[0].probe === 'add_ints', r.stdout);
  assert.equal(summary?.hosts[`root@${sshd.host}:${sshd.port}`]?.ok, true, r.stdout);
  assert.ok(b.loaded().modules.has('ssh2.js'), [...b.loaded().modules].join(' '));
});

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir, totalmem } from 'node:os';
import { join } from 'node:path';
import { buildIndex } from '../../../../../src/core/index/build';
import { runWorkerJob } from '../../../../../src/core/index/worker/client';
import { loadIndex, indexLimitsFor } from '../../../../../src/core/index/load';
import { CLI_LIMIT_NAMES, dwarfSizeOf, IndexLimitError, scaledLimits } from '../../../../../src/core/index/worker/limits';
import { fixtureOrSkip } from '../../../../helpers/fixtures';
import { sectionsOf } from '../../dwarf/objcopySections';

test('jobs run in a worker thread and answer', async () => {
  assert.equal(await runWorkerJob({ kind: 'ping', text: 'hi' }), 'pong hi');
});

test('the memory limit is applied to the worker: its V8 heap limit is what was asked, not the default', async (t) => {
  const unlimited = await runWorkerJob({ kind: 'heapLimit' });
  const limited = await runWorkerJob({ kind: 'heapLimit' }, undefined, { memoryLimitMb: 300 });
  t.diagnostic(`heap limit: ${limited.toFixed(0)} MiB with memoryLimitMb 300, ${unlimited.toFixed(0)} MiB without`);
  // V8 adds the young generation's semi-spaces to the old generation's limit.
  assert.ok(limited >= 300 && limited < 400, `${limited}`);
  assert.ok(unlimited > 400, `${unlimited}`);
});

test('a worker that exceeds its memory limit ends with a typed error naming the setting to raise', async (t) => {
  const f = await fixtureOrSkip(t, 'calls-O0');
  if (!f) return;
  await assert.rejects(
    loadIndex(f.path, { inWorker: true, noCache: true, limits: { memoryLimitMb: 2 } }),
    (e: unknown) =>
      e instanceof IndexLimitError &&
      e.kind === 'memory' &&
      e.message.startsWith(`indexing ${f.path} needed more than its 2 MiB memory limit`) &&
      e.message.endsWith('raise probelens.index.memoryLimitMb'),
  );
});

test('a job past its time limit is terminated and rejects with a typed error naming the setting (or the CLI variable)', async (t) => {
  const f = await fixtureOrSkip(t, 'calls-O0');
  if (!f) return;
  // 1 ms: the worker cannot even start in that time, so the limit, not the job, decides the outcome.
  await assert.rejects(
    loadIndex(f.path, { inWorker: true, noCache: true, limits: { timeLimitSeconds: 0.001 } }),
    (e: unknown) =>
      e instanceof IndexLimitError &&
      e.kind === 'time' &&
      /^indexing \S+ took longer than its 0.001 s time limit \(for \d+ KiB of DWARF\): .* raise probelens\.index\.timeLimitSeconds$/.test(
        e.message,
      ),
  );
  await assert.rejects(
    loadIndex(f.path, { inWorker: true, noCache: true, limits: { timeLimitSeconds: 0.001 }, limitNames: CLI_LIMIT_NAMES }),
    /raise PROBELENS_INDEX_TIME_LIMIT$/,
  );
  // With the scaled limits the same build succeeds.
  const { index } = await loadIndex(f.path, { inWorker: true, noCache: true });
  assert.ok(index.function('add_ints').length > 0);
});

/** An index's functions as plain JSON (bigints tagged), so a lazily decoded index and a built one compare. */
const plainFunctions = (fns: readonly unknown[]) =>
  JSON.parse(JSON.stringify(fns, (_k, x: unknown) => (typeof x === 'bigint' ? `${x}n` : x)));

test('a whole index built in a worker is stored there and opened from the cache, never copied back to the caller', async (t) => {
  const f = await fixtureOrSkip(t, 'calls-O2');
  if (!f) return;
  const cacheDir = mkdtempSync(join(tmpdir(), 'plindex-store-'));
  t.after(() => rmSync(cacheDir, { recursive: true, force: true }));
  const expected = plainFunctions((await buildIndex(f.path)).functions);
  // The worker's answer to a request with a cache key is a receipt, not the index.
  const receipt = await runWorkerJob({ kind: 'index', path: f.path, cacheKey: 'k0', cacheDir });
  assert.deepEqual(receipt, { stored: true });
  assert.ok(existsSync(join(cacheDir, readdirSync(cacheDir).find((n) => n.startsWith('k0')) ?? 'none')), 'the entry is written');
  // loadIndex asks for that: the index it returns is the built one (read from the entry), not marked as a cache hit.
  const { index, fromCache } = await loadIndex(f.path, { inWorker: true, cacheDir });
  assert.equal(fromCache, false);
  assert.deepEqual(plainFunctions(index.functions()), expected);
  assert.ok(index.function('add_ints').length > 0);
  const again = await loadIndex(f.path, { inWorker: true, cacheDir });
  assert.equal(again.fromCache, true, 'the next load is a cache hit');
  assert.deepEqual(plainFunctions(again.index.functions()), expected);
});

test('an index the worker cannot store (one source file only) comes back by copy', async (t) => {
  const f = await fixtureOrSkip(t, 'calls-O2');
  if (!f) return;
  const cacheDir = mkdtempSync(join(tmpdir(), 'plindex-store-'));
  t.after(() => rmSync(cacheDir, { recursive: true, force: true }));
  const part = await runWorkerJob({ kind: 'index', path: f.path, onlyFile: 'calls.c', cacheKey: 'k1', cacheDir });
  assert.ok(!('stored' in part) && part.onlyFile === 'calls.c' && part.functions.length > 0);
  assert.deepEqual(
    readdirSync(cacheDir).filter((n) => n.startsWith('k1')),
    [],
    'nothing stored for one file',
  );
});

test('limits scale with the DWARF size from a floor, and never past most of the machine', () => {
  assert.deepEqual(scaledLimits(0), { timeLimitSeconds: 120, memoryLimitMb: 1024 });
  assert.deepEqual(scaledLimits(20 * 1024 * 1024), { timeLimitSeconds: 120, memoryLimitMb: 1280 });
  assert.equal(scaledLimits(100 * 1024 * 1024).timeLimitSeconds, 300);
  const huge = scaledLimits(1024 ** 4);
  assert.ok(huge.memoryLimitMb <= Math.max(1024, (totalmem() / 1024 ** 2) * 0.75));
});

test('the DWARF size is read from section headers: own sections (also compressed ones), else the separate debug file', async (t) => {
  for (const name of ['calls-O2', 'calls-O2-zstd', 'calls-O2-stripped-buildid', 'calls-O2-stripped-debuglink'] as const) {
    const f = await fixtureOrSkip(t, name);
    if (!f) return;
    // The independent answer: objcopy's decompressed sections of the file that holds the DWARF.
    const s = sectionsOf(f.debugFile ?? f.path);
    const expected = (s.section('.debug_info')?.length ?? 0) + (s.section('.debug_line')?.length ?? 0);
    assert.ok(expected > 0);
    assert.equal(await dwarfSizeOf(f.path, f.debugDirs), expected, name);
    assert.equal((await indexLimitsFor(f.path, { debugDirs: f.debugDirs })).dwarfBytes, expected);
  }
});

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { openBinary } from '../../../../../src/core/binary/binaryImage';
import { buildIndex } from '../../../../../src/core/index/build';
import { dwarfSlice, mergeDwarfSlices, shareOf } from '../../../../../src/core/index/fromDwarf';
import { loadIndex } from '../../../../../src/core/index/load';
import { runWorkerJob } from '../../../../../src/core/index/worker/client';
import {
  dwarfSlices,
  IndexHelperMemoryError,
  indexWorkerCount,
  MAX_INDEX_WORKERS,
  PARALLEL_MIN_DEBUG_INFO_BYTES,
} from '../../../../../src/core/index/worker/pool';
import { fixtureOrSkip, type FixtureName } from '../../../../helpers/fixtures';
import { indexDump, partDump } from '../../../../helpers/indexDump';

// Several units (many-*), C++ and Rust (cross-unit origins, namespaces), Go (lines from the line table), a
// separate debug file found by build-id (the helpers must open the same one), and AArch64.
const NAMES: FixtureName[] = ['many-O2', 'cpp-O2', 'rust-O2', 'go', 'lines', 'calls-O2-stripped-buildid', 'calls-aarch64-O2'];

test('the index is the same, dump for dump, whether 1, 2 or 4 threads build it', async (t) => {
  for (const name of NAMES) {
    const f = await fixtureOrSkip(t, name);
    if (!f) return;
    const opts = { debugDirs: f.debugDirs, debugFile: f.debugFile };
    const one = indexDump(await buildIndex(f.path, { ...opts, workers: 1 }));
    assert.ok(one.split('\n').length > 5, `${name}: an index with functions`);
    for (const workers of [2, 4])
      assert.equal(indexDump(await buildIndex(f.path, { ...opts, workers })), one, `${name}: ${workers} threads`);
  }
});

test('the shares split the functions and the line tables between the threads: none is left out or done twice', async (t) => {
  // Go's runtime and standard library packages are units of their own: many line tables.
  const f = await fixtureOrSkip(t, 'go');
  if (!f) return;
  const image = await openBinary(f.path);
  const whole = dwarfSlice(image, 0, 1);
  const shares = [0, 1, 2, 3].map((p) => dwarfSlice(image, p, 4));
  assert.ok(whole.tables.length >= 4, `go has ${whole.tables.length} line tables`);
  // Every share gets work: the equality above is not one thread doing everything.
  for (const s of shares) assert.ok(s.functions.length > 0 && s.tables.length > 0, 'each share indexes something');
  assert.deepEqual(
    shares.flatMap((s) => s.functions.map((fn) => fn.dieOffset)),
    whole.functions.map((fn) => fn.dieOffset),
  );
  assert.deepEqual(
    shares.flatMap((s) => s.tables.map((x) => x.files.join('\0'))),
    whole.tables.map((x) => x.files.join('\0')),
  );
  assert.deepEqual(shareOf(10, 0, 4), [0, 2]);
  assert.deepEqual(shareOf(10, 3, 4), [7, 10]);
  assert.deepEqual(shareOf(3, 3, 4), [2, 3]);
});

test('where references stay in their units (C without LTO) each share walks only its own units: the function pass is split too', async (t) => {
  const f = await fixtureOrSkip(t, 'sites');
  if (!f) return;
  const image = await openBinary(f.path);
  const whole = dwarfSlice(image, 0, 1);
  const shares = [0, 1].map((p) => dwarfSlice(image, p, 2));
  assert.ok(
    shares.every((s) => s.byUnits),
    'the two-unit C fixture is split by units',
  );
  // Each share indexed only its unit's functions, none of the other's.
  const units = shares.map((s) => new Set(s.functions.map((fn) => fn.unitOffset)));
  assert.ok(units[0].size === 1 && units[1].size === 1 && [...units[0]][0] !== [...units[1]][0], 'one unit each');
  assert.equal(partDump(mergeDwarfSlices(shares)), partDump(mergeDwarfSlices([whole])));
  // Go refers across units (DW_FORM_ref_addr): every share runs the whole pass and takes a range of it.
  const go = await fixtureOrSkip(t, 'go');
  if (!go) return;
  assert.equal(dwarfSlice(await openBinary(go.path), 0, 2).byUnits, false);
});

test('a pool under the index worker (helpers started by a worker) gives the same index as one thread in process', async (t) => {
  const f = await fixtureOrSkip(t, 'cpp-O2');
  if (!f) return;
  const progress: string[] = [];
  const { index } = await loadIndex(f.path, { inWorker: true, noCache: true, workers: 4, onProgress: (m) => progress.push(m) });
  assert.ok(
    progress.some((m) => m.endsWith('on 4 threads')),
    progress.join('\n'),
  );
  assert.equal(indexDump(index.data), indexDump(await buildIndex(f.path, { workers: 1 })));
});

test('the pool is sized to the machine for a large binary, one thread for a small one, the asked size when given', () => {
  assert.equal(indexWorkerCount(PARALLEL_MIN_DEBUG_INFO_BYTES - 1), 1);
  assert.equal(indexWorkerCount(100, 4), 4);
  const big = indexWorkerCount(1 << 30);
  assert.ok(big >= 1 && big <= MAX_INDEX_WORKERS, `${big}`);
  assert.equal(indexWorkerCount(2 * PARALLEL_MIN_DEBUG_INFO_BYTES, 0) <= 2, true);
});

test('a helper past its heap limit fails the build with a typed error', async (t) => {
  const f = await fixtureOrSkip(t, 'cpp-O2');
  if (!f) return;
  const image = await openBinary(f.path);
  // 2 MiB: a helper cannot even load its code; the coordinator here has no limit and finishes its share.
  await assert.rejects(dwarfSlices(image, 2, { memoryLimitMb: 2 }), (e: unknown) => e instanceof IndexHelperMemoryError);
});

test('an aborted job ends its worker and rejects with the reason', async () => {
  const abort = new AbortController();
  abort.abort(new Error('stop'));
  await assert.rejects(runWorkerJob({ kind: 'ping', text: 'x' }, undefined, { signal: abort.signal }), /^Error: stop$/);
  const late = new AbortController();
  const job = runWorkerJob({ kind: 'ping', text: 'x' }, undefined, { signal: late.signal });
  late.abort(new Error('later'));
  await assert.rejects(job, /^Error: later$/);
});

test('a share walked a batch of units at a time, each batch by a reader of its own, is what one walk of all its units gives', async (t) => {
  let batched = 0;
  for (const name of ['many-O2', 'sites', 'cpp-O2', 'lines', 'calls-O2-stripped-buildid', 'calls-aarch64-O2'] as FixtureName[]) {
    const f = await fixtureOrSkip(t, name);
    if (!f) return;
    // Read range by range, as a build reads it: each batch's reader has .debug_info in a buffer of its own.
    const image = await openBinary(f.path, { debugDirs: f.debugDirs, debugFile: f.debugFile, readOnDemand: true });
    try {
      const once = dwarfSlice(image, 0, 1, Infinity);
      // One unit per batch: every batch boundary there can be.
      const each = dwarfSlice(image, 0, 1, 1);
      assert.ok(each.byUnits, `${name}: references stay in units`);
      assert.ok(once.functions.length > 0, `${name}: functions`);
      assert.equal(partDump(mergeDwarfSlices([each])), partDump(mergeDwarfSlices([once])), name);
      for (const parts of [2, 3])
        assert.equal(
          partDump(mergeDwarfSlices([0, 1, 2].slice(0, parts).map((p) => dwarfSlice(image, p, parts, 1)))),
          partDump(mergeDwarfSlices([once])),
          `${name}: ${parts} shares of one-unit batches`,
        );
      if (new Set(once.functions.map((fn) => fn.unitOffset)).size > 1) batched++;
    } finally {
      image.close();
    }
  }
  // `sites` has two units (the corpus test compares batches of real programs' hundreds of units).
  assert.ok(batched >= 1, `${batched} fixtures had functions in more than one unit`);
});

// Child of bench/index.ts `--stall`: a cold index of BIN built in the index worker, as the editor and the CLI build
// it, while a 10 ms timer on the caller's thread records how long that thread was kept from running (the extension
// host's thread: every extension and the editor's lenses, hovers and decorations wait meanwhile). MODE `stored`:
// loadIndex as shipped (the worker stores the index, the caller opens the entry). MODE `copy`: the way before, the
// index copied back to the caller and then encoded and written to the cache there.
// Prints one JSON line: total ms, the stall at the end (from the last timer tick to the index in hand, the copy's
// encoding included), the longest stall before it.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { encodeIndex } from '../src/core/index/codec';
import { encodeContainer } from '../src/core/index/container';
import { BinaryIndex } from '../src/core/index/binaryIndex';
import { writeCacheEntry } from '../src/core/index/cache';
import { loadIndex } from '../src/core/index/load';
import { runWorkerJob } from '../src/core/index/worker/client';

async function main(): Promise<void> {
  const [bin, mode] = process.argv.slice(2);
  const cacheDir = mkdtempSync(join(tmpdir(), 'probelens-bench-stall-'));
  let last = performance.now();
  let longest = 0;
  const timer = setInterval(() => {
    const now = performance.now();
    longest = Math.max(longest, now - last - 10);
    last = now;
  }, 10);
  const t0 = performance.now();
  try {
    if (mode === 'stored') await loadIndex(bin, { inWorker: true, cacheDir });
    else {
      // What loadIndex did before: the same build (the unit cache filled alike), the index sent back, then encoded
      // and written here.
      const data = await runWorkerJob({ kind: 'index', path: bin, unitCacheDir: cacheDir });
      if ('stored' in data) throw new Error('asked for a copy, the worker stored it');
      const e = encodeIndex(data);
      if (e) writeCacheEntry('baseline', encodeContainer(e), cacheDir);
      new BinaryIndex(data);
    }
    const end = performance.now();
    clearInterval(timer);
    console.log(JSON.stringify({ totalMs: end - t0, finalStallMs: end - last, longestBeforeMs: Math.max(0, longest) }));
  } finally {
    rmSync(cacheDir, { recursive: true, force: true });
  }
}

void main();

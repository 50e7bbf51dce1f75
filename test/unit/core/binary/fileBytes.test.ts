// A file read range by range (FileBytes), and an ELF file opened that way (ElfFile.open, openBinary's
// readOnDemand): the same answers as the file read whole, from fewer bytes.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, truncateSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { bytesReadIn, FILE_CHUNK, FileBytes, joinReadMaps } from '../../../../src/core/binary/fileBytes';
import { ElfFile } from '../../../../src/core/binary/elfFile';
import { openBinary } from '../../../../src/core/binary/binaryImage';
import { ElfFormatError, NotElfError } from '../../../../src/core/binary/errors';
import { openDwarf } from '../../../../src/core/dwarf';
import { fixtureOrSkip } from '../../../helpers/fixtures';

const dir = mkdtempSync(join(tmpdir(), 'pl-filebytes-'));
test.after(() => rmSync(dir, { recursive: true, force: true }));

function patterned(name: string, size: number): { path: string; bytes: Buffer } {
  const bytes = Buffer.alloc(size);
  for (let i = 0; i < size; i++) bytes[i] = (i * 7 + (i >> 8)) & 0xff;
  const path = join(dir, name);
  writeFileSync(path, bytes);
  return { path, bytes };
}

test('FileBytes reads a range as whole chunks once, clips to the file, and joins runs of unread chunks in one read', () => {
  const { path, bytes } = patterned('a', 10 * FILE_CHUNK + 123);
  const f = FileBytes.open(path);
  try {
    assert.equal(f.size, bytes.length);
    assert.equal(f.bytesRead, 0, 'nothing is read at open');
    f.ensure(FILE_CHUNK + 10, 20);
    assert.equal(f.bytesRead, FILE_CHUNK);
    assert.deepEqual(f.data.subarray(FILE_CHUNK, 2 * FILE_CHUNK), bytes.subarray(FILE_CHUNK, 2 * FILE_CHUNK));
    assert.equal(f.data[0], 0, 'a chunk not asked for is not read');
    assert.ok(f.has(FILE_CHUNK, FILE_CHUNK) && !f.has(0, 1));
    f.ensure(FILE_CHUNK + 100, 200);
    assert.equal(f.reads, 1, 'a range already read is not read again');
    f.ensure(4 * FILE_CHUNK, 1);
    // Chunks 0, 2–3 and 5–10 are missing: three reads, the last clipped to the file's end.
    f.ensure(0, bytes.length + 1000);
    assert.equal(f.reads, 5);
    assert.equal(f.bytesRead, bytes.length);
    assert.deepEqual(f.data, bytes);
    f.ensure(bytes.length + 10, 10);
    f.ensure(-5, 3);
    assert.equal(f.reads, 5, 'ranges outside the file read nothing');
  } finally {
    f.close();
  }
});

test('a region of the file has a buffer of its own, read chunk by chunk; the read map has what any buffer was read', () => {
  const { path, bytes } = patterned('r', 8 * FILE_CHUNK + 50);
  const f = FileBytes.open(path);
  try {
    const at = 2 * FILE_CHUNK + 100;
    const r = f.region(at, 3 * FILE_CHUNK);
    assert.equal(r.data.length, 3 * FILE_CHUNK);
    r.ensure(10, 20);
    assert.deepEqual(r.data.subarray(0, FILE_CHUNK), bytes.subarray(at, at + FILE_CHUNK));
    assert.equal(r.data[FILE_CHUNK], 0, 'the next chunk is not read');
    assert.equal(f.data[at], 0, "the file's own buffer is left as it is");
    assert.equal(f.bytesRead, FILE_CHUNK);
    r.ensure(0, 10 * FILE_CHUNK);
    assert.deepEqual(r.data, bytes.subarray(at, at + 3 * FILE_CHUNK));
    assert.equal(f.region(8 * FILE_CHUNK, 10 * FILE_CHUNK).data.length, 50, 'clipped to the file');
    f.ensure(0, 1);
    const map = f.readMap();
    // Chunk 0 (the file's), chunks 2–5 (the region's: it starts inside chunk 2 and ends inside chunk 5).
    assert.deepEqual([...map.chunks], [1, 0, 1, 1, 1, 1, 0, 0, 0]);
    assert.equal(bytesReadIn(map, 0, bytes.length), 5 * FILE_CHUNK);
    assert.equal(bytesReadIn(map, FILE_CHUNK - 10, 20), 10);
    const other = { ...map, chunks: new Uint8Array(map.chunks.length).fill(0) };
    other.chunks[8] = 1;
    const [joined] = joinReadMaps([map, other]);
    assert.equal(bytesReadIn(joined, 0, bytes.length), 5 * FILE_CHUNK + 50);
    assert.equal(bytesReadIn(map, 0, bytes.length), 5 * FILE_CHUNK, 'joining copies');
  } finally {
    f.close();
  }
});

test('FileBytes refuses a file that shrank while it was read, and a range not read before it was closed', () => {
  const { path, bytes } = patterned('b', 4 * FILE_CHUNK);
  const f = FileBytes.open(path);
  f.ensure(0, 10);
  truncateSync(path, FILE_CHUNK + 10);
  assert.throws(
    () => f.ensure(3 * FILE_CHUNK, 10),
    (e) => e instanceof ElfFormatError && /changed while being read/.test(e.message),
  );
  f.close();
  assert.deepEqual(f.data.subarray(0, 10), bytes.subarray(0, 10), 'what was read stays readable');
  assert.throws(
    () => f.ensure(2 * FILE_CHUNK, 1),
    (e) => e instanceof ElfFormatError && /after the file was closed/.test(e.message),
  );
  f.close();
});

test('an ELF file opened to be read on demand gives what the whole file gives, reading only what is asked for', async (t) => {
  const fx = await fixtureOrSkip(t, 'calls-O2');
  if (!fx) return;
  const whole = ElfFile.parse(readFileSync(fx.path), fx.path);
  const lazy = ElfFile.open(fx.path);
  try {
    const size = readFileSync(fx.path).length;
    assert.ok(lazy.bytesRead < size, `headers only: ${lazy.bytesRead} of ${size}`);
    assert.deepEqual(lazy.sections, whole.sections);
    assert.deepEqual(lazy.segments, whole.segments);
    assert.equal(lazy.buildId, whole.buildId);
    assert.deepEqual(lazy.functionSymbols(), whole.functionSymbols());
    const main = whole.functionSymbols().symbols.find((s) => s.name === 'main')!;
    assert.deepEqual(lazy.functionBytes(main), whole.functionBytes(main));
    // A section the reader reads range by range: unread until asked for, then the file's bytes.
    const info = lazy.sectionSource().unread!('.debug_info')!;
    const want = whole.sectionContents('.debug_info')!;
    assert.equal(info.bytes.length, want.length);
    assert.ok(
      info.bytes.some((b, i) => b !== want[i]),
      'not read yet',
    );
    info.ensure(0, info.bytes.length);
    assert.deepEqual(info.bytes, want);
    assert.deepEqual(lazy.sectionContents('.debug_line'), whole.sectionContents('.debug_line'));
    assert.ok(lazy.bytesRead < size);
    assert.deepEqual(lazy.wholeFile(), readFileSync(fx.path));
  } finally {
    lazy.close();
  }
  assert.throws(() => ElfFile.open(join(dir, 'missing')), /ENOENT/);
  writeFileSync(join(dir, 'script'), '#!/bin/sh\necho hi\n');
  assert.throws(
    () => ElfFile.open(join(dir, 'script')),
    (e) => e instanceof NotElfError && /script/.test(e.message),
  );
});

test('a compressed debug section is never handed out unread: it is decompressed whole, as from memory', async (t) => {
  const fx = await fixtureOrSkip(t, 'calls-O2-zlib');
  if (!fx) return;
  const whole = ElfFile.parse(readFileSync(fx.path), fx.path);
  const lazy = ElfFile.open(fx.path);
  try {
    const src = lazy.sectionSource();
    assert.equal(src.unread!('.debug_info'), undefined, 'compressed: no unread view');
    assert.deepEqual(src.section('.debug_info'), whole.sectionContents('.debug_info'));
    const names = (e: ElfFile) =>
      openDwarf(e.sectionSource(), 'x86_64')
        .functions()
        .map((f) => f.name);
    assert.deepEqual(names(lazy), names(whole));
  } finally {
    lazy.close();
  }
});

test('openBinary with readOnDemand finds the same separate debug file (by build-id, and by debuglink with its CRC over the whole file)', async (t) => {
  for (const name of ['calls-O2-stripped-buildid', 'calls-O0-stripped-debuglink'] as const) {
    const fx = await fixtureOrSkip(t, name);
    if (!fx) return;
    const opts = { debugDirs: fx.debugDirs, noSystemDebugDir: true };
    const whole = await openBinary(fx.path, opts);
    const lazy = await openBinary(fx.path, { ...opts, readOnDemand: true });
    try {
      assert.equal(lazy.debugVia, whole.debugVia, name);
      assert.equal(lazy.debugPath, whole.debugPath, name);
      assert.deepEqual(lazy.debugCandidates, whole.debugCandidates, name);
      assert.deepEqual(lazy.dwarf().section('.debug_info'), whole.dwarf().section('.debug_info'), name);
    } finally {
      lazy.close();
    }
  }
});

test('a FileBytes dropped without close() has its descriptor closed when it is collected; a closed one is not closed again', () => {
  const { path } = patterned('dropped', 3 * FILE_CHUNK);
  const child = join(dir, 'dropped-child.ts');
  writeFileSync(
    child,
    `import { readdirSync, readlinkSync } from 'node:fs';
import { FileBytes } from ${JSON.stringify(join(__dirname, '../../../../src/core/binary/fileBytes'))};
// The descriptors on this file only (the loader may open others meanwhile).
const fds = () =>
  readdirSync('/proc/self/fd').filter((fd) => {
    try {
      return readlinkSync('/proc/self/fd/' + fd) === ${JSON.stringify(path)};
    } catch {
      return false;
    }
  }).length;
const gc = (globalThis as unknown as { gc: () => void }).gc;
void (async () => {
  const before = fds();
  const closed = FileBytes.open(${JSON.stringify(path)});
  closed.close();
  (() => {
    for (let i = 0; i < 40; i++) FileBytes.open(${JSON.stringify(path)}).ensure(0, 10);
  })();
  const open = fds();
  for (let i = 0; i < 20 && fds() > before; i++) {
    gc();
    await new Promise((r) => setTimeout(r, 20));
  }
  console.log(JSON.stringify({ before, open, after: fds() }));
})();
`,
  );
  const out = JSON.parse(
    execFileSync(process.execPath, ['--expose-gc', '--import', 'tsx', child], { encoding: 'utf8', cwd: join(__dirname, '../../../..') }),
  ) as {
    before: number;
    open: number;
    after: number;
  };
  assert.deepEqual(out, { before: 0, open: 40, after: 0 }, 'the 40 dropped ones were open, and each is closed once collected');
});

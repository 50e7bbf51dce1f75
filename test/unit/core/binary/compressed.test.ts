import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { deflateSync } from 'node:zlib';
import { ElfFile } from '../../../../src/core/binary/elfFile';
import {
  DecompressionBudget,
  decompressGabi,
  decompressZdebug,
  MAX_DECOMPRESSED_BYTES,
  MAX_TOTAL_DECOMPRESSED_BYTES,
} from '../../../../src/core/binary/compressed';
import { ElfFormatError } from '../../../../src/core/binary/errors';
import { fixtureOrSkip } from '../../../helpers/fixtures';
import { readelfSections, run, workDir } from './build';

// The oracle: objcopy decompresses the file, then dumps each section's bytes; ours must be identical.
for (const name of ['calls-O0-zlib', 'calls-O2-zstd', 'calls-O0-zstd', 'calls-O2-zdebug'] as const) {
  test(`${name}: every debug section decompresses to exactly what objcopy --decompress-debug-sections gives`, async (t) => {
    const f = await fixtureOrSkip(t, name);
    if (!f) return;
    const elf = ElfFile.parse(readFileSync(f.path), f.path);
    const compressed = readelfSections(f.path).filter((s) => s.flags.includes('C') || s.name.startsWith('.zdebug_'));
    assert.ok(compressed.length >= 4, `${name} has compressed sections`);
    const plain = join(workDir, `${name}.plain`);
    run('objcopy', ['--decompress-debug-sections', f.path, plain]);
    for (const s of compressed) {
      const debugName = s.name.replace(/^\.zdebug_/, '.debug_');
      const dumped = join(workDir, `${name}${debugName}`);
      run('objcopy', [`--dump-section=${debugName}=${dumped}`, plain]);
      const ours = elf.sectionSource().section(debugName);
      assert.ok(ours, debugName);
      assert.ok(
        Buffer.from(ours).equals(readFileSync(dumped)),
        `${name} ${debugName}: ${ours.length} bytes vs objcopy's ${readFileSync(dumped).length}`,
      );
      // Decoded once: the same object comes back.
      assert.equal(elf.sectionContents(debugName), ours);
    }
  });
}

function chdr64(type: number, size: bigint): Buffer {
  const b = Buffer.alloc(24);
  b.writeUInt32LE(type, 0);
  b.writeBigUInt64LE(size, 8);
  b.writeBigUInt64LE(1n, 16);
  return b;
}

test('a declared uncompressed size out of proportion to the data is refused before allocating', () => {
  const payload = deflateSync(Buffer.alloc(100));
  for (const size of [BigInt(MAX_DECOMPRESSED_BYTES) + 1n, 1n << 60n, 50n * 1024n * 1024n]) {
    assert.throws(
      () => decompressGabi(Buffer.concat([chdr64(1, size), payload]), 64, true, '.debug_info', 0x40),
      (e: Error) => e instanceof ElfFormatError && /\.debug_info at offset 0x4[08].*(implausible|impossibly large)/.test(e.message),
    );
  }
  const zdebug = Buffer.concat([Buffer.from('ZLIB'), Buffer.from([0, 0, 0, 0x10, 0, 0, 0, 0]), payload]);
  assert.throws(() => decompressZdebug(zdebug, '.zdebug_info', 0), /implausible/);
});

test('a stream that inflates past, or short of, its declared size is an ElfFormatError', () => {
  const data = Buffer.alloc(4096, 7);
  const z = deflateSync(data);
  assert.equal(Buffer.from(decompressGabi(Buffer.concat([chdr64(1, 4096n), z]), 64, true, 's', 0)).equals(data), true);
  assert.throws(() => decompressGabi(Buffer.concat([chdr64(1, 100n), z]), 64, true, '.debug_line', 0), ElfFormatError);
  assert.throws(() => decompressGabi(Buffer.concat([chdr64(1, 8192n), z]), 64, true, '.debug_line', 0), ElfFormatError);
  assert.throws(() => decompressGabi(Buffer.concat([chdr64(1, 4096n), z.subarray(0, 10)]), 64, true, '.debug_line', 0), ElfFormatError);
  assert.throws(() => decompressGabi(Buffer.concat([chdr64(9, 4096n), z]), 64, true, '.debug_line', 0), /unknown compression type 9/);
  assert.throws(() => decompressGabi(chdr64(1, 4096n).subarray(0, 10), 64, true, '.debug_line', 0), ElfFormatError);
});

test('zstd: a frame whose content size disagrees with the header, or corrupt data, is an ElfFormatError', () => {
  const src = Buffer.from('probelens '.repeat(500));
  const srcPath = join(workDir, 'zsrc');
  writeFileSync(srcPath, src);
  const z = Buffer.from(run('sh', ['-c', `zstd -q -c ${srcPath} | base64 -w0`]), 'base64');
  assert.equal(Buffer.from(decompressGabi(Buffer.concat([chdr64(2, BigInt(src.length)), z]), 64, true, 's', 0)).equals(src), true);
  assert.throws(
    () => decompressGabi(Buffer.concat([chdr64(2, BigInt(src.length + 1)), z]), 64, true, '.debug_str', 0),
    (e: Error) => e instanceof ElfFormatError && /declares 5000 bytes/.test(e.message),
  );
  const bad = Buffer.from(z);
  bad.fill(0xff, 8);
  assert.throws(() => decompressGabi(Buffer.concat([chdr64(2, BigInt(src.length)), bad]), 64, true, '.debug_str', 0), ElfFormatError);
  assert.throws(() => decompressGabi(Buffer.concat([chdr64(2, 10n), Buffer.from('not zstd')]), 64, true, '.debug_str', 0), /bad magic/);
});

test("one file's compressed sections share a total: the section that would pass it is refused before it is inflated", () => {
  const data = Buffer.alloc(600 * 1024, 1);
  const section = Buffer.concat([chdr64(1, BigInt(data.length)), deflateSync(data)]);
  const budget = new DecompressionBudget(1024 * 1024);
  assert.equal(decompressGabi(section, 64, true, '.debug_info', 0x1000, budget).length, data.length);
  assert.throws(
    () => decompressGabi(section, 64, true, '.debug_line', 0x2000, budget),
    (e: Error) =>
      e instanceof ElfFormatError &&
      e.message.startsWith(
        `malformed ELF in .debug_line at offset 0x2000: decompressing its ${data.length} bytes would bring this file's decompressed debug sections to ${2 * data.length} bytes, over the total of 1048576 ProbeLens decompresses per file`,
      ),
  );
  assert.equal(budget.used, data.length, 'the refused section took nothing');
  const zdebug = Buffer.concat([Buffer.from('ZLIB'), Buffer.from([0, 0, 0, 0, 0, 0x09, 0x60, 0]), deflateSync(data)]);
  assert.throws(() => decompressZdebug(zdebug, '.zdebug_str', 0, budget), /over the total of 1048576/);
  assert.equal(MAX_TOTAL_DECOMPRESSED_BYTES, 2 * 1024 ** 3);
});

test('ElfFile: the total is per file; a real zlib-compressed binary within it reads, past it stops with the error', async (t) => {
  const f = await fixtureOrSkip(t, 'calls-O0-zlib');
  if (!f) return;
  const info = ElfFile.parse(readFileSync(f.path), f.path).sectionContents('.debug_info')!.length;
  const elf = ElfFile.parse(readFileSync(f.path), f.path, { maxDecompressedBytes: info + 16 });
  assert.equal(elf.sectionContents('.debug_info')!.length, info);
  assert.throws(
    () => elf.sectionContents('.debug_line'),
    /\.debug_line at offset 0x[0-9a-f]+: decompressing its \d+ bytes .* over the total of \d+ ProbeLens decompresses per file/,
  );
  // Another file (a fresh parse) has its own total.
  assert.ok(ElfFile.parse(readFileSync(f.path), f.path, { maxDecompressedBytes: info + 16 }).sectionContents('.debug_info'));
});

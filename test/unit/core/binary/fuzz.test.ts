// Hostile input: truncations and byte flips of real fixtures, plus hand-made structural lies. Every failure
// must be one of the layer's typed errors — never a RangeError, TypeError, hang or runaway allocation.
// Bounded: a fixed seed and a fixed number of cases per fixture.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { ElfFile } from '../../../../src/core/binary/elfFile';
import { isBinaryFormatError } from '../../../../src/core/binary/errors';
import { readGoInfo } from '../../../../src/core/binary/goinfo';
import { readUsdtProbes } from '../../../../src/core/binary/usdt';
import { fixtureOrSkip } from '../../../helpers/fixtures';

/** Runs every reader of the layer over the bytes; returns the typed error or undefined. */
function exercise(data: Buffer): Error | undefined {
  try {
    const elf = ElfFile.parse(data, 'fuzzed');
    const { symbols } = elf.functionSymbols();
    void elf.buildId;
    void elf.debugLink;
    elf.notes();
    for (const s of elf.sections) elf.sectionContents(s.name);
    for (const n of ['.debug_info', '.debug_line', '.debug_str', '.debug_abbrev']) elf.sectionSource().section(n);
    readUsdtProbes(elf);
    readGoInfo(elf);
    // Zero-size end markers (Go's runtime.etext) may legitimately sit just past the mapped code.
    for (const s of symbols.filter((x) => x.size > 0n).slice(0, 50)) {
      elf.fileOffsetOf(s.address);
      elf.functionBytes(s);
    }
    return undefined;
  } catch (e) {
    if (!isBinaryFormatError(e)) throw e;
    return e;
  }
}

/** xorshift32: reproducible mutations. */
function rng(seed: number): () => number {
  let x = seed >>> 0 || 1;
  return () => {
    x ^= x << 13;
    x ^= x >>> 17;
    x ^= x << 5;
    return (x >>> 0) / 0x100000000;
  };
}

/** File regions where a flipped byte changes structure rather than code: headers, tables, notes, small sections. */
function structuralRanges(data: Buffer): [number, number][] {
  const elf = ElfFile.parse(data, 'orig');
  const ranges: [number, number][] = [[0, 64]];
  const shoff = Number(data.readBigUInt64LE(40));
  const phoff = Number(data.readBigUInt64LE(32));
  ranges.push([shoff, shoff + data.readUInt16LE(60) * 64], [phoff, phoff + data.readUInt16LE(56) * 56]);
  for (const s of elf.sections) {
    if (s.type === 8 || s.size === 0) continue;
    if (/^\.(note|symtab|dynsym|strtab|shstrtab|gnu_debuglink|go\.buildinfo|stapsdt|probes|z?debug_)/.test(s.name)) {
      ranges.push([s.offset, s.offset + Math.min(s.size, 4096)]);
    }
  }
  return ranges;
}

const FUZZED = ['calls-O0', 'calls-O2-zlib', 'calls-O2-zstd', 'calls-O0-zdebug', 'usdt', 'go'] as const;
for (const name of FUZZED) {
  test(`${name}: truncations and byte flips only ever raise typed errors`, async (t) => {
    const f = await fixtureOrSkip(t, name);
    if (!f) return;
    const orig = readFileSync(f.path);
    assert.equal(exercise(orig), undefined, 'the intact fixture reads cleanly');

    const random = rng(0x5eed + name.length);
    let failures = 0;
    // Truncations: every header byte, then spread over the file and around the section table.
    const shoff = Number(orig.readBigUInt64LE(40));
    const cuts = new Set<number>();
    for (let i = 0; i <= 80; i++) cuts.add(i);
    for (let i = 0; i < 100; i++) cuts.add(Math.floor((orig.length * i) / 100));
    for (let i = 0; i < 40; i++) cuts.add(Math.min(orig.length - 1, shoff + i * 13));
    for (const n of cuts) if (exercise(orig.subarray(0, n))) failures++;

    const ranges = structuralRanges(orig);
    const rounds = name === 'go' ? 300 : 800;
    for (let i = 0; i < rounds; i++) {
      const data = Buffer.from(orig);
      const flips = 1 + Math.floor(random() * 6);
      for (let k = 0; k < flips; k++) {
        const [lo, hi] = random() < 0.9 ? ranges[Math.floor(random() * ranges.length)] : [0, data.length];
        const at = Math.min(data.length - 1, lo + Math.floor(random() * Math.max(1, hi - lo)));
        // Mostly plausible-but-wrong values (0, 0xff, bit flips), which reach deeper than pure noise.
        const r = random();
        data[at] = r < 0.3 ? 0xff : r < 0.5 ? 0 : data[at] ^ (1 << Math.floor(random() * 8));
      }
      if (exercise(data)) failures++;
    }
    assert.ok(failures > 50, `the mutations must actually break things (${failures} typed failures)`);
  });
}

/** Patches a little-endian field of a copy. */
function patched(orig: Buffer, edits: [number, number, bigint | number][]): Buffer {
  const b = Buffer.from(orig);
  for (const [off, size, v] of edits) {
    if (size === 2) b.writeUInt16LE(Number(v), off);
    else if (size === 4) b.writeUInt32LE(Number(v), off);
    else b.writeBigUInt64LE(BigInt(v), off);
  }
  return b;
}

test('structural lies are named: table past EOF, absurd counts and sizes, bad string index, size bombs', async (t) => {
  const f = await fixtureOrSkip(t, 'calls-O2-zlib');
  if (!f) return;
  const orig = readFileSync(f.path);
  const elf = ElfFile.parse(orig, f.path);
  const shoff = Number(orig.readBigUInt64LE(40));
  const shdr = (name: string) => shoff + elf.section(name)!.index * 64;
  const expectError = (data: Buffer, re: RegExp) => {
    const e = exercise(data);
    assert.ok(e, `expected a typed error matching ${re}`);
    assert.match(e.message, re);
  };
  expectError(patched(orig, [[40, 8, BigInt(orig.length + 100)]]), /section header table.*past the end/);
  expectError(patched(orig, [[60, 2, 0xfff0]]), /section header table.*65520 entries/);
  expectError(patched(orig, [[58, 2, 16]]), /entry size 16 is smaller than the 64 bytes/);
  expectError(patched(orig, [[62, 2, 0xfff0]]), /section-name table index/);
  expectError(patched(orig, [[40, 8, 1n << 62n]]), /e_shoff .* impossibly large/);
  expectError(patched(orig, [[shdr('.symtab') + 32, 8, orig.length * 4]]), /\.symtab at offset 0x[0-9a-f]+: \d+ bytes run past the end/);
  // A compressed section whose header claims 2^40 bytes: refused before any allocation.
  const info = elf.section('.debug_info')!;
  expectError(patched(orig, [[info.offset + 8, 8, 1n << 40n]]), /\.debug_info .*implausible/);
  // A note whose name size runs past its section.
  const note = elf.section('.note.gnu.build-id')!;
  expectError(patched(orig, [[note.offset, 4, 0x7fffffff]]), /\.note\.gnu\.build-id.*needs 2147483647 bytes/);
});

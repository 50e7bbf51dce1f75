import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { ElfFile } from '../../../../src/core/binary/elfFile';
import { openBinary } from '../../../../src/core/binary/binaryImage';
import { ElfFormatError, NotElfError, UnsupportedArchError } from '../../../../src/core/binary/errors';
import { NotRegularFileError } from '../../../../src/core/binary/regularFile';
import { missing } from '../../../helpers/require';
import { CALLS_C, buildC, buildIdOf, have, readelfFunctions, perfProbeOffsets, readelfLoads, readelfSections, run, workDir } from './build';

const variants: { label: string; cc: string; flags: string[]; lib?: boolean; arch: string }[] = [
  { label: 'PIE -O0', cc: 'gcc', flags: ['-g', '-O0', '-fpie', '-pie'], arch: 'x86_64' },
  { label: 'PIE -O2', cc: 'gcc', flags: ['-g', '-O2', '-fpie', '-pie'], arch: 'x86_64' },
  { label: 'non-PIE -O2', cc: 'gcc', flags: ['-g', '-O2', '-fno-pie', '-no-pie'], arch: 'x86_64' },
  { label: 'shared library', cc: 'gcc', flags: ['-g', '-O2', '-fPIC', '-shared'], lib: true, arch: 'x86_64' },
  { label: 'aarch64 -O0', cc: 'aarch64-linux-gnu-gcc', flags: ['-g', '-O0'], arch: 'aarch64' },
  { label: 'aarch64 -O2', cc: 'aarch64-linux-gnu-gcc', flags: ['-g', '-O2'], arch: 'aarch64' },
];

for (const v of variants) {
  test(`ELF container of a ${v.label} build matches readelf and perf probe`, async (t) => {
    if (!have(v.cc)) return missing(t, `${v.cc} is not installed`);
    const bin = buildC(v.label.replace(/\W+/g, '_'), CALLS_C, v.flags, v.cc);
    const elf = ElfFile.parse(readFileSync(bin), bin);

    const hdr = run('readelf', ['-hW', bin]);
    assert.equal(elf.arch, v.arch);
    assert.equal(elf.elfClass, 64);
    assert.equal(elf.littleEndian, true);
    assert.equal(elf.type, hdr.match(/Type:\s+(\w+)/)![1]);
    assert.equal(elf.type, v.label.startsWith('non-PIE') ? 'EXEC' : 'DYN');

    // PT_LOAD segments, exactly as readelf decodes them.
    assert.deepEqual(
      elf.loadSegments.map((s) => ({ type: 'LOAD', offset: s.offset, vaddr: s.vaddr, filesz: s.filesz, memsz: s.memsz })),
      readelfLoads(bin),
    );

    // Sections, including the 64-bit sh_entsize/sh_addralign elfy reads at the wrong offsets.
    const sections = readelfSections(bin);
    assert.ok(sections.length > 20);
    for (const r of sections) {
      const s = elf.section(r.name);
      assert.ok(s, `section ${r.name}`);
      assert.deepEqual(
        { name: s.name, addr: s.addr, offset: s.offset, size: s.size, entsize: Number(s.entsize), align: s.addralign },
        { name: r.name, addr: r.addr, offset: r.offset, size: r.size, entsize: r.entsize, align: r.align },
      );
    }
    assert.ok(
      sections.some((r) => r.name === '.symtab' && r.entsize === 24),
      'readelf shows Elf64_Sym entries',
    );

    // Function symbols: .symtab equals nm, .dynsym equals nm -D.
    const { symbols, groups } = elf.functionSymbols();
    const fromSymtab = new Map(symbols.filter((s) => s.table === '.symtab').map((s) => [s.name, s.address]));
    assert.deepEqual(fromSymtab, readelfFunctions(bin, '.symtab'));
    const dyn = readelfFunctions(bin, '.dynsym');
    if (v.lib) assert.ok(dyn.has('deposit'));
    // .dynsym entries equal to a .symtab one are merged away; what's left must still be at readelf's address.
    for (const [name, addr] of dyn)
      assert.ok(
        symbols.some((s) => s.name === name && s.address === addr),
        `dynsym ${name}`,
      );
    const alias = groups.find((g) => g.symbols.some((s) => s.name === 'alias_name'));
    assert.deepEqual(alias?.symbols.map((s) => s.name).sort(), ['alias_name', 'alias_target']);
    const deposit = symbols.find((s) => s.name === 'deposit')!;
    assert.equal(deposit.binding, 'global');
    assert.ok(deposit.size > 0n);

    // File offsets: the PT_LOAD formula, checked against perf probe's own computation.
    const loads = readelfLoads(bin);
    for (const name of v.lib ? ['deposit', 'compute', 'alias_target'] : ['main', 'deposit', 'compute', 'alias_target']) {
      const sym = symbols.find((s) => s.name === name)!;
      const seg = loads.find((l) => sym.address >= l.vaddr && sym.address < l.vaddr + BigInt(l.filesz))!;
      const expected = Number(sym.address - seg.vaddr) + seg.offset;
      assert.equal(elf.fileOffsetOf(sym.address), expected, name);
      if (have('perf')) {
        const perf = perfProbeOffsets(bin, `${name}+0`);
        assert.ok(perf.includes(elf.fileOffsetOf(sym.address)), `${name}: ${expected} is one of perf probe -D's sites ${perf}`);
      }
      // The code bytes are the file's bytes at that offset, st_size long.
      const code = elf.functionBytes(sym);
      assert.equal(code.length, Number(sym.size));
      assert.deepEqual(Buffer.from(code), readFileSync(bin).subarray(expected, expected + Number(sym.size)));
    }
    assert.throws(() => elf.fileOffsetOf(0xdead_0000_0000n), ElfFormatError);

    assert.equal(elf.buildId, buildIdOf(bin));
    assert.equal(elf.hasDebugInfo, true);
    assert.ok(elf.sectionSource().section('.debug_info')!.length > 0);
    assert.equal(elf.sectionSource().section('.debug_nonexistent'), undefined);

    const image = await openBinary(bin, { noSystemDebugDir: true });
    assert.equal(image.debugVia, 'self');
    assert.equal(image.arch, v.arch);
  });
}

test('@+N for globals is relative to the probed segment, not the data segment (kernel translate_user_vaddr)', async (t) => {
  if (!have('gcc')) return missing(t, 'gcc');
  const bin = buildC(
    'globals',
    'int g_data = 42;\nint g_bss;\nint __attribute__((noinline)) f(int x) { return x + g_data + g_bss; }\nint main(void) { g_bss = 7; return f(1); }\n',
    ['-O0', '-g', '-fpie', '-pie'],
  );
  const elf = ElfFile.parse(readFileSync(bin), bin);
  const syms = new Map<string, bigint>();
  for (const l of run('readelf', ['-sW', bin]).split('\n')) {
    const m = l.match(/^\s*\d+:\s+([0-9a-f]+)\s+\d+\s+(?:OBJECT|FUNC)\s+\S+\s+\S+\s+\S+\s+(\S+)$/);
    if (m) syms.set(m[2], BigInt(`0x${m[1]}`));
  }
  const loads = readelfLoads(bin);
  const text = loads.find((l) => syms.get('f')! >= l.vaddr && syms.get('f')! < l.vaddr + BigInt(l.filesz))!;
  const data = loads.find((l) => syms.get('g_data')! >= l.vaddr && syms.get('g_data')! < l.vaddr + BigInt(l.filesz))!;
  assert.notEqual(text.vaddr - BigInt(text.offset), data.vaddr - BigInt(data.offset), 'gcc lays data out with another delta');
  for (const g of ['g_data', 'g_bss']) {
    assert.equal(elf.fetchOffsetOf(syms.get(g)!, syms.get('f')!), syms.get(g)! - (text.vaddr - BigInt(text.offset)), g);
  }
  assert.notEqual(elf.fetchOffsetOf(syms.get('g_data')!, syms.get('f')!), BigInt(elf.fileOffsetOf(syms.get('g_data')!)));
  assert.throws(() => elf.fileOffsetOf(syms.get('g_bss')!), ElfFormatError, '.bss has no file offset');
});

test('a 32-bit i386 object is read with Elf32 layouts and refused for probing', async (t) => {
  if (!have('as') || !have('ld')) return missing(t, 'binutils');
  const dir = join(workDir, 'i386');
  mkdirSync(dir, { recursive: true });
  writeFileSync(
    join(dir, 'x.s'),
    '.globl _start\n.type _start,@function\n_start: movl $1,%eax\n int $0x80\n.size _start,.-_start\n.type helper,@function\nhelper: ret\n.size helper,1\n',
  );
  run('as', ['--32', '-o', join(dir, 'x.o'), join(dir, 'x.s')]);
  run('ld', ['-m', 'elf_i386', '--build-id', '-o', join(dir, 'x'), join(dir, 'x.o')]);
  const bin = join(dir, 'x');
  const elf = ElfFile.parse(readFileSync(bin), bin);
  assert.equal(elf.elfClass, 32);
  assert.equal(elf.addressSize, 4);
  assert.equal(elf.machineName, 'i386');
  assert.equal(elf.type, 'EXEC');
  assert.deepEqual(new Map(elf.functionSymbols().symbols.map((s) => [s.name, s.address])), readelfFunctions(bin, '.symtab'));
  assert.equal(elf.functionSymbols().symbols.find((s) => s.name === 'helper')?.binding, 'local');
  assert.equal(elf.buildId, buildIdOf(bin));
  const start = elf.functionSymbols().symbols.find((s) => s.name === '_start')!;
  const seg = readelfLoads(bin).find((l) => start.address >= l.vaddr && start.address < l.vaddr + BigInt(l.filesz))!;
  assert.equal(elf.fileOffsetOf(start.address), Number(start.address - seg.vaddr) + seg.offset);
  assert.throws(() => elf.requireProbeableArch(), UnsupportedArchError);
  await assert.rejects(openBinary(bin), (e: Error) => e instanceof UnsupportedArchError && /i386.*x86-64 and AArch64/.test(e.message));
  assert.equal((await openBinary(bin, { anyArch: true })).elf.machineName, 'i386');
});

test('a big-endian AArch64 object: byte order from EI_DATA drives every field', async (t) => {
  if (!have('aarch64-linux-gnu-as') || !have('aarch64-linux-gnu-ld')) return missing(t, 'binutils-aarch64-linux-gnu');
  const dir = join(workDir, 'be');
  mkdirSync(dir, { recursive: true });
  writeFileSync(
    join(dir, 'be.s'),
    '.globl _start\n.type _start,%function\n_start: mov x0, #0\n ret\n.size _start,.-_start\n.type helper,%function\nhelper: ret\n.size helper,4\n',
  );
  run('aarch64-linux-gnu-as', ['-EB', '-o', join(dir, 'be.o'), join(dir, 'be.s')]);
  run('aarch64-linux-gnu-ld', ['-EB', '--build-id', '-o', join(dir, 'be'), join(dir, 'be.o')]);
  const bin = join(dir, 'be');
  const elf = ElfFile.parse(readFileSync(bin), bin);
  assert.equal(elf.littleEndian, false);
  assert.equal(elf.arch, 'aarch64');
  assert.equal(elf.type, 'EXEC');
  assert.deepEqual(new Map(elf.functionSymbols().symbols.map((s) => [s.name, s.address])), readelfFunctions(bin, '.symtab'));
  assert.equal(elf.buildId, buildIdOf(bin));
  assert.deepEqual(
    elf.loadSegments.map((s) => ({ type: 'LOAD', offset: s.offset, vaddr: s.vaddr, filesz: s.filesz, memsz: s.memsz })),
    readelfLoads(bin),
  );
  const start = elf.functionSymbols().symbols.find((s) => s.name === '_start')!;
  // `mov x0, #0` is d2800000 in every byte order's instruction stream (AArch64 code is always little-endian).
  assert.equal(Buffer.from(elf.functionBytes(start)).subarray(0, 4).toString('hex'), '000080d2');
});

test('non-ELF inputs are refused with NotElfError (a directory with NotRegularFileError) and a sentence the user can act on', async () => {
  const script = join(workDir, 'script.sh');
  writeFileSync(script, '#!/bin/sh\necho hi\n');
  const empty = join(workDir, 'empty');
  writeFileSync(empty, '');
  await assert.rejects(
    openBinary(script),
    (e: Error) => e instanceof NotElfError && /script\.sh is not an ELF .*it is a script.*compiled binary/.test(e.message),
  );
  await assert.rejects(openBinary(empty), (e: Error) => e instanceof NotElfError && /empty/.test(e.message));
  await assert.rejects(
    openBinary(workDir),
    (e: Error) =>
      e instanceof NotRegularFileError &&
      e.message === `${workDir} is a directory, not a file: point ProbeLens at the compiled binary inside it`,
  );
  await assert.rejects(openBinary(join(workDir, 'does-not-exist')), /ENOENT/);
});

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { openBinary } from '../../../../src/core/binary/binaryImage';
import { FIXTURE_NAMES, fixtureOrSkip } from '../../../helpers/fixtures';
import { missing } from '../../../helpers/require';
import { buildIdOf, have, perfProbeOffsets, readelfFunctions, readelfLoads } from './build';

// Every fixture variant through the public entry point: arch, build-id, DWARF found, and each function
// symbol's address and file offset equal to readelf's symbol table + PT_LOAD formula.
for (const name of FIXTURE_NAMES) {
  test(`${name}: openBinary agrees with readelf on symbols, offsets and build-id, and finds the DWARF`, async (t) => {
    const f = await fixtureOrSkip(t, name);
    if (!f) return;
    const image = await openBinary(f.path, { debugDirs: f.debugDirs, noSystemDebugDir: true });
    assert.equal(image.arch, f.arch);
    assert.equal(image.type, f.pie === false ? 'EXEC' : 'DYN');
    assert.equal(image.buildId, buildIdOf(f.path));
    assert.ok(image.hasDwarf, `DWARF via ${image.debugVia}`);
    if (f.stripped) assert.equal(image.debugVia, f.stripped === 'buildid' ? 'build-id' : 'debuglink');
    assert.ok(image.dwarf().section('.debug_info')!.length > 0);
    assert.ok(image.dwarf().section('.debug_line')!.length > 0);

    const want = readelfFunctions(f.path, '.symtab');
    const dyn = readelfFunctions(f.path, '.dynsym');
    const { symbols, groups } = image.functionSymbols();
    assert.deepEqual(new Map(symbols.filter((s) => s.table === '.symtab').map((s) => [s.name, s.address])), want);
    for (const [n, addr] of dyn)
      assert.ok(
        symbols.some((s) => s.name === n && s.address === addr),
        `.dynsym ${n}`,
      );
    assert.equal(groups.length, new Set(symbols.map((s) => s.address)).size);

    const loads = readelfLoads(f.path);
    for (const s of symbols) {
      const seg = loads.find((l) => s.address >= l.vaddr && s.address < l.vaddr + BigInt(l.filesz));
      if (!seg) {
        // Only zero-size end markers (Go's runtime.etext) may sit just past the code.
        assert.equal(s.size, 0n, `${s.name} is in no PT_LOAD`);
        assert.throws(() => image.fileOffsetOf(s.address), /no file-backed PT_LOAD/);
        continue;
      }
      assert.equal(image.fileOffsetOf(s.address), Number(s.address - seg.vaddr) + seg.offset, s.name);
    }

    // perf probe resolves `main` by DWARF name: in Rust that is main::main, not the C shim the linker calls main.
    const mainName = f.name.startsWith('libcalls') ? 'lib_add' : 'main';
    const entry =
      f.lang === 'go'
        ? symbols.find((s) => s.name === 'main.main')
        : f.lang === 'rust'
          ? symbols.find((s) => s.name.startsWith('_ZN4main4main17h'))
          : symbols.find((s) => s.name === mainName);
    if (f.lang !== 'rust' || f.opt === 'O0') {
      assert.ok(entry, 'main symbol');
      if (!have('perf')) return missing(t, 'perf (linux-perf) for the perf probe -D oracle');
      const perf = perfProbeOffsets(f.path, f.lang === 'go' ? 'main.main+0' : `${mainName}+0`);
      assert.ok(
        perf.includes(image.fileOffsetOf(entry.address)),
        `${entry.name} at ${image.fileOffsetOf(entry.address)} vs perf probe -D ${perf}`,
      );
    }
  });
}

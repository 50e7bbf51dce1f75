// What a build reads: the whole index reads the binary range by range, the sections it decodes and not the rest
// (the code, the data, a vmlinux's relocation sections), on one thread and on a pool alike.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { statSync } from 'node:fs';
import { ElfFile } from '../../../../src/core/binary/elfFile';
import { bytesReadIn, type FileReadMap } from '../../../../src/core/binary/fileBytes';
import { buildIndex } from '../../../../src/core/index/build';
import { fixtureOrSkip, type FixtureName } from '../../../helpers/fixtures';
import { indexDump } from '../../../helpers/indexDump';

/** Sections a cold whole index may read (the ELF tables, symbols, notes, the DWARF it decodes). */
const DECODED = /^(\.symtab|\.strtab|\.dynsym|\.dynstr|\.shstrtab|\.note\..*|\.debug_.*|\.zdebug_.*|\.go\.buildinfo|\.gnu_debuglink)$/;

// Rust and Go: code worth not reading (hundreds of KiB), one pass per share; C: units walked a batch at a time.
for (const name of ['rust-O2', 'go', 'sites'] as FixtureName[]) {
  test(`${name}: the whole index, on one thread and on a pool of 3, reads no code and nothing it does not decode`, async (t) => {
    const f = await fixtureOrSkip(t, name);
    if (!f) return;
    const elf = ElfFile.open(f.path);
    elf.close();
    const size = statSync(f.path).size;
    let one: string | undefined;
    for (const workers of [1, 3]) {
      let maps: FileReadMap[] | undefined;
      const dump = indexDump(await buildIndex(f.path, { workers, onReads: (m) => (maps = m) }));
      one ??= dump;
      assert.equal(dump, one, `${workers} threads: the same index`);
      const map = maps?.find((m) => m.path === f.path);
      assert.ok(map, `${workers} threads: what was read is reported`);
      const read = bytesReadIn(map, 0, size);
      assert.ok(read < size, `${workers} threads: ${read} of ${size} bytes read, not the whole file`);
      // A section shares at most a chunk at each end with its neighbours: any more read of it was read for it.
      for (const s of elf.sections) {
        if (DECODED.test(s.name) || s.size === 0 || s.type === 8 /* SHT_NOBITS */) continue;
        const got = bytesReadIn(map, s.offset, s.size);
        assert.ok(got <= 2 * 4096, `${workers} threads: ${got} bytes of ${s.name} (${s.size}) read`);
      }
      if (name !== 'sites') assert.ok(elf.section('.text')!.size > 64 * 4096, `${name}: a .text worth checking`);
    }
  });
}

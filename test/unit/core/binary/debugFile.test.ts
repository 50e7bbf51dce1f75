import { test } from 'node:test';
import assert from 'node:assert/strict';
import { appendFileSync, copyFileSync, mkdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { openBinary } from '../../../../src/core/binary/binaryImage';
import { crc32 } from '../../../../src/core/binary/crc32';
import { DebugFileMismatchError } from '../../../../src/core/binary/errors';
import { fixtureOrSkip } from '../../../helpers/fixtures';
import { CALLS_C, buildC, buildIdOf, readelfFunctions, run, workDir } from './build';

test('CRC-32 matches the standard check value, natively and table-driven', () => {
  const check = Buffer.from('123456789');
  assert.equal(crc32(check), 0xcbf43926);
  assert.equal(crc32(check, true), 0xcbf43926);
  const big = readFileSync(process.execPath).subarray(0, 1 << 20);
  assert.equal(crc32(big, true), crc32(big));
});

test('stripped binary + build-id tree: the debug file is found by build-id and supplies the DWARF', async (t) => {
  const f = await fixtureOrSkip(t, 'calls-O2-stripped-buildid');
  if (!f) return;
  assert.ok(f.debugDirs?.length);
  const image = await openBinary(f.path, { debugDirs: f.debugDirs, noSystemDebugDir: true });
  assert.equal(image.debugVia, 'build-id');
  assert.equal(image.elf.hasDebugInfo, false, 'the executable itself carries no DWARF');
  const id = buildIdOf(f.path)!;
  assert.equal(image.buildId, id);
  assert.equal(image.debugPath, join(f.debugDirs[0], '.build-id', id.slice(0, 2), `${id.slice(2)}.debug`));
  assert.equal(image.debugElf?.buildId, id);
  assert.ok(image.dwarf().section('.debug_info')!.length > 100);
  // A debug file's .text is SHT_NOBITS: never read as code.
  assert.equal(image.debugElf!.sectionContents('.text'), undefined);
  // Symbols and offsets come from the executable (it keeps .symtab after --strip-debug).
  const deposit = image.functionSymbols().symbols.find((s) => s.name === 'main')!;
  assert.equal(deposit.address, readelfFunctions(f.path, '.symtab').get('main'));

  const without = await openBinary(f.path, { noSystemDebugDir: true });
  assert.equal(without.hasDwarf, false);
  assert.equal(without.debugVia, undefined);
});

test('stripped binary + .gnu_debuglink: found in .debug/, same dir and global dirs; a CRC mismatch is refused', async (t) => {
  const f = await fixtureOrSkip(t, 'calls-O0-stripped-debuglink');
  if (!f?.debugFile) return;
  const image = await openBinary(f.path, { noSystemDebugDir: true });
  assert.equal(image.debugVia, 'debuglink');
  assert.equal(image.debugPath, f.debugFile);
  const link = run('readelf', ['--string-dump=.gnu_debuglink', f.path]).match(/\]\s+(\S+)/)![1];
  assert.deepEqual(image.elf.debugLink, { file: link, crc32: crc32(readFileSync(f.debugFile)) });
  assert.ok(image.dwarf().section('.debug_info'));

  // Same directory as the binary.
  const same = join(workDir, 'linksame');
  mkdirSync(same, { recursive: true });
  copyFileSync(f.path, join(same, 'calls'));
  copyFileSync(f.debugFile, join(same, link));
  assert.equal((await openBinary(join(same, 'calls'), { noSystemDebugDir: true })).debugPath, join(same, link));

  // A global debug dir mirroring the binary's directory.
  const bare = join(workDir, 'linkglobal', 'bin');
  const root = join(workDir, 'linkglobal', 'debugroot');
  mkdirSync(bare, { recursive: true });
  mkdirSync(join(root, bare), { recursive: true });
  copyFileSync(f.path, join(bare, 'calls'));
  copyFileSync(f.debugFile, join(root, bare, link));
  const viaGlobal = await openBinary(join(bare, 'calls'), { debugDirs: [root], noSystemDebugDir: true });
  assert.equal(viaGlobal.debugPath, join(root, bare, link));

  // Change the debug file: same build-id, different CRC → refused, and the reason is recorded.
  appendFileSync(join(same, link), Buffer.from([0]));
  const refused = await openBinary(join(same, 'calls'), { noSystemDebugDir: true });
  assert.equal(refused.hasDwarf, false);
  assert.deepEqual(refused.debugCandidates.find((c) => c.path === join(same, link))?.verdict, 'crc mismatch');
  // Named explicitly, the build-id (equal here) is the proof that counts, as for a build-id lookup.
  const explicit = await openBinary(join(same, 'calls'), { debugFile: join(same, link), noSystemDebugDir: true });
  assert.equal(explicit.debugVia, 'explicit');
});

test('an explicit debug file of another build is refused by build-id', async (t) => {
  const f = await fixtureOrSkip(t, 'calls-O2-stripped-buildid');
  const other = await fixtureOrSkip(t, 'calls-O0-stripped-debuglink');
  if (!f || !other?.debugFile) return;
  await assert.rejects(
    openBinary(f.path, { debugFile: other.debugFile, noSystemDebugDir: true }),
    (e: Error) =>
      e instanceof DebugFileMismatchError && /build-id/.test(e.message) && /install the debug file from the same build/.test(e.message),
  );
});

test('without build-ids only the debuglink CRC proves a match: a changed debug file is refused, also when named explicitly', async () => {
  const full = buildC('nobuildid', CALLS_C, ['-g', '-O1', '-Wl,--build-id=none']);
  const dir = join(workDir, 'nobuildid-split');
  mkdirSync(join(dir, '.debug'), { recursive: true });
  const debug = join(dir, '.debug', 'prog.debug');
  run('objcopy', ['--only-keep-debug', full, debug]);
  run('objcopy', ['--strip-debug', `--add-gnu-debuglink=${debug}`, full, join(dir, 'prog')]);
  const bin = join(dir, 'prog');
  const ok = await openBinary(bin, { noSystemDebugDir: true });
  assert.equal(ok.buildId, undefined);
  assert.equal(ok.debugVia, 'debuglink');
  assert.equal(ok.debugPath, debug);
  appendFileSync(debug, Buffer.from([0]));
  const refused = await openBinary(bin, { noSystemDebugDir: true });
  assert.equal(refused.hasDwarf, false);
  assert.equal(refused.debugCandidates.find((c) => c.path === debug)?.verdict, 'crc mismatch');
  await assert.rejects(
    openBinary(bin, { debugFile: debug, noSystemDebugDir: true }),
    (e: Error) => e instanceof DebugFileMismatchError && /CRC32 0x[0-9a-f]+ vs \.gnu_debuglink's 0x[0-9a-f]+/.test(e.message),
  );
});

test('a fully stripped binary (no .symtab) takes its function symbols from the debug file', async () => {
  const full = buildC('allstripped', CALLS_C, ['-g', '-O2']);
  const dir = join(workDir, 'allstripped-split');
  mkdirSync(dir, { recursive: true });
  const debug = join(dir, 'prog.debug');
  run('objcopy', ['--only-keep-debug', full, debug]);
  run('objcopy', ['--strip-all', `--add-gnu-debuglink=${debug}`, full, join(dir, 'prog')]);
  const image = await openBinary(join(dir, 'prog'), { noSystemDebugDir: true });
  assert.equal(image.elf.section('.symtab'), undefined);
  assert.equal(image.debugVia, 'debuglink');
  const ours = new Map(image.functionSymbols().symbols.map((s) => [s.name, s.address]));
  for (const [name, addr] of readelfFunctions(full, '.symtab')) assert.equal(ours.get(name), addr, name);
  // Offsets still come from the stripped executable's own program headers.
  const main = image.functionSymbols().symbols.find((s) => s.name === 'main')!;
  assert.equal(image.fileOffsetOf(main.address), image.elf.fileOffsetOf(main.address));
});

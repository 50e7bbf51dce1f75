import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { openBinary } from '../../../../src/core/binary/binaryImage';
import { ElfFile } from '../../../../src/core/binary/elfFile';
import { readGoInfo } from '../../../../src/core/binary/goinfo';
import { fixtureOrSkip } from '../../../helpers/fixtures';
import { missing } from '../../../helpers/require';
import { have, perfProbeOffsets, readelfFunctions, run, workDir } from './build';

/** `go version -m BIN`: the Go toolchain's own reading of the same build info. */
function goVersionM(bin: string): { version: string; path?: string; mod?: string } {
  const out = run('go', ['version', '-m', bin]);
  return {
    version: out.match(/^\S+: (\S+)/)![1],
    path: out.match(/^\s+path\s+(\S+)/m)?.[1],
    mod: out.match(/^\s+mod\s+(\S+)/m)?.[1],
  };
}

test('go fixture: version, main module and register ABI as `go version -m` reports them', async (t) => {
  const f = await fixtureOrSkip(t, 'go');
  if (!f) return;
  const image = await openBinary(f.path, { noSystemDebugDir: true });
  const go = image.goInfo();
  assert.ok(go, 'detected as Go');
  const want = goVersionM(f.path);
  assert.equal(go.version, want.version);
  assert.equal(go.mainPath, want.path);
  assert.equal(go.modulePath, want.mod);
  assert.equal(go.abi, 'register', `${go.version} on amd64 uses ABIInternal`);
  assert.deepEqual(go.intArgRegisters.slice(0, 3), ['rax', 'rbx', 'rcx']);
  assert.ok(go.goBuildId && go.goBuildId.length > 10);
  // Go symbols ("main.main", "pkg.(*T).Method") come through the same symbol reader.
  const symbols = image.functionSymbols().symbols;
  assert.equal(symbols.find((s) => s.name === 'main.main')?.address, readelfFunctions(f.path, '.symtab').get('main.main'));
  if (have('perf')) {
    const main = symbols.find((s) => s.name === 'main.main')!;
    assert.ok(perfProbeOffsets(f.path, 'main.main+0').includes(image.fileOffsetOf(main.address)));
  }
  const c = await fixtureOrSkip(t, 'calls-O0');
  if (c) assert.equal((await openBinary(c.path, { noSystemDebugDir: true })).goInfo(), undefined, 'a C binary is not Go');
});

test('Go on arm64 (cross-built): register ABI since 1.18', async (t) => {
  if (!have('go')) return missing(t, 'golang-go');
  const dir = join(workDir, 'goarm');
  mkdirSync(dir, { recursive: true });
  writeFileSync(join(dir, 'go.mod'), 'module x.test/garm\ngo 1.17\n');
  writeFileSync(join(dir, 'main.go'), 'package main\nfunc add(a, b int) int { return a + b }\nfunc main() { println(add(1, 2)) }\n');
  run('go', ['build', '-buildvcs=false', '-o', 'garm', '.'], {
    cwd: dir,
    env: { ...process.env, GOARCH: 'arm64', GOFLAGS: '', GOPROXY: 'off', GOTOOLCHAIN: 'local', GOWORK: 'off' },
  });
  const image = await openBinary(join(dir, 'garm'), { noSystemDebugDir: true });
  assert.equal(image.arch, 'aarch64');
  const go = image.goInfo()!;
  assert.equal(go.version, goVersionM(join(dir, 'garm')).version);
  assert.equal(go.modulePath, 'x.test/garm');
  assert.equal(go.abi, 'register');
  assert.equal(go.intArgRegisters[0], 'x0');
});

test('pre-1.18 .go.buildinfo (pointers to string headers) is followed through PT_LOAD; old versions use the stack ABI', async (t) => {
  const f = await fixtureOrSkip(t, 'go');
  if (!f) return;
  // Go 1.19 writes the inline format only, so rewrite the real section into the older pointer layout:
  // header, then pointers to two {data, len} string headers, then the strings, all inside the section.
  const data = Buffer.from(readFileSync(f.path));
  const sec = ElfFile.parse(data, f.path).section('.go.buildinfo')!;
  const version = 'go1.16.15';
  const modinfo = `${'0'.repeat(16)}path\told.test/cmd\nmod\told.test\t(devel)\t\n${'1'.repeat(15)}\n`;
  const o = sec.offset;
  const a = sec.addr;
  assert.ok(sec.size >= 64 + version.length + modinfo.length);
  data.fill(0, o, o + sec.size);
  data.write('\xff Go buildinf:', o, 'latin1');
  data[o + 14] = 8;
  data[o + 15] = 0; // little-endian, pointer format
  data.writeBigUInt64LE(a + 32n, o + 16);
  data.writeBigUInt64LE(a + 48n, o + 24);
  data.writeBigUInt64LE(a + 64n, o + 32);
  data.writeBigUInt64LE(BigInt(version.length), o + 40);
  data.writeBigUInt64LE(a + 64n + BigInt(version.length), o + 48);
  data.writeBigUInt64LE(BigInt(modinfo.length), o + 56);
  data.write(version + modinfo, o + 64, 'latin1');
  const go = readGoInfo(ElfFile.parse(data, 'rewritten'))!;
  assert.equal(go.version, version);
  assert.equal(go.modulePath, 'old.test');
  assert.equal(go.mainPath, 'old.test/cmd');
  assert.equal(go.abi, 'stack');
  assert.deepEqual(go.intArgRegisters, []);
  // The same layout with Go 1.17 is ABIInternal on amd64.
  data.write('go1.17.13', o + 64, 'latin1');
  assert.equal(readGoInfo(ElfFile.parse(data, 'rewritten'))!.abi, 'register');
});

// The cheap source-file scan and the chooser on real compiled fixtures: which binary holds the open file,
// copies of one build counted once, stripped binaries and separate debug files said for what they are.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { copyFileSync, linkSync, mkdtempSync, statSync, utimesSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { basename, join } from 'node:path';
import { fixtureOrSkip } from '../../../helpers/fixtures';
import { miniModule } from '../../../helpers/miniKernel';
import { openBinary } from '../../../../src/core/binary/binaryImage';
import { bytesReadIn } from '../../../../src/core/binary/fileBytes';
import { openDwarf } from '../../../../src/core/dwarf';
import { sourceFilesOf } from '../../../../src/core/dwarf/sourceFiles';
import { chooseBinaries, groupBuilds } from '../../../../src/core/workspace/choose';
import { ScanCache, scanBinary, type BinaryScan } from '../../../../src/core/workspace/scan';

const scratch = (): string => mkdtempSync(join(tmpdir(), 'probelens-scan-'));

test('the scan names exactly the files the full DWARF reader finds (C, C++, Rust, Go)', async (t) => {
  for (const name of ['calls-O2', 'cpp-O2', 'rust-O2', 'go'] as const) {
    const f = await fixtureOrSkip(t, name);
    if (!f) continue;
    const image = await openBinary(f.path);
    const dw = openDwarf(image.dwarf(), image.elf.requireProbeableArch());
    const full = new Set<string>();
    for (const lt of dw.lineTables()) for (const p of lt.files) if (p) full.add(p);
    const units = new Set(dw.units().map((u) => u.name));
    const sf = sourceFilesOf(image.dwarf());
    for (const p of full) assert.ok(sf.files.includes(p), `${name}: the scan lists ${p}`);
    for (const src of f.sourceFiles.filter((s) => /\.(c|cc|cpp|rs|go)$/.test(s))) {
      assert.ok(sf.files.includes(src), `${name}: ${basename(src)} is named (${src})`);
    }
    assert.ok(sf.units.length > 0 && sf.units.length <= units.size, `${name}: unit names`);
  }
});

test('scanBinary reads the binary range by range: the files it names are those of the file read whole, from a part of it', async (t) => {
  for (const name of ['rust-O2', 'go'] as const) {
    const f = await fixtureOrSkip(t, name);
    if (!f) continue;
    let read = 0;
    const scan = await scanBinary(f.path, {
      noSystemDebugDir: true,
      onReads: (maps) => (read = maps.reduce((n, m) => n + bytesReadIn(m, 0, m.size), 0)),
    });
    const whole = sourceFilesOf((await openBinary(f.path)).dwarf());
    assert.deepEqual([...scan!.files].sort(), [...new Set(whole.files)].sort(), `${name}: the files named`);
    const size = statSync(f.path).size;
    assert.ok(read > 0 && read < size * 0.75, `${name}: ${read} of ${size} bytes read`);
  }
});

test('a program and its shared library: each names its own sources; the library is a library', async (t) => {
  const lib = await fixtureOrSkip(t, 'libcalls-O0');
  const exe = await fixtureOrSkip(t, 'uselib-O0');
  if (!lib || !exe) return;
  const l = (await scanBinary(lib.path))!;
  const e = (await scanBinary(exe.path))!;
  assert.equal(l.kind, 'shared-library');
  assert.equal(e.kind, 'executable');
  const libC = lib.sourceFiles.find((s) => s.endsWith('libcalls.c'))!;
  const useC = exe.sourceFiles.find((s) => s.endsWith('uselib.c'))!;
  assert.ok(l.units.has(libC) && !l.files.has(useC));
  assert.ok(e.units.has(useC) && !e.units.has(libC));
  const choice = chooseBinaries([l, e], libC);
  assert.deepEqual(
    choice.builds.map((b) => b.primary.path),
    [lib.path],
  );
  assert.deepEqual(
    chooseBinaries([l, e], useC).builds.map((b) => b.primary.path),
    [exe.path],
  );
});

test('copies of one build are one choice (the oldest copy, as the linker wrote it); hard links too', async (t) => {
  const f = await fixtureOrSkip(t, 'calls-O0');
  if (!f) return;
  const dir = scratch();
  const server = join(dir, 'redis-server');
  copyFileSync(f.path, server);
  utimesSync(server, new Date(1_700_000_000_000), new Date(1_700_000_000_000));
  for (const copy of ['redis-sentinel', 'redis-check-aof']) {
    copyFileSync(server, join(dir, copy));
    utimesSync(join(dir, copy), new Date(1_700_000_100_000), new Date(1_700_000_100_000));
  }
  linkSync(server, join(dir, 'redis-server-hardlink'));
  const scans = (await Promise.all(
    ['redis-server', 'redis-sentinel', 'redis-check-aof', 'redis-server-hardlink'].map((n) => scanBinary(join(dir, n))),
  )) as BinaryScan[];
  const builds = groupBuilds(scans);
  assert.equal(builds.length, 1, 'one build-id, one build');
  assert.equal(builds[0].copies.length, 4);
  const src = f.sourceFiles.find((s) => s.endsWith('calls.c'))!;
  const choice = chooseBinaries(scans, src);
  assert.deepEqual(
    choice.builds.map((b) => basename(b.primary.path)),
    ['redis-server'],
  );

  // Without build-ids, only hard links are known to be the same file.
  const nb = await fixtureOrSkip(t, 'calls-O0-nobuildid');
  if (!nb) return;
  const a = join(dir, 'nb-a');
  copyFileSync(nb.path, a);
  linkSync(a, join(dir, 'nb-link'));
  copyFileSync(nb.path, join(dir, 'nb-copy'));
  const nbScans = (await Promise.all(['nb-a', 'nb-link', 'nb-copy'].map((n) => scanBinary(join(dir, n))))) as BinaryScan[];
  assert.equal(nbScans[0].buildId, undefined);
  assert.deepEqual(
    groupBuilds(nbScans)
      .map((b) => b.copies.length)
      .sort(),
    [1, 2],
  );
});

test('distinct builds holding the same file are all offered: the one compiled from it before one that only includes it', async (t) => {
  const f = await fixtureOrSkip(t, 'calls-O0');
  const g = await fixtureOrSkip(t, 'calls-O2');
  const exe = await fixtureOrSkip(t, 'uselib-O0');
  if (!f || !g || !exe) return;
  const scans = (await Promise.all([f.path, g.path].map((p) => scanBinary(p)))) as BinaryScan[];
  const src = f.sourceFiles.find((s) => s.endsWith('calls.c'))!;
  const choice = chooseBinaries(scans, src);
  assert.equal(choice.builds.length, 2, 'an -O0 and an -O2 build are two choices');
  // x.c compiled into `older`; `newer` compiles y.c, which #includes x.c: x.c is in its line table, not a unit.
  const dir = scratch();
  const x = join(dir, 'x.c');
  writeFileSync(x, 'int x_fn(int a) { return a + 1; }\n');
  writeFileSync(join(dir, 'main.c'), 'int x_fn(int);\nint main(void) { return x_fn(1); }\n');
  writeFileSync(join(dir, 'y.c'), '#include "x.c"\nint main(void) { return x_fn(2); }\n');
  execFileSync('gcc', ['-g', '-o', 'older', 'x.c', 'main.c'], { cwd: dir });
  execFileSync('gcc', ['-g', '-o', 'newer', 'y.c'], { cwd: dir });
  utimesSync(join(dir, 'older'), new Date(1_700_000_000_000), new Date(1_700_000_000_000));
  const both = (await Promise.all(['newer', 'older'].map((n) => scanBinary(join(dir, n))))) as BinaryScan[];
  assert.ok(both[0].files.has(x) && !both[0].units.has(x), 'y.c includes x.c');
  assert.deepEqual(
    chooseBinaries(both, x).builds.map((b) => basename(b.primary.path)),
    ['older', 'newer'],
  );
  // A header named by two programs: both offered, the newer first.
  const header = f.sourceFiles.find((s) => s.endsWith('report.h'))!;
  const two = (await Promise.all([f.path, exe.path].map((p) => scanBinary(p)))) as BinaryScan[];
  assert.equal(chooseBinaries(two, header).builds.length, 2, 'both name report.h');
  assert.equal(chooseBinaries(two, '/nowhere/else.c').builds.length, 0);
});

test('stripped binaries: a found debug file is used; without one the scan says it is stripped; no -g says so', async (t) => {
  const byId = await fixtureOrSkip(t, 'calls-O0-stripped-buildid');
  const byLink = await fixtureOrSkip(t, 'calls-O0-stripped-debuglink');
  if (!byId || !byLink) return;
  const src = byId.sourceFiles.find((s) => s.endsWith('calls.c'))!;
  const s1 = (await scanBinary(byId.path, { debugDirs: byId.debugDirs, noSystemDebugDir: true }))!;
  assert.equal(s1.debug, 'separate');
  assert.ok(s1.files.has(src), 'the debug file found by build-id names the sources');
  const s2 = (await scanBinary(byLink.path, { noSystemDebugDir: true }))!;
  assert.equal(s2.debug, 'separate');
  assert.equal(s2.debugPath, byLink.debugFile);

  const dir = scratch();
  const alone = join(dir, 'calls');
  copyFileSync(byId.path, alone);
  const s3 = (await scanBinary(alone, { noSystemDebugDir: true }))!;
  assert.equal(s3.debug, 'none');
  assert.match(s3.noDebugReason ?? '', /has no debug info \(built without -g, or stripped\) and no separate debug file was found/);
  const choice = chooseBinaries([s3], src);
  assert.equal(choice.builds.length, 0);
  assert.deepEqual(
    choice.unreadable.map((b) => b.primary.path),
    [alone],
  );

  const plain = join(dir, 'nog');
  execFileSync('gcc', ['-O0', '-o', plain, src]);
  assert.match((await scanBinary(plain, { noSystemDebugDir: true }))!.noDebugReason ?? '', /no debug info \(built without -g/);
});

test("a kernel module's .ko is scanned as one (its sources, read as if linked); a plain .o is not a binary", async (t) => {
  const ko = miniModule(t);
  if (!ko) return;
  const s = (await scanBinary(ko, { noSystemDebugDir: true }))!;
  assert.equal(s.kind, 'kernel-module');
  assert.equal(s.debug, 'self');
  assert.ok(
    [...s.units].some((u) => u.endsWith('/minimod.c')),
    `the module's unit is named: ${[...s.units].join(', ')}`,
  );
  assert.equal(s.error, undefined);
  // The same object before modpost's link, without .modinfo: a relocatable object, not a module.
  const dir = scratch();
  const plain = join(dir, 'plain.c');
  writeFileSync(plain, 'int plain_fn(int a) { return a + 1; }\n');
  execFileSync('gcc', ['-g', '-c', '-o', join(dir, 'plain.ko'), plain]);
  assert.equal(await scanBinary(join(dir, 'plain.ko')), undefined);
});

test('relocatable objects and non-ELF files are not binaries; the cache rescans a rebuilt file', async (t) => {
  const f = await fixtureOrSkip(t, 'calls-O0');
  if (!f) return;
  const dir = scratch();
  const src = f.sourceFiles.find((s) => s.endsWith('calls.c'))!;
  execFileSync('gcc', ['-g', '-c', '-o', join(dir, 'calls.o'), src]);
  assert.equal(await scanBinary(join(dir, 'calls.o')), undefined);
  assert.equal(await scanBinary(src), undefined);

  const bin = join(dir, 'prog');
  const other = join(dir, 'other.c');
  execFileSync('sh', ['-c', `printf 'int other_fn(void){return 1;}\\nint main(void){return other_fn();}\\n' > ${other}`]);
  execFileSync('gcc', ['-g', '-o', bin, other]);
  const cache = new ScanCache(() => ({ noSystemDebugDir: true }));
  const first = (await cache.get(bin))!;
  assert.ok(first.units.has(other));
  assert.equal(await cache.get(bin), first, 'unchanged: the same scan');
  execFileSync('gcc', ['-g', '-o', bin, src]);
  const second = (await cache.get(bin))!;
  assert.notEqual(second, first);
  assert.ok(second.units.has(src) && !second.units.has(other), 'the rebuilt file is scanned again');
});

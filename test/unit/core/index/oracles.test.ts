// Oracles for the index, on every fixture variant: tools independent of our code (nm, readelf, perf
// probe) say what the answers must be; the DWARF-version, compression and stripped variants must agree.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { basename } from 'node:path';
import { buildIndex } from '../../../../src/core/index/build';
import { BinaryIndex } from '../../../../src/core/index/binaryIndex';
import { LINE_END_SEQUENCE, LINE_IS_STMT } from '../../../../src/core/index/model';
import { fixtureOrSkip, type Fixture, type FixtureName } from '../../../helpers/fixtures';

const sh = (cmd: string, args: string[]) => execFileSync(cmd, args, { encoding: 'utf8', maxBuffer: 256 << 20 });

async function indexOf(f: Fixture): Promise<BinaryIndex> {
  return new BinaryIndex(await buildIndex(f.path, { debugDirs: f.debugDirs, debugFile: f.debugFile }));
}

/** PT_LOAD segments from readelf, to compute file offsets independently. */
function loadSegments(bin: string): Array<{ off: bigint; vaddr: bigint; filesz: bigint }> {
  return sh('readelf', ['-lW', bin])
    .split('\n')
    .filter((l) => /^\s+LOAD\s/.test(l))
    .map((l) => {
      const [, off, vaddr, , filesz] = l.trim().split(/\s+/);
      return { off: BigInt(off), vaddr: BigInt(vaddr), filesz: BigInt(filesz) };
    });
}

function nmFunctions(bin: string, file?: string): Map<string, bigint> {
  const m = new Map<string, bigint>();
  for (const l of sh('nm', ['--defined-only', file ?? bin]).split('\n')) {
    const r = /^([0-9a-f]+) [TtWw] (\S+)$/.exec(l);
    if (r && !m.has(r[2])) m.set(r[2], BigInt(`0x${r[1]}`));
  }
  return m;
}

const C_VARIANTS = [
  '',
  '-dwarf2',
  '-dwarf4',
  '-dwarf5',
  '-dwarf64',
  '-nopie',
  '-zlib',
  '-zdebug',
  '-zstd',
  '-stripped-buildid',
  '-stripped-debuglink',
];
const PROBED = ['add_ints', 'many_args', 'account_deposit', 'sum_array', 'classify'];

for (const opt of ['O0', 'O2']) {
  const names = C_VARIANTS.map((v) => `calls-${opt}${v}` as FixtureName);

  test(`calls-${opt}: every variant agrees with nm + PT_LOAD, and DWARF/compression/stripped variants agree with each other`, async (t) => {
    const answers = new Map<string, string>();
    for (const name of names) {
      const f = await fixtureOrSkip(t, name);
      if (!f) return;
      const idx = await indexOf(f);
      assert.equal(idx.data.symbolsOnly, false, `${name}: DWARF found`);
      const segs = loadSegments(f.path);
      // A stripped executable keeps .symtab? No: strip --strip-debug keeps it, and nm reads the debug file otherwise.
      const nm = nmFunctions(f.path, f.stripped && !sh('readelf', ['-SW', f.path]).includes('.symtab') ? f.debugFile : undefined);
      let checked = 0;
      for (const fn of idx.functions()) {
        if (fn.address === undefined || fn.dieOffset < 0) continue;
        const sym = nm.get(fn.linkageName ?? fn.name);
        if (sym === undefined) continue;
        assert.equal(fn.address, sym, `${name}: ${fn.name} entry address equals nm`);
        const seg = segs.find((s) => sym >= s.vaddr && sym < s.vaddr + s.filesz)!;
        assert.equal(fn.fileOffset, sym - seg.vaddr + seg.off, `${name}: ${fn.name} file offset by the PT_LOAD formula`);
        checked++;
      }
      assert.ok(checked >= PROBED.length, `${name}: checked ${checked} functions`);
      if (name.endsWith('-nopie')) continue;
      // DW_TAG_restrict_type only exists from DWARF 3 on: gcc's DWARF 2 output has no `restrict` to report.
      const summary = JSON.stringify(
        idx
          .functions()
          .filter((x) => x.dieOffset >= 0)
          .map((x) => [x.name, x.file, x.line, String(x.address), x.params])
          .sort(),
      ).replace(/ restrict\b/g, '');
      answers.set(name, summary);
    }
    const base = answers.get(`calls-${opt}`)!;
    for (const [name, s] of answers) assert.equal(s, base, `${name} gives the same functions, lines and parameters as calls-${opt}`);
  });

  test(`calls-${opt}: file offsets equal perf probe -D, parameters and types equal perf probe -V`, async (t) => {
    const f = await fixtureOrSkip(t, `calls-${opt}` as FixtureName);
    if (!f) return;
    const idx = await indexOf(f);
    for (const name of PROBED) {
      const fn = idx.function(name)[0];
      assert.ok(fn, `${name} indexed`);
      const def = sh('perf', ['probe', '-x', f.path, '-D', `${name}+0`]);
      const off = /:0x([0-9a-f]+)/.exec(def)?.[1];
      assert.equal(fn.fileOffset, BigInt(`0x${off}`), `${name}: perf probe -D offset (${def.trim()})`);
      const vars = sh('perf', ['probe', '-x', f.path, '-V', name]);
      const perfVars = new Map<string, string>();
      for (const l of vars.split('\n')) {
        const m = /^\t\t(.+?)\t(\w+)$/.exec(l);
        if (m) perfVars.set(m[2], m[1]);
      }
      // perf prints types without qualifiers and with '*' attached ("char*"); compare the same way.
      const norm = (s: string) => s.replace(/\b(const|volatile|restrict)\b/g, '').replace(/\s+/g, '');
      for (const p of fn.params) {
        if (p.location.startsWith('unavailable')) continue; // perf omits what it cannot fetch (floats)
        assert.ok(perfVars.has(p.name), `${name}: perf lists parameter ${p.name} (${vars})`);
        assert.equal(norm(p.type), norm(perfVars.get(p.name)!), `${name}: type of ${p.name}`);
      }
    }
  });

  test(`calls-${opt}: line rows equal readelf's is_stmt rows`, async (t) => {
    const f = await fixtureOrSkip(t, `calls-${opt}` as FixtureName);
    if (!f) return;
    const idx = await indexOf(f);
    const expected = new Set<string>();
    for (const l of sh('readelf', ['--debug-dump=decodedline', f.path]).split('\n')) {
      const m = /^(\S+)\s+(\d+)\s+(0x[0-9a-f]+)(?:\s+\d+)?\s+x\s*$/.exec(l);
      if (m) expected.add(`${m[1]}:${m[2]}@${BigInt(m[3]).toString(16)}`);
    }
    const got = new Set<string>();
    const { address, line, file, flags } = idx.data.lines;
    for (let i = 0; i < address.length; i++) {
      if (flags[i] & LINE_IS_STMT && !(flags[i] & LINE_END_SEQUENCE))
        got.add(`${basename(idx.data.files[file[i]])}:${line[i]}@${address[i].toString(16)}`);
    }
    assert.ok(expected.size > 20, `readelf gave ${expected.size} rows`);
    assert.deepEqual([...got].sort(), [...expected].sort());
  });
}

test('USDT probes equal readelf -n, semaphore included', async (t) => {
  const f = await fixtureOrSkip(t, 'usdt');
  if (!f) return;
  const idx = await indexOf(f);
  const notes = sh('readelf', ['-n', f.path]);
  const expected = [
    ...notes.matchAll(
      /Provider: (\S+)\s+Name: (\S+)\s+Location: (0x[0-9a-f]+), Base: 0x[0-9a-f]+, Semaphore: (0x[0-9a-f]+)\s+Arguments: ([^\n]*)/g,
    ),
  ].map((m) => ({ provider: m[1], name: m[2], address: BigInt(m[3]), semaphore: BigInt(m[4]), args: m[5].trim() }));
  assert.ok(expected.length >= 2 && expected.some((e) => e.semaphore !== 0n), 'fixture has probes, one with a semaphore');
  const got = idx.usdtProbes().map((p) => ({
    provider: p.provider,
    name: p.name,
    address: p.address,
    semaphore: p.semaphore ?? 0n,
    args: p.args.map((a) => `${a.signed ? '-' : ''}${a.size}@${a.operand}`).join(' '),
  }));
  assert.deepEqual(got, expected);
  const segs = loadSegments(f.path);
  for (const p of idx.usdtProbes().filter((x) => x.semaphore !== undefined)) {
    const seg = segs.find((s) => p.semaphore! >= s.vaddr && p.semaphore! < s.vaddr + s.filesz)!;
    assert.equal(p.semaphoreFileOffset, p.semaphore! - seg.vaddr + seg.off, 'semaphore file offset by the PT_LOAD formula');
  }
});

test('C++: methods and template instances found by readable names', async (t) => {
  for (const name of ['cpp-O0', 'cpp-O2'] as const) {
    const f = await fixtureOrSkip(t, name);
    if (!f) return;
    const idx = await indexOf(f);
    const names = idx.functions().map((x) => x.name);
    for (const want of ['probelens::shapes::Counter::add', 'probelens::shapes::twice<int>', 'probelens::text::shout']) {
      assert.ok(names.includes(want), `${name}: ${want} in ${names.filter((n) => n.includes('probelens')).join(', ')}`);
      const fn = idx.function(want)[0];
      assert.equal(fn.fileOffset !== undefined && fn.probeable, true, `${want} probe-able`);
      assert.ok(fn.linkageName?.startsWith('_Z'), `${want} keeps its mangled linkage name`);
    }
  }
});

test('Rust: functions by demangled path', async (t) => {
  const f = await fixtureOrSkip(t, 'rust-O0');
  if (!f) return;
  const idx = await indexOf(f);
  const own = idx.functions().filter((x) => x.file?.startsWith(f.srcDir));
  assert.ok(own.length >= 3, `own functions: ${own.map((x) => x.name).join(', ')}`);
  for (const fn of own) assert.doesNotMatch(fn.name, /^_[RZ]|::h[0-9a-f]{16}$/, 'readable name');
});

test('Go: version and register ABI detected; methods named pkg.(*T).Method; strings take two registers', async (t) => {
  const f = await fixtureOrSkip(t, 'go');
  if (!f) return;
  const idx = await indexOf(f);
  const goVersion = sh('go', ['version']).match(/go(\d+\.\d+(\.\d+)?)/)![1];
  assert.equal(idx.data.go?.version.replace(/^go/, ''), goVersion);
  assert.equal(idx.data.go?.regabi, true);
  const deposit = idx.function('main.(*Account).Deposit')[0];
  assert.ok(deposit?.probeable, 'method found');
  assert.deepEqual(
    deposit.params.map((p) => p.location),
    ['%ax', '%bx'],
  );
  const greet = idx.function('main.greet')[0];
  assert.equal(greet.params[0].type, 'string');
  assert.equal(greet.params[0].location, '%ax,%bx');
});

test('AArch64: offsets by the PT_LOAD formula, parameters in x registers', async (t) => {
  for (const name of ['calls-aarch64-O0', 'calls-aarch64-O2'] as const) {
    const f = await fixtureOrSkip(t, name);
    if (!f) return;
    const idx = await indexOf(f);
    assert.equal(idx.arch, 'aarch64');
    const nm = nmFunctions(f.path);
    const segs = loadSegments(f.path);
    const fn = idx.function('add_ints')[0];
    const sym = nm.get('add_ints')!;
    assert.equal(fn.address, sym);
    const seg = segs.find((s) => sym >= s.vaddr && sym < s.vaddr + s.filesz)!;
    assert.equal(fn.fileOffset, sym - seg.vaddr + seg.off);
    assert.deepEqual(
      fn.params.map((p) => p.location),
      ['%x0', '%x1'],
    );
  }
});

test('shared library and its user: functions of each found where they are', async (t) => {
  const lib = await fixtureOrSkip(t, 'libcalls-O0');
  const user = await fixtureOrSkip(t, 'uselib-O0');
  if (!lib || !user) return;
  const li = await indexOf(lib);
  assert.equal(li.data.elfType, 'DYN');
  const nm = nmFunctions(lib.path);
  const exported = li.functions().filter((x) => x.external && x.dieOffset >= 0 && x.address !== undefined);
  assert.ok(exported.length >= 2);
  for (const fn of exported) assert.equal(fn.address, nm.get(fn.name));
  const ui = await indexOf(user);
  assert.ok(ui.function('main')[0]?.probeable);
});

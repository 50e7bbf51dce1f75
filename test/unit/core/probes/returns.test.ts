import { test, type TestContext } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { openBinary } from '../../../../src/core/binary';
import { findReturnSites, requireReturnSites, ReturnSitesError, type ReturnArch } from '../../../../src/core/probes/returns';
import { fixtureOrSkip, type FixtureName } from '../../../helpers/fixtures';
import { missing } from '../../../helpers/require';

const BASE = 0x401000n;
const bytes = (...b: number[]) => new Uint8Array(b);
const words = (...w: number[]) => {
  const out = new Uint8Array(w.length * 4);
  w.forEach((v, i) => new DataView(out.buffer).setUint32(i * 4, v, true));
  return out;
};

// movabs $0x11c3c3c3c3c3c311, %rax: six 0xc3 bytes inside one instruction.
const MOVABS_C3 = [0x48, 0xb8, 0x11, 0xc3, 0xc3, 0xc3, 0xc3, 0xc3, 0xc3, 0x11];

test('x86-64: a 0xc3 byte inside an immediate is not a RET; the RET after it is', () => {
  assert.deepEqual(findReturnSites('x86_64', bytes(...MOVABS_C3, 0xc3), BASE), { returns: [BASE + 10n], tailJumps: [] });
});

test('x86-64: RET imm16, `repz ret` and `bnd ret` (reported at their prefix) are returns', () => {
  const code = bytes(
    0x85,
    0xff, //             test %edi,%edi
    0x74,
    0x03, //             je +3 (inside)
    0xc2,
    0x08,
    0x00, //       ret $8
    0xf3,
    0xc3, //             repz ret
    0xf2,
    0xc3, //             bnd ret
  );
  assert.deepEqual(findReturnSites('x86_64', code, BASE), { returns: [BASE + 4n, BASE + 7n, BASE + 9n], tailJumps: [] });
  assert.deepEqual(findReturnSites('x86_64', new Uint8Array(0), BASE), { returns: [], tailJumps: [] });
});

test('x86-64: a function ending in a jmp elsewhere has tail jumps, no returns, and is refused with the next step', () => {
  const code = bytes(
    0x48,
    0x89,
    0xf8, //             mov %rdi,%rax
    0x75,
    0x05, //                   jne +5 (inside: to the jmp *%rax)
    0xe9,
    0x00,
    0x10,
    0x00,
    0x00, // jmp +0x1000 (outside)
    0xff,
    0xe0, //                   jmp *%rax
  );
  const scan = findReturnSites('x86_64', code, BASE);
  assert.deepEqual(scan, { returns: [], tailJumps: [BASE + 5n, BASE + 10n] });
  assert.throws(
    () => requireReturnSites('main.tail', 'x86_64', code, BASE),
    (e: unknown) => {
      assert.ok(e instanceof ReturnSitesError);
      assert.equal(e.reason, 'no-return');
      assert.match(e.message, /main\.tail/);
      assert.match(e.message, /0x401005, 0x40100a/);
      assert.match(e.message, /tail call/);
      return true;
    },
  );
});

test('x86-64: int3, nop and zero padding after the last instruction end the scan cleanly', () => {
  // The lone trailing zero is an `add` cut short by the end of the function, which is still padding.
  for (const pad of [
    [0xcc, 0xcc, 0xcc],
    [0x90, 0x66, 0x90],
    [0x00, 0x00, 0x00],
    [0xcc, 0x00, 0x90, 0xcc, 0x00],
  ]) {
    assert.deepEqual(findReturnSites('x86_64', bytes(...MOVABS_C3, 0xc3, ...pad), BASE), { returns: [BASE + 10n], tailJumps: [] });
  }
});

test('x86-64: an invalid instruction mid-function is reported at its address and refused', () => {
  const code = bytes(0xc3, 0x06, 0x90, 0xc3); // ret; push %es (not an x86-64 instruction); nop; ret
  const scan = findReturnSites('x86_64', code, BASE);
  assert.deepEqual(scan.undecodable, { address: BASE + 1n, reason: 'invalid x86-64 instruction' });
  assert.throws(
    () => requireReturnSites('f', 'x86_64', code, BASE),
    (e: unknown) => e instanceof ReturnSitesError && e.reason === 'undecodable' && /0x401001/.test(e.message),
  );
  // An instruction cut off by the function's end, with something other than padding in it.
  const cut = findReturnSites('x86_64', bytes(0xc3, 0x48, 0xb8, 0x11, 0x22), BASE);
  assert.deepEqual(cut.undecodable, { address: BASE + 1n, reason: 'instruction runs past the end of the function' });
});

test('AArch64: RET to any register, RETAA/RETAB; B outside, BR and BRAAZ are tail jumps; B inside is not', () => {
  const code = words(
    0xd65f03c0, // ret
    0x54000040, // b.eq +8 (inside)
    0xd65f0020, // ret x1
    0x17ffffff, // b -4 (inside)
    0xd65f0bff, // retaa
    0xd65f0fff, // retab
    0x14000400, // b +0x1000 (outside)
    0xd61f0200, // br x16
    0xd61f0a1f, // braaz x16
    0x00000000, // padding (udf #0)
  );
  assert.deepEqual(findReturnSites('aarch64', code, BASE), {
    returns: [BASE, BASE + 8n, BASE + 16n, BASE + 20n],
    tailJumps: [BASE + 24n, BASE + 28n, BASE + 32n],
  });
  // A conditional branch out of the function (cbz to a shared epilogue elsewhere) is an exit too.
  assert.deepEqual(findReturnSites('aarch64', words(0xb4fff800, 0xd65f03c0), BASE).tailJumps, [BASE]); // cbz x0, -0x100
});

// --- against objdump, on the fixtures ------------------------------------------------------------------------

const OBJDUMP: Record<ReturnArch, string> = { x86_64: 'objdump', aarch64: 'aarch64-linux-gnu-objdump' };
const APT: Record<ReturnArch, string> = { x86_64: 'binutils', aarch64: 'binutils-aarch64-linux-gnu' };

/** Addresses objdump disassembles as ret/retq/repz ret/bnd ret/retaa…, by its own linear sweep from each symbol. */
function objdumpReturns(t: TestContext, arch: ReturnArch, path: string): Set<bigint> | undefined {
  let out: string;
  try {
    out = execFileSync(OBJDUMP[arch], ['-d', '--no-show-raw-insn', path], { maxBuffer: 1 << 28, encoding: 'utf8' });
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code !== 'ENOENT') throw e;
    missing(t, `${OBJDUMP[arch]} is not installed; install it with \`apt-get install -y ${APT[arch]}\``);
    return undefined;
  }
  const found = new Set<bigint>();
  for (const m of out.matchAll(/^\s*([0-9a-f]+):\s+(?:(?:rep[a-z]*|bnd|notrack)\s+)?ret[a-z]*\b/gm)) found.add(BigInt('0x' + m[1]));
  return found;
}

async function checkAgainstObjdump(t: TestContext, name: FixtureName, arch: ReturnArch, expect: Record<string, number>) {
  const f = await fixtureOrSkip(t, name);
  if (!f) return;
  const oracle = objdumpReturns(t, arch, f.path);
  if (!oracle) return;
  const image = await openBinary(f.path);
  const sized = image.functionSymbols().groups.filter((g) => g.size > 0n);
  assert.ok(sized.length > 5);
  const ours = new Set<bigint>();
  const byName = new Map<string, bigint[]>();
  for (const g of sized) {
    const code = image.functionBytes(g);
    const scan = findReturnSites(arch, code, g.address);
    const names = g.symbols.map((s) => s.name).join('/');
    assert.equal(
      scan.undecodable,
      undefined,
      `${names}: ${JSON.stringify(scan.undecodable, (_k, v) => (typeof v === 'bigint' ? `0x${v.toString(16)}` : v))}`,
    );
    for (const r of scan.returns) ours.add(r);
    for (const s of g.symbols) byName.set(s.name, scan.returns);
    // Every return objdump sees inside this function, and nothing else.
    const end = g.address + g.size;
    const want = [...oracle].filter((a) => a >= g.address && a < end).sort((a, b) => (a < b ? -1 : 1));
    assert.deepEqual(scan.returns, want, `${names}: returns differ from ${OBJDUMP[arch]}`);
  }
  assert.ok(ours.size > 0);
  for (const [fn, count] of Object.entries(expect)) {
    assert.equal(byName.get(fn)?.length, count, `${fn} has ${count} RETs`);
  }
  return { image, byName, sized };
}

test('x86-64 C -O2 fixture: every function matches objdump; classify has several RETs despite its 0xc3 immediate', async (t) => {
  const r = await checkAgainstObjdump(t, 'calls-O2', 'x86_64', {});
  if (!r) return;
  const classify = r.sized.find((g) => g.symbols.some((s) => s.name === 'classify'))!;
  const rets = r.byName.get('classify')!;
  assert.ok(rets.length >= 2, 'classify returns on several paths at -O2');
  // A byte scan would see more: the 0x11c3c3c3c3c3c311 constant puts 0xc3 bytes where there is no RET.
  const c3 = [...r.image.functionBytes(classify)].filter((b) => b === 0xc3).length;
  assert.ok(c3 >= rets.length + 6, `classify holds ${c3} 0xc3 bytes for ${rets.length} RETs`);
});

test('x86-64 Go fixture: every function (all ~1,400) scans without error and matches objdump; main.classify has 4 RETs', async (t) => {
  const r = await checkAgainstObjdump(t, 'go', 'x86_64', { 'main.classify': 4 });
  if (!r) return;
  const classify = r.sized.find((g) => g.symbols.some((s) => s.name === 'main.classify'))!;
  assert.deepEqual(
    requireReturnSites('main.classify', 'x86_64', r.image.functionBytes(classify), classify.address),
    r.byName.get('main.classify'),
  );
});

test('AArch64 C -O2 fixture: every function matches aarch64-linux-gnu-objdump', async (t) => {
  const r = await checkAgainstObjdump(t, 'calls-aarch64-O2', 'aarch64', {});
  if (r) assert.ok(r.byName.get('classify')!.length >= 1);
});

test('AArch64 Go fixture: every function matches aarch64-linux-gnu-objdump; main.classify has several RETs', async (t) => {
  const r = await checkAgainstObjdump(t, 'go-arm64', 'aarch64', {});
  if (r) assert.ok(r.byName.get('main.classify')!.length >= 2);
});

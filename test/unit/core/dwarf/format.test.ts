import assert from 'node:assert/strict';
import { test } from 'node:test';
import { DwarfFormatError, openDwarf } from '../../../../src/core/dwarf/index';
import { describeLocation } from '../../../../src/core/dwarf/expr';
import {
  addressBig,
  addressNumber,
  dwarfReader,
  foldAddress,
  isDeadAddress,
  isTombstone,
  stringAt,
} from '../../../../src/core/dwarf/format';
import type { FixtureName } from '../../../helpers/fixtures';
import { fixtureOrSkip } from '../../../helpers/fixtures';
import { sectionsOf } from './objcopySections';

test('a DWARF reader throws DwarfFormatError naming the section and the offset of the failed read', () => {
  const r = dwarfReader(new Uint8Array([1, 2, 3]), '.debug_test', true);
  r.u16();
  assert.throws(
    () => r.u16(),
    (e) =>
      e instanceof DwarfFormatError &&
      e.section === '.debug_test' &&
      e.offset === 2 &&
      /^malformed DWARF in \.debug_test at offset 0x2: needs 2 bytes but only 1 remain/.test(e.message),
  );
});

test('tombstones and dead addresses: -1/-2, their 32-bit forms, and 0 outside relocatable objects', () => {
  assert.equal(isTombstone(2 ** 64 - 2), true);
  assert.equal(isTombstone(0x7fff_ffff_f000), false);
  assert.equal(isDeadAddress(0, 8, false), true);
  assert.equal(isDeadAddress(0, 8, true), false);
  assert.equal(isDeadAddress(0xfffffffe, 4, false), true);
  assert.equal(isDeadAddress(0xfffffffe, 8, false), false);
});

test('string sections: a string at an offset, memoised; out-of-range and unterminated ones are DwarfFormatError', () => {
  const strs = new TextEncoder().encode('int\0p\0tail');
  assert.equal(stringAt(strs, '.debug_str', 0), 'int');
  assert.equal(stringAt(strs, '.debug_str', 4), 'p');
  assert.equal(stringAt(strs, '.debug_str', 4), 'p');
  assert.throws(
    () => stringAt(strs, '.debug_str', 99),
    (e) => e instanceof DwarfFormatError && /string offset out of range/.test(e.message),
  );
  assert.throws(
    () => stringAt(strs, '.debug_str', 6),
    (e) => e instanceof DwarfFormatError && /unterminated string/.test(e.message),
  );
  assert.throws(() => stringAt(undefined, '.debug_line_str', 0), DwarfFormatError);
});

// Deterministic PRNG so a failure reproduces from its seed.
function rng(seed: number): () => number {
  return () => {
    seed = (seed * 1103515245 + 12345) >>> 0;
    return seed / 2 ** 32;
  };
}

const TARGETS = [
  '.debug_info',
  '.debug_abbrev',
  '.debug_line',
  '.debug_str',
  '.debug_line_str',
  '.debug_rnglists',
  '.debug_loclists',
  '.debug_ranges',
  '.debug_loc',
  '.debug_addr',
  '.debug_str_offsets',
];

test('hostile input: truncated and corrupted .debug_* sections yield only DwarfFormatError, never a crash or hang', async (t) => {
  const bases: Array<ReturnType<typeof sectionsOf>> = [];
  for (const name of ['calls-O2', 'calls-O2-dwarf4', 'calls-O0-dwarf2', 'calls-O2-dwarf64', 'cpp-O2'] as FixtureName[]) {
    const f = await fixtureOrSkip(t, name);
    if (!f) return;
    bases.push(sectionsOf(f.path));
  }
  const rand = rng(0x5eed);
  const deadline = Date.now() + 20_000; // a bound on total work, not a timing assertion
  let runs = 0,
    typed = 0;
  for (; runs < 1500 && Date.now() < deadline; runs++) {
    const base = bases[runs % bases.length];
    const present = TARGETS.filter((n) => base.sections.has(n));
    const victim = present[Math.floor(rand() * present.length)];
    const orig = base.sections.get(victim)!;
    let mutated: Uint8Array;
    const mode = rand();
    if (mode < 0.3) mutated = orig.subarray(0, Math.floor(rand() * orig.length));
    else {
      mutated = orig.slice();
      const flips = 1 + Math.floor(rand() * 8);
      for (let i = 0; i < flips; i++) {
        const at = Math.floor(rand() * mutated.length);
        mutated[at] = mode < 0.7 ? mutated[at] ^ (1 << Math.floor(rand() * 8)) : 0xff;
      }
    }
    const src = { ...base, section: (n: string) => (n === victim ? mutated : base.sections.get(n)) };
    try {
      const dw = openDwarf(src, 'x86_64');
      for (const fn of dw.functions()) {
        for (const p of fn.params) dw.typeOf(p.typeOffset);
        if (fn.entryPc !== undefined) {
          for (const v of dw.variablesAt(fn.dieOffset, fn.entryPc)) dw.typeOf(v.typeOffset);
          dw.frameBase(fn);
          dw.lineTableFor(fn.entryPc)?.afterPrologue(fn.ranges[0], fn.ranges[1]);
        }
      }
      for (const lt of dw.lineTables()) for (const r of lt.stmtRows()) void r;
    } catch (e) {
      if (!(e instanceof DwarfFormatError)) {
        assert.fail(`run ${runs} (${victim}, mode ${mode.toFixed(2)}): ${(e as Error).stack}`);
      }
      assert.match(e.message, /^malformed DWARF in \.debug_\w+ at offset 0x[0-9a-f]+: /);
      typed++;
    }
  }
  t.diagnostic(`${runs} mutated inputs, ${typed} rejected with DwarfFormatError`);
  assert.ok(runs >= 200, `only ${runs} runs within the bound`);
  assert.ok(typed > runs / 10, `corruption was detected in ${typed}/${runs} runs`);
});

test('hostile expressions: deeply nested DW_OP_entry_value and unknown ops end in a verdict or DwarfFormatError', () => {
  // 3 000 nested entry values (each level [0xa3, len, …]): far past any real expression.
  let inner: number[] = [0x55];
  for (let i = 0; i < 3000; i++) inner = [0xa3, ...uleb(inner.length), ...inner];
  const buf = Uint8Array.from(inner);
  const unit = { section: '.debug_info', dw: { le: true }, enc: { addrSize: 8, is64: false } } as unknown as Parameters<
    typeof describeLocation
  >[0];
  const deep = describeLocation(unit, { buf, start: 0, len: buf.length }, 'x86_64');
  let d = deep,
    levels = 0;
  while (d.kind === 'entry-value') {
    d = d.inner;
    levels++;
  }
  assert.deepEqual(d, { kind: 'unsupported', why: 'nested DW_OP_entry_value' });
  assert.ok(levels <= 9);
  assert.throws(() => describeLocation(unit, { buf: Uint8Array.from([0x01]), start: 0, len: 1 }, 'x86_64'), DwarfFormatError);
  assert.throws(() => describeLocation(unit, { buf: Uint8Array.from([0x91]), start: 0, len: 1 }, 'x86_64'), DwarfFormatError);
});

function uleb(v: number): number[] {
  const out: number[] = [];
  do {
    let b = v & 0x7f;
    v = Math.floor(v / 128);
    if (v) b |= 0x80;
    out.push(b);
  } while (v);
  return out;
}

test('a kernel address (above 2^53) is folded exactly into a number and back; the -1/-2 tombstones stay dead', () => {
  for (const a of [0xffffffff81000000n, 0xffffffff8123456fn, 0xffffffffa0001234n, 0xffffffffffffffefn]) {
    const n = foldAddress(Number(a >> 32n), Number(a & 0xffffffffn));
    assert.ok(Number.isSafeInteger(n), `${a.toString(16)} folds to an exact number`);
    assert.equal(addressBig(n), a);
    assert.equal(addressNumber(a), n);
    assert.equal(isDeadAddress(n, 8, false), false);
  }
  // Order and distances are kept: 0xffffffff81000000 + 0x25 is 0x25 above it.
  assert.equal(addressNumber(0xffffffff81000025n) - addressNumber(0xffffffff81000000n), 0x25);
  for (const dead of [0xffffffffffffffffn, 0xfffffffffffffffen])
    assert.equal(isDeadAddress(foldAddress(Number(dead >> 32n), Number(dead & 0xffffffffn)), 8, false), true);
  // A user-space address is itself.
  assert.equal(foldAddress(0x5555, 0x1234), 0x555500001234);
  assert.equal(addressBig(0x555500001234), 0x555500001234n);
  assert.equal(addressNumber(0x555500001234n), 0x555500001234);
});

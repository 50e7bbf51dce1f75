// Rebuilds reuse what did not change: a program of three C files built as make would (each file to an object, then
// linked), indexed, one file edited and the program rebuilt, indexed again from the unit cache: the index is the
// same, dump for dump, as a build that reads no cache, and the units that did not change really were reused (a
// count the build reports, so reuse that silently does nothing fails). A damaged unit entry is indexed again.
import assert from 'node:assert/strict';
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { AUX_SECTIONS, LIST_SECTIONS, SHIFT_PREFIX, UNIT_SECTIONS } from '../../../../src/core/index/unitReuse';
import { readUnitEntry, unitCacheDir } from '../../../../src/core/index/unitCache';
import { sectionHeaders } from '../../../helpers/elfPatch';
import { loadIndex } from '../../../../src/core/index/load';
import { indexDump } from '../../../helpers/indexDump';
import { missing } from '../../../helpers/require';
import { have, run } from '../binary/build';
import { build, cold, reusing } from './unitBuilds';

// Parameters in registers and on location lists, an inlined static, a loop (ranges), strings, a struct.
const MAIN_C = `#include <stdio.h>
#include <stdlib.h>
long scale(long v, int by);
int count_words(const char *s);
int main(int argc, char **argv) {
  long total = 0;
  for (int i = 1; i < argc; i++) total += scale(count_words(argv[i]), i);
  printf("%ld\\n", total);
  return total > 1000 ? EXIT_FAILURE : EXIT_SUCCESS;
}
`;
const WORDS_C = `#include <ctype.h>
static inline int is_sep(char c) { return c == ',' || isspace((unsigned char)c); }
int count_words(const char *s) {
  int n = 0, in = 0;
  for (; *s; s++) {
    if (is_sep(*s)) in = 0;
    else if (!in) { in = 1; n++; }
  }
  return n;
}
`;
const SCALE_C = `struct acc { long sum; int steps; };
static long __attribute__((noinline)) step(struct acc *a, long v) { a->sum += v * 3; a->steps++; return a->sum; }
long scale(long v, int by) {
  struct acc a = { 0, 0 };
  for (int i = 0; i < by; i++) step(&a, v + i);
  return a.sum / (a.steps ? a.steps : 1);
}
`;

test('an index from a partly reused unit cache is the cold index, and the unchanged units are the ones reused', async (t) => {
  if (!have('gcc')) return missing(t, 'gcc (builds the program)');
  const dir = mkdtempSync(join(tmpdir(), 'probelens-unit-reuse-'));
  const cacheDir = join(dir, 'cache');
  try {
    const files = { 'main.c': MAIN_C, 'words.c': WORDS_C, 'scale.c': SCALE_C };
    let bin = build(dir, files);
    const first = await reusing(bin, cacheDir);
    assert.equal(first.dump, await cold(bin), 'first build: the same index');
    assert.ok(first.stats.units >= 3, `${first.stats.units} units: one per file at least`);
    assert.deepEqual(
      [first.stats.reused, first.stats.indexed, first.stats.stored],
      [0, first.stats.units, first.stats.units],
      'first build: every unit indexed and stored',
    );
    const units = first.stats.units;

    // Touched and relinked: the same objects, every unit reused.
    bin = build(dir, files);
    const same = await reusing(bin, cacheDir);
    assert.equal(same.dump, await cold(bin), 'relinked: the same index as a cold build');
    assert.equal(same.stats.reused, units, 'nothing changed: every unit reused');

    // The middle file edited without changing its code (a comment moves its lines): only its unit is indexed.
    bin = build(dir, { ...files, 'words.c': `/* counts words */\n${WORDS_C}` });
    const moved = await reusing(bin, cacheDir);
    const movedCold = await cold(bin);
    assert.notEqual(
      movedCold.split('\n').slice(1).join('\n'),
      first.dump.split('\n').slice(1).join('\n'),
      'the edit changed the index (its lines)',
    );
    assert.equal(moved.dump, movedCold, 'a comment added: the same index as a cold build');
    assert.deepEqual([moved.stats.reused, moved.stats.indexed], [units - 1, 1], 'a comment added: one unit indexed');

    // A line of code added to the last file: its code grows.
    bin = build(dir, {
      ...files,
      'scale.c': SCALE_C.replace('struct acc a = { 0, 0 };', 'struct acc a = { 0, 0 };\n  if (by > 64) by = 64;'),
    });
    const grown = await reusing(bin, cacheDir);
    assert.equal(grown.dump, await cold(bin), 'a line of code added: the same index as a cold build');
    // The units before it in link order are unchanged (their code did not move): reused; its own is indexed.
    assert.deepEqual([grown.stats.reused, grown.stats.indexed], [units - 1, 1], 'a line of code added to the last file: one unit indexed');

    // A line of code added to the first file: every later unit's code moves, and each is indexed again.
    bin = build(dir, { ...files, 'main.c': MAIN_C.replace('long total = 0;', 'long total = argc > 9 ? 1 : 0;') });
    const first2 = await reusing(bin, cacheDir);
    assert.equal(first2.dump, await cold(bin), 'a line of code added to the first file: the same index as a cold build');
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test('units that only moved in .debug_info, .debug_abbrev or .debug_line (an earlier unit grew) are reused, their offsets moved with them', async (t) => {
  if (!have('gcc')) return missing(t, 'gcc (builds the program)');
  const dir = mkdtempSync(join(tmpdir(), 'probelens-unit-moved-'));
  const cacheDir = join(dir, 'cache');
  try {
    // main() declared at line 250: ten lines more take its DW_AT_decl_line past 255, from a one-byte form to a
    // two-byte one, so the first unit's DIEs and abbreviations grow while its code, strings and line program keep
    // their sizes; the two units linked after it move.
    const pad = (n: number) => `${'/* - */\n'.repeat(n)}`;
    const files = { 'main.c': `${pad(245)}${MAIN_C}`, 'words.c': WORDS_C, 'scale.c': SCALE_C };
    let bin = build(dir, files);
    const first = await reusing(bin, cacheDir);
    const offsets = (dump: string) => [...dump.matchAll(/"unitOffset":(\d+)/g)].map((m) => Number(m[1]));
    bin = build(dir, { ...files, 'main.c': `${pad(255)}${MAIN_C}` });
    const moved = await reusing(bin, cacheDir);
    assert.equal(moved.dump, await cold(bin), 'the same index as a cold build');
    assert.ok(Math.max(...offsets(moved.dump)) > Math.max(...offsets(first.dump)), 'the last unit moved in .debug_info');
    assert.deepEqual([moved.stats.reused, moved.stats.indexed], [first.stats.units - 1, 1], 'the units that moved are reused');

    // main() declared past line 8191: the first unit's line program grows (its line advance takes three bytes of
    // LEB128, not two) while its DIEs (a two-byte DW_AT_decl_line either way) and code keep their sizes; the later
    // units' DW_AT_stmt_list values move, their line programs do not.
    bin = build(dir, { ...files, 'main.c': `${pad(8300)}${MAIN_C}` });
    const lines = await reusing(bin, cacheDir);
    assert.equal(lines.dump, await cold(bin), 'line programs moved: the same index as a cold build');
    assert.deepEqual(
      [lines.stats.reused, lines.stats.indexed],
      [first.stats.units - 1, 1],
      'the units whose line programs moved are reused',
    );
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test('a damaged unit entry is never used: its unit is indexed again and the entry rewritten', async (t) => {
  if (!have('gcc')) return missing(t, 'gcc (builds the program)');
  const dir = mkdtempSync(join(tmpdir(), 'probelens-unit-damaged-'));
  const cacheDir = join(dir, 'cache');
  try {
    const bin = build(dir, { 'main.c': MAIN_C, 'words.c': WORDS_C, 'scale.c': SCALE_C });
    const first = await reusing(bin, cacheDir);
    const units = join(unitCacheDir(cacheDir));
    // Each unit's entry, beside the pointers stored under shift forms (unitShift.ts).
    const entries = readdirSync(units).filter((n) => n.endsWith('.unit') && !n.startsWith(SHIFT_PREFIX));
    assert.equal(entries.length, first.stats.units);
    for (const damage of ['flip', 'truncate', 'empty'] as const) {
      const victim = join(units, entries[1]);
      const b = readFileSync(victim);
      if (damage === 'flip') b[b.length - 5] ^= 0x40;
      writeFileSync(victim, damage === 'truncate' ? b.subarray(0, b.length >> 1) : damage === 'empty' ? Buffer.alloc(0) : b);
      const again = await reusing(bin, cacheDir);
      assert.equal(again.dump, first.dump, `${damage}: the same index`);
      assert.deepEqual(
        [again.stats.reused, again.stats.indexed, again.stats.stored],
        [first.stats.units - 1, 1, 1],
        `${damage}: that unit alone indexed`,
      );
      assert.equal((await reusing(bin, cacheDir)).stats.reused, first.stats.units, `${damage}: the rewritten entry is used`);
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test('a unit whose DWARF is unchanged but whose symbols changed is indexed again (its symbol look-ups are checked)', async (t) => {
  if (!have('gcc') || !have('objcopy') || !have('nm')) return missing(t, 'gcc, objcopy and nm (build and relabel the program)');
  const dir = mkdtempSync(join(tmpdir(), 'probelens-unit-symbols-'));
  const cacheDir = join(dir, 'cache');
  try {
    const bin = build(dir, { 'main.c': MAIN_C, 'words.c': WORDS_C, 'scale.c': SCALE_C });
    const first = await reusing(bin, cacheDir);
    // The same DWARF, one more symbol at the entry of scale(): a name that says what kind of copy the code is.
    const at = BigInt(`0x${/^([0-9a-f]+) T scale$/m.exec(run('nm', [bin]))![1]}`);
    const text = /\.text\s+PROGBITS\s+([0-9a-f]+)/.exec(run('readelf', ['-SW', bin]))![1];
    const relabelled = join(dir, 'relabelled');
    run('objcopy', ['--add-symbol', `scale.part.0=.text:0x${(at - BigInt(`0x${text}`)).toString(16)},function,local`, bin, relabelled]);
    assert.match(run('nm', [relabelled]), /scale\.part\.0/);
    const again = await reusing(relabelled, cacheDir);
    assert.equal(again.dump, await cold(relabelled), 'the same index as a cold build');
    assert.deepEqual([again.stats.reused, again.stats.indexed], [first.stats.units - 1, 1], "scale.c's unit alone is indexed again");
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test('a unit whose DWARF is unchanged but whose location lists changed is indexed again (the list bytes it read are checked)', async (t) => {
  if (!have('gcc')) return missing(t, 'gcc (builds the program)');
  const dir = mkdtempSync(join(tmpdir(), 'probelens-unit-lists-'));
  const cacheDir = join(dir, 'cache');
  try {
    const bin = build(dir, { 'main.c': MAIN_C, 'words.c': WORDS_C, 'scale.c': SCALE_C });
    const first = await reusing(bin, cacheDir);
    // A location list entry some unit read (DW_LLE_offset_pair, one-byte operands, a one-byte DW_OP_regN
    // expression): its register changed in place, every other byte of the file as it was.
    const units = unitCacheDir(cacheDir);
    const b = readFileSync(bin);
    const loclists = sectionHeaders(b).find((h) => h.name === '.debug_loclists');
    assert.ok(loclists, 'gcc -O2 wrote location lists');
    let patched = -1;
    for (const n of readdirSync(units).filter((x) => !x.startsWith(SHIFT_PREFIX))) {
      const e = readUnitEntry(units, n.replace(/\.unit$/, '')) as { lists: number[] };
      for (let i = 0; i < e.lists.length && patched < 0; i += 3) {
        if (LIST_SECTIONS[e.lists[i]] !== '.debug_loclists') continue;
        for (let at = loclists.offset + e.lists[i + 1]; at + 5 <= loclists.offset + e.lists[i + 2]; at++)
          if (b[at] === 0x04 && b[at + 1] < 0x80 && b[at + 2] < 0x80 && b[at + 3] === 1 && b[at + 4] >= 0x50 && b[at + 4] <= 0x5f) {
            patched = at + 4;
            break;
          }
      }
      if (patched >= 0) break;
    }
    assert.ok(patched >= 0, 'a one-register location list entry was found');
    b[patched] = b[patched] === 0x50 ? 0x51 : 0x50;
    const changed = join(dir, 'changed');
    writeFileSync(changed, b);
    const again = await reusing(changed, cacheDir);
    assert.equal(again.dump, await cold(changed), 'the same index as a cold build');
    assert.deepEqual(
      [again.stats.reused, again.stats.indexed],
      [first.stats.units - 1, 1],
      'the unit that read the list alone is indexed again',
    );
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test('loadIndex reuses units for a rebuilt binary (the CLI and the extension), and --no-cache neither reads nor writes them', async (t) => {
  if (!have('gcc')) return missing(t, 'gcc (builds the program)');
  const dir = mkdtempSync(join(tmpdir(), 'probelens-unit-load-'));
  const cacheDir = join(dir, 'cache');
  try {
    const files = { 'main.c': MAIN_C, 'words.c': WORDS_C, 'scale.c': SCALE_C };
    let bin = build(dir, files);
    const progress: string[] = [];
    await loadIndex(bin, { noCache: true, cacheDir });
    assert.deepEqual(readdirSync(dir).includes('cache') ? readdirSync(cacheDir) : [], [], '--no-cache writes nothing');
    await loadIndex(bin, { cacheDir, onProgress: (m) => progress.push(m) });
    bin = build(dir, { ...files, 'scale.c': `// edited\n${SCALE_C}` });
    for (const inWorker of [false, true]) {
      rmSync(
        join(
          cacheDir,
          readdirSync(cacheDir).find((n) => n.endsWith('.idx'))!,
        ),
      );
      const seen: string[] = [];
      const r = await loadIndex(bin, { cacheDir, inWorker, onProgress: (m) => seen.push(m) });
      assert.equal(r.fromCache, false);
      assert.ok(
        seen.some((m) => /^reused [1-9]\d* of \d+ DWARF units from the unit cache/.test(m)),
        `${inWorker ? 'in a worker' : 'in process'}: units reused (${seen.join(' | ')})`,
      );
      assert.equal(indexDump(r.index.data), await cold(bin));
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test('every section the DWARF reader names is in a unit key or checked before reuse, and the lists are read only where reads are recorded', () => {
  // A unit's key and its checks must cover all its indexing reads: a reader of a new section must be added to them.
  const root = join(__dirname, '../../../../src/core/dwarf');
  const named = new Map<string, Set<string>>();
  for (const f of readdirSync(root).filter((n) => n.endsWith('.ts')))
    for (const m of readFileSync(join(root, f), 'utf8').matchAll(/'\.z?(debug_[a-z_]+)'/g)) {
      const s = `.${m[1]}`;
      if (!named.has(s)) named.set(s, new Set());
      named.get(s)!.add(f);
    }
  const covered = new Set<string>([...AUX_SECTIONS, ...UNIT_SECTIONS, ...LIST_SECTIONS]);
  assert.ok(named.size >= 10, `found ${[...named.keys()].join(' ')}`);
  for (const s of named.keys()) assert.ok(covered.has(s), `${s} is read by src/core/dwarf but is in no unit key`);
  // The lists' bytes are checked as recorded: only lists.ts names them, and it reads them through listReader alone.
  for (const s of LIST_SECTIONS) assert.deepEqual([...(named.get(s) ?? ['lists.ts'])], ['lists.ts'], `${s} is read outside lists.ts`);
  const lists = readFileSync(join(root, 'lists.ts'), 'utf8');
  const direct = [...lists.matchAll(/dw\.(reader|get)\(/g)].length;
  assert.equal(direct, 3, 'lists.ts reads sections in listReader (and listIndex sizes one) only');
});

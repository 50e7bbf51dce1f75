// A unit whose code only moved is reused with its addresses moved (unitShift.ts): a program of several C files built
// as make would, indexed, a line of code added to a function of the first file linked and the program rebuilt, so
// that every later unit's code moves by the same few bytes; indexed again from the unit cache the index is the cold
// index of the new binary, dump for dump, and the later units were reused by their shift form, not indexed. Units
// whose addresses moved by different amounts (static data moved apart from the code, a .cold part that stayed) are
// indexed again, and the index is still the cold one.
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { missing } from '../../../helpers/require';
import { have, run } from '../binary/build';
import { build, cold, reusing } from './unitBuilds';

const FIRST_C = `#include <stdio.h>
long mix(long a, long b);
int parse(const char *s, int base);
static char out[16];
int main(int argc, char **argv) {
  long total = 0;
  for (int i = 1; i < argc; i++) total = mix(total, parse(argv[i], 10));
  snprintf(out, sizeof out, "%ld", total);
  puts(out);
  return total > 1000;
}
`;
// Parameters on location lists, an inlined static, a loop: lists with addresses in them.
const PARSE_C = `static inline int digit(char c, int base) { int d = c >= 'a' ? c - 'a' + 10 : c - '0'; return d < base ? d : -1; }
int parse(const char *s, int base) {
  int n = 0;
  for (; *s; s++) {
    int d = digit(*s, base);
    if (d < 0) break;
    n = n * base + d;
  }
  return n;
}
`;
const MIX_C = `struct acc { long sum; int steps; };
static long __attribute__((noinline)) step(struct acc *a, long v) { a->sum += v * 3 + (a->sum >> 2); a->steps++; return a->sum; }
long mix(long a, long b) {
  struct acc x = { a, 0 };
  for (long i = 0; i < b; i++) step(&x, a ^ i);
  return x.sum / (x.steps ? x.steps : 1);
}
`;
const HASH_C = `unsigned long hash(const unsigned char *p, unsigned long n, unsigned long seed) {
  unsigned long h = seed ^ 0x9e3779b97f4a7c15ul;
  for (unsigned long i = 0; i < n; i++) { h ^= p[i]; h *= 0x100000001b3ul; h ^= h >> 29; }
  return h;
}
`;
// Static data whose address is in the unit's bytes (DW_OP_addr in its variable's location).
const TABLE_C = `static int table[64];
int lookup(int k) { return table[k & 63]++ + k; }
`;

// The line of code added to main: a few more calls (code enough to move what follows past its alignment).
const GROWN = 'long total = argc > 9 ? mix(argc, argc * 3) + parse(argv[0], 16) : 0;';

// A function split in two: its unlikely path in a .cold part (.text.unlikely, laid out before every .text).
const COLD_C = `#include <stdio.h>
void fail(const char *what, int v) __attribute__((cold, noinline));
void fail(const char *what, int v) { fprintf(stderr, "bad %s: %d\\n", what, v); }
int check(int v, const char *what) {
  if (v < 0) { fail(what, v); v = -v; }
  for (int i = 0; i < v; i++) v ^= i * 3;
  return v * 2 + 1;
}
`;

// Calls whose arguments are string literals: GCC describes each argument's value at the call (a call site
// parameter's DW_AT_call_value), DW_OP_addr of the literal, whose place in the linker's merged strings moves by as
// much as the strings linked before it grew, not by the code's move.
const NOTE_C = `#include <stdio.h>
void note(const char *what, long v) __attribute__((noinline));
void note(const char *what, long v) { printf("%s=%ld\\n", what, v); }
long report(long a, long b) {
  note("alpha", a);
  note("beta", b * 3);
  return a + b;
}
`;

/** The address of a NUL-terminated string in the binary's .rodata (section header and bytes, by readelf). */
function stringAddress(bin: string, text: string): bigint {
  const m = /\]\s+\.rodata\s+PROGBITS\s+([0-9a-f]+)\s+([0-9a-f]+)\s+([0-9a-f]+)/.exec(run('readelf', ['-SW', bin]));
  assert.ok(m, `${bin} has a .rodata section`);
  const [addr, off, size] = [m[1], m[2], m[3]].map((h) => Number.parseInt(h, 16));
  const bytes = readFileSync(bin).subarray(off, off + size);
  const at = bytes.indexOf(Buffer.from(`${text}\0`));
  assert.ok(at > 0 && bytes[at - 1] === 0, `"${text}" is a string of its own in .rodata`);
  return BigInt(addr + at);
}

/**
 * Builds `files` in a folder of its own and indexes the program once through a unit cache there (the cold index,
 * dump for dump); `body` then edits and rebuilds. The folder goes afterwards.
 */
async function afterFirstBuild(
  prefix: string,
  files: Array<[string, string]>,
  body: (b: { dir: string; cacheDir: string; bin: string; first: Awaited<ReturnType<typeof reusing>> }) => Promise<void>,
): Promise<void> {
  const dir = mkdtempSync(join(tmpdir(), prefix));
  const cacheDir = join(dir, 'cache');
  try {
    const bin = build(dir, files);
    const first = await reusing(bin, cacheDir);
    assert.equal(first.dump, await cold(bin), 'first build: the same index');
    await body({ dir, cacheDir, bin, first });
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

/** The entry addresses of the functions named, from the symbol table. */
function addresses(bin: string, names: string[]): Map<string, bigint> {
  const out = new Map<string, bigint>();
  for (const line of run('nm', [bin]).split('\n')) {
    const [a, , n] = line.trim().split(/\s+/);
    if (names.includes(n)) out.set(n, BigInt(`0x${a}`));
  }
  return out;
}

test('a line of code added to the first file: the later units, whose code only moved, are reused moved and the index is the cold one', async (t) => {
  if (!have('gcc') || !have('nm')) return missing(t, 'gcc and nm (build the program, find where its code is)');
  const files: Array<[string, string]> = [
    ['first.c', FIRST_C],
    ['parse.c', PARSE_C],
    ['mix.c', MIX_C],
    ['hash.c', HASH_C],
  ];
  await afterFirstBuild('probelens-unit-shift-', files, async ({ dir, cacheDir, bin: firstBin, first }) => {
    let bin = firstBin;
    const names = ['parse', 'mix', 'hash'];
    const before = addresses(bin, names);

    bin = build(dir, [['first.c', FIRST_C.replace('long total = 0;', GROWN)], ...files.slice(1)]);
    const after = addresses(bin, names);
    const moves = new Set(names.map((n) => after.get(n)! - before.get(n)!));
    assert.equal(moves.size, 1, `the later units' code moved by one amount (${[...moves].join(', ')})`);
    assert.notEqual([...moves][0], 0n, "the later units' code moved");
    const again = await reusing(bin, cacheDir);
    assert.equal(again.dump, await cold(bin), 'the same index as a cold build of the new binary');
    assert.deepEqual(
      [again.stats.reused, again.stats.shifted, again.stats.indexed],
      [first.stats.units - 1, 3, 1],
      'the three later units reused by their shift form, the edited one alone indexed',
    );
  });
});

test('units whose addresses moved by different amounts are indexed again, and the index is the cold one', async (t) => {
  if (!have('gcc') || !have('nm')) return missing(t, 'gcc and nm (build the program, find where its code is)');
  const files: Array<[string, string]> = [
    ['first.c', FIRST_C],
    ['table.c', TABLE_C],
    ['cold.c', COLD_C],
    ['parse.c', PARSE_C],
    ['mix.c', MIX_C],
  ];
  await afterFirstBuild('probelens-unit-shift-apart-', files, async ({ dir, cacheDir, bin: firstBin, first }) => {
    let bin = firstBin;
    const tableAt = (b: string) => BigInt(`0x${run('nm', [b]).match(/^([0-9a-f]+) b table$/m)![1]}`);
    const parts = ['lookup', 'check', 'check.cold'];
    const before = [tableAt(bin), ...parts.map((n) => addresses(bin, parts).get(n)!)];

    // A line of code added to the first file and its static buffer grown by 4 KiB (no name added: the string
    // section stays as it was): the later code moves by a few bytes, the later static data by 4 KiB.
    const edited = FIRST_C.replace('long total = 0;', GROWN).replace('out[16]', 'out[4096]');
    bin = build(dir, [['first.c', edited], ...files.slice(1)]);
    const after = [tableAt(bin), ...parts.map((n) => addresses(bin, parts).get(n)!)];
    assert.ok(
      [...before, ...after].every((a) => a !== undefined),
      `${parts.join(', ')} and table are in the symbol table`,
    );
    const moved = after.map((a, i) => a - before[i]);
    assert.notEqual(moved[0], moved[1], 'the static data moved apart from the code');
    assert.equal(moved[1], moved[2], 'the later code moved by one amount');
    assert.notEqual(moved[2], moved[3], "check's .cold part moved apart from its hot part");
    const again = await reusing(bin, cacheDir);
    assert.equal(again.dump, await cold(bin), 'the same index as a cold build of the new binary');
    // table.c names its data's address and cold.c has code that did not move: indexed again; parse.c and mix.c
    // only moved with the code: reused.
    assert.deepEqual(
      [again.stats.reused, again.stats.shifted, again.stats.indexed],
      [first.stats.units - 3, 2, 3],
      'the units whose parts moved apart are indexed again, with the edited one',
    );
  });
});

test("a unit whose calls pass string literals, which moved apart from its code, is reused: the index reads no call's argument values", async (t) => {
  if (!have('gcc') || !have('nm') || !have('readelf'))
    return missing(t, 'gcc, nm and readelf (build the program, find where its code and strings are)');
  const files: Array<[string, string]> = [
    ['first.c', FIRST_C],
    ['note.c', NOTE_C],
    ['parse.c', PARSE_C],
    ['mix.c', MIX_C],
  ];
  await afterFirstBuild('probelens-unit-shift-literals-', files, async ({ dir, cacheDir, bin: firstBin, first }) => {
    let bin = firstBin;
    const at = (b: string) => [
      stringAddress(b, 'alpha'),
      ...['report', 'parse', 'mix'].map((n) => addresses(b, ['report', 'parse', 'mix']).get(n)!),
    ];
    const before = at(bin);

    // A line of code and a string literal added to the first file: the later code moves by a few bytes, the later
    // strings by the new literal's length.
    const edited = FIRST_C.replace('long total = 0;', GROWN).replace(
      'puts(out);',
      'puts(out);\n  puts("a string literal added to the first file");',
    );
    bin = build(dir, [['first.c', edited], ...files.slice(1)]);
    const moved = at(bin).map((a, i) => a - before[i]);
    assert.notEqual(moved[0], 0n, 'the literals moved');
    assert.equal(new Set(moved.slice(1)).size, 1, `the later code moved by one amount (${moved.slice(1).join(', ')})`);
    assert.notEqual(moved[0], moved[1], 'the literals moved apart from the code');
    const again = await reusing(bin, cacheDir);
    assert.equal(again.dump, await cold(bin), 'the same index as a cold build of the new binary');
    assert.deepEqual(
      [again.stats.reused, again.stats.shifted, again.stats.indexed],
      [first.stats.units - 1, 3, 1],
      'note.c reused by its shift form with parse.c and mix.c, the edited file alone indexed',
    );
  });
});

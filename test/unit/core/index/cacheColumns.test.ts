// A cache entry whose header is valid but whose columns are damaged (a column missing, of another type or
// length, a string id past the string table, a param or site span past its columns, a huge count, a NaN where
// a bigint is made, line rows naming a file that is not there). Damage in the groups a load reads (strings,
// functions, parameters, the header) reads as absent: the index is rebuilt, equal to a fresh build, and the
// rebuilt entry is used next time. Damage in the sites or the line table, read when first asked for, fails that
// query with an error naming the entry and saying it was removed; the next load rebuilds it. Before, each of these
// failed every later run with a JavaScript error ("Cannot read properties of undefined", "Cannot convert undefined
// to a BigInt") and was never rebuilt, and a huge paramCount ran Node out of heap.
import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, openSync, readdirSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { loadIndex } from '../../../../src/core/index/load';
import type { EncodedIndex } from '../../../../src/core/index/codec';
import { CacheDamagedError, encodeContainer, openContainer } from '../../../../src/core/index/container';
import { buildC, CALLS_C, have } from '../binary/build';
import { missing } from '../../../helpers/require';

type Damage = (e: EncodedIndex) => void;

/** The entry at `file`, every group read. */
function readWhole(file: string): EncodedIndex {
  const e = openContainer(openSync(file, 'r'), file);
  assert.ok(e, `${file} reads as an entry`);
  void e.site;
  void e.meta.lines;
  return e;
}

/** Damages read when first asked for, and the query that asks. */
const LATER: Record<string, 'site' | 'lines'> = {
  'a column one row short': 'site',
  'a site kind out of range': 'site',
  'a NaN die offset': 'site',
  'a range span past the ranges': 'site',
  'line rows naming a missing file': 'lines',
  'the line columns missing': 'lines',
};

/** Functions as plain data: bigints as text, absent and undefined fields alike (the codec drops undefined). */
const plain = (v: unknown): unknown => JSON.parse(JSON.stringify(v, (_k, x: unknown) => (typeof x === 'bigint' ? `${x}n` : x)));

const DAMAGES: Record<string, Damage> = {
  'a huge paramCount': (e) => (e.fn.paramCount[0] = 0xfffffff0),
  'a huge siteCount': (e) => (e.fn.siteCount[0] = 0x7fffffff),
  'a name id past the string table': (e) => (e.fn.name[0] = e.fn.name.length + 100_000),
  'a param type id past the string table': (e) => (e.param.type[0] = 0xfffffff0),
  'the address column missing': (e) => delete (e.fn as Partial<EncodedIndex['fn']>).address,
  'a column of another type': (e) => ((e.param as unknown as Record<string, unknown>).name = Float64Array.from(e.param.name)),
  'a column one row short': (e) => (e.site.address = e.site.address.subarray(0, e.site.address.length - 1)),
  'a site kind out of range': (e) => (e.site.kind[0] = 200),
  'a NaN die offset': (e) => (e.site.dieOffset[0] = NaN),
  'a fractional file offset': (e) => (e.fn.fileOffset[e.fn.flags.findIndex((f) => (f & 8) !== 0)] = 0.5),
  'a range span past the ranges': (e) => (e.site.rangeCount[0] = 0xffff),
  'a string table cut short': (e) => (e.strings = e.strings.subarray(0, 8)),
  'string starts past a NUL-less byte': (e) => (e.stringStarts[1] += 1),
  'string starts ending before the table does': (e) => (e.stringStarts = e.stringStarts.subarray(0, e.stringStarts.length - 1)),
  'no string starts': (e) => delete (e as Partial<EncodedIndex>).stringStarts,
  'line rows naming a missing file': (e) => (e.meta.lines.file[0] = 99_999),
  'the line columns missing': (e) => delete (e.meta as Partial<EncodedIndex['meta']>).lines,
  'a usdt entry that is not one': (e) => (e.meta.usdt as unknown[]).push(7),
  'no string table': (e) => delete (e as Partial<EncodedIndex>).strings,
};

test('a cache entry with damaged columns is rebuilt, equal to a fresh build, and the rebuilt entry is used', async (t) => {
  if (!have('gcc')) return missing(t, 'gcc (builds the binary)');
  const bin = buildC('cache-columns', CALLS_C, ['-g', '-O2']);
  const cacheDir = mkdtempSync(join(tmpdir(), 'probelens-cache-columns-'));
  const fresh = await loadIndex(bin, { noCache: true });
  const first = await loadIndex(bin, { cacheDir });
  assert.equal(first.fromCache, false);
  const [entry] = readdirSync(cacheDir).filter((f) => f.endsWith('.idx'));
  const file = join(cacheDir, entry);
  const expected = plain(fresh.index.data.functions);
  assert.ok(
    fresh.index.data.functions.some((f) => f.params.length > 0 && f.sites.length > 0),
    'the binary has params and sites to damage',
  );
  const lines = (d: typeof fresh.index.data) => plain([...d.lines.line].slice(0, 50));
  for (const [what, damage] of Object.entries(DAMAGES)) {
    const e = readWhole(file);
    damage(e);
    writeFileSync(file, Buffer.concat(encodeContainer(e)));
    const r = await loadIndex(bin, { cacheDir });
    const later = LATER[what];
    if (later) {
      assert.equal(r.fromCache, true, `${what}: the load reads only the header and the first groups`);
      assert.throws(
        () => (later === 'site' ? r.index.data.functions : lines(r.index.data)),
        (err: Error) => err instanceof CacheDamagedError && err.message.includes(file) && /it was removed: run again/.test(err.message),
        `${what}: the query that reads the ${later} fails, naming the entry`,
      );
      assert.ok(!existsSync(file), `${what}: the damaged entry is removed`);
      const rebuilt = await loadIndex(bin, { cacheDir });
      assert.equal(rebuilt.fromCache, false, `${what}: rebuilt`);
      assert.deepEqual(plain(rebuilt.index.data.functions), expected, `${what}: rebuilt like a fresh build`);
    } else {
      assert.equal(r.fromCache, false, `${what}: not used`);
      assert.deepEqual(plain(r.index.data.functions), expected, `${what}: rebuilt like a fresh build`);
    }
    const again = await loadIndex(bin, { cacheDir });
    assert.equal(again.fromCache, true, `${what}: the rebuilt entry is used`);
    assert.deepEqual(plain(again.index.data.functions), expected, `${what}: and reads back whole`);
    assert.deepEqual(lines(again.index.data), lines(fresh.index.data), `${what}: its line table too`);
  }
});

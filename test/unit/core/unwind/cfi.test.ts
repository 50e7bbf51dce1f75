import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { openBinary } from '../../../../src/core/binary/binaryImage';
import { callFrameInfo } from '../../../../src/core/unwind';
import { registerName } from '../../../../src/core/dwarf';
import { addressNumber } from '../../../../src/core/binary/addressFold';
import { miniKernel } from '../../../helpers/miniKernel';

const SRC = `
#include <stdio.h>
#include <string.h>
__attribute__((noinline)) long work(long a, long b) { char buf[64]; snprintf(buf, sizeof buf, "%ld", a * b); return (long)strlen(buf) + a; }
__attribute__((noinline)) int loop(int n) { int s = 0; for (int i = 0; i < n; i++) s += (int)work(i, n); return s; }
int main(int argc, char **argv) { (void)argv; return loop(argc + 3) > 0 ? 0 : 1; }
`;

// Oracle: readelf's interpretation of the same CFI, row by row ("LOC CFA ..." tables).
function readelfRows(bin: string): Array<{ loc: number; cfa: string }> {
  const out = execFileSync('readelf', ['--debug-dump=frames-interp', bin], { encoding: 'utf8' });
  const rows: Array<{ loc: number; cfa: string }> = [];
  let inFde = false;
  for (const line of out.split('\n')) {
    if (/ CIE /.test(line)) inFde = false;
    if (/ FDE cie=/.test(line)) inFde = true;
    if (!inFde) continue;
    const m = /^([0-9a-f]{8,16}) ((?:r[a-z0-9]+|sp|x[0-9]+)[+-][0-9]+)\s/.exec(line);
    if (m) rows.push({ loc: parseInt(m[1], 16), cfa: m[2] });
  }
  return rows;
}

for (const [arch, cc, opt] of [
  ['x86_64', 'gcc', '-O0'],
  ['x86_64', 'gcc', '-O2'],
  ['aarch64', 'aarch64-linux-gnu-gcc', '-O2'],
] as const) {
  test(`CFA at every CFI row equals readelf's (${arch} ${opt})`, async () => {
    const dir = mkdtempSync(join(tmpdir(), 'probelens-cfi-'));
    writeFileSync(join(dir, 'w.c'), SRC);
    const bin = join(dir, 'w');
    execFileSync(cc, [opt, '-g', '-fasynchronous-unwind-tables', '-o', bin, join(dir, 'w.c')]);
    const image = await openBinary(bin);
    const cfi = callFrameInfo(image);
    assert.ok(cfi, 'has CFI');
    const rows = readelfRows(bin);
    assert.ok(rows.length > 5, `readelf gave ${rows.length} rows`);
    for (const r of rows) {
      const got = cfi.cfaAt(r.loc);
      assert.ok(got, `no CFA at 0x${r.loc.toString(16)}`);
      const name = registerName(arch, got.reg);
      assert.equal(`${name}${got.offset >= 0 ? '+' : ''}${got.offset}`, r.cfa, `at 0x${r.loc.toString(16)}`);
    }
  });
}

test("a kernel's .debug_frame (addresses above 2^53): the CFA at every row equals readelf's, at the exact address", async (t) => {
  const bin = miniKernel(t);
  if (!bin) return;
  const cfi = callFrameInfo(await openBinary(bin));
  assert.ok(cfi, 'has CFI');
  const out = execFileSync('readelf', ['--debug-dump=frames-interp', bin], { encoding: 'utf8' });
  const rows = [...out.matchAll(/^(ffffffff[0-9a-f]{8}) (r[a-z0-9]+[+-][0-9]+)\s/gm)].map((m) => ({ loc: BigInt(`0x${m[1]}`), cfa: m[2] }));
  assert.ok(rows.length >= 4, `readelf gave ${rows.length} rows`);
  for (const r of rows) {
    const got = cfi.cfaAt(addressNumber(r.loc));
    assert.ok(got, `no CFA at 0x${r.loc.toString(16)}`);
    assert.equal(`${registerName('x86_64', got.reg)}${got.offset >= 0 ? '+' : ''}${got.offset}`, r.cfa, `at 0x${r.loc.toString(16)}`);
  }
});

// A relocatable object (`gcc -c -g -O2`, as a kernel module's .ko is one) read as if linked: its allocated
// sections laid out, its DWARF's relocations applied. The oracles are binutils: readelf's symbol table (each
// function's section and offset in it) and addr2line's answer for an address given relative to its section
// (`addr2line -j SECTION`), which apply the relocations themselves.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { buildIndex } from '../../../../src/core/index/build';
import { BinaryIndex } from '../../../../src/core/index/binaryIndex';
import { ElfFile } from '../../../../src/core/binary/elfFile';
import { REL_BASE } from '../../../../src/core/binary/relocatable';
import { run, workDir } from './build';
import { join } from 'node:path';
import { writeFileSync } from 'node:fs';

const SRC = `
int table[8];
static int __attribute__((noinline)) scale(int x, int k)
{
	table[x & 7] += k;
	return x * k + 1;
}
int sum_scaled(int n)
{
	int s = 0;
	for (int i = 0; i < n; i++)
		s += scale(i, n);
	return s;
}
__attribute__((cold, noinline)) long rare(long v, const char *why)
{
	return v + why[0];
}
__attribute__((section(".init.text"), noinline)) int setup(int flags)
{
	return sum_scaled(flags) + (int)rare(flags, "x");
}
`;

interface SymRow {
  name: string;
  value: bigint;
  section: string;
}

/** readelf -sW's FUNC symbols with the name of their section (readelf -SW). */
function readelfFunctions(obj: string): Map<string, SymRow> {
  const sections = new Map<number, string>();
  for (const l of run('readelf', ['-SW', obj]).split('\n')) {
    const m = /^\s*\[\s*(\d+)\]\s+(\S+)/.exec(l);
    if (m) sections.set(Number(m[1]), m[2]);
  }
  const out = new Map<string, SymRow>();
  for (const l of run('readelf', ['-sW', obj]).split('\n')) {
    const f = l.trim().split(/\s+/);
    if (f[3] !== 'FUNC' || !/^\d+$/.test(f[6])) continue;
    out.set(f[7], { name: f[7], value: BigInt(`0x${f[1]}`), section: sections.get(Number(f[6]))! });
  }
  return out;
}

for (const variant of ['', '-gz=zlib']) {
  test(`gcc -c -g -O2 ${variant || '(uncompressed)'}: functions, parameters and lines of an ET_REL object, relocated as binutils does`, async () => {
    const src = join(workDir, `rel${variant ? '-z' : ''}.c`);
    const obj = src.replace(/\.c$/, '.o');
    writeFileSync(src, SRC);
    run('gcc', ['-c', '-g', '-O2', ...(variant ? [variant] : []), src, '-o', obj]);
    const elf = ElfFile.parse(readFileSync(obj), obj);
    assert.equal(elf.type, 'REL');
    const layout = elf.layout!;
    const baseOf = (name: string) => layout.base.get(elf.section(name)!.index)!;
    // Sections in table order, each at its alignment, from REL_BASE; no two overlap.
    const placed = [...layout.base].map(([i, a]) => ({ a, end: a + BigInt(elf.sections[i].size) })).sort((x, y) => (x.a < y.a ? -1 : 1));
    assert.ok(placed[0].a >= REL_BASE);
    for (let i = 1; i < placed.length; i++) assert.ok(placed[i].a >= placed[i - 1].end, 'sections overlap');

    const syms = readelfFunctions(obj);
    assert.deepEqual([...syms.values()].map((s) => `${s.name}@${s.section}`).sort(), [
      'rare@.text.unlikely',
      'scale@.text',
      'setup@.init.text',
      'sum_scaled@.text',
    ]);
    const index = new BinaryIndex(await buildIndex(obj));
    for (const s of syms.values()) {
      const [f] = index.function(s.name);
      assert.ok(f, `${s.name} is indexed`);
      // DWARF's low_pc, relocated against the section's place: the symbol's value in its section.
      assert.equal(f.address, baseOf(s.section) + s.value, `${s.name}'s entry`);
      assert.equal(f.sites[0].kind, 'entry');
      assert.equal(f.file, src);
    }
    const params = (n: string) => index.function(n)[0].params.map((p) => `${p.type} ${p.name}=${p.location}`);
    assert.deepEqual(params('scale'), ['int x=%di', 'int k=%si']);
    assert.deepEqual(params('rare'), ['long int v=%di', 'const char * why=%si']);
    assert.deepEqual(params('setup'), ['int flags=%di']);

    // Every statement row of every function: addr2line, given the address relative to its section, names the
    // same line (it relocates .debug_line by itself).
    let checked = 0;
    for (const s of syms.values()) {
      const f = index.function(s.name)[0];
      const base = baseOf(s.section);
      for (let a = f.address!; a < f.address! + BigInt(f.size); a++) {
        const ours = index.lineForAddress(a);
        if (!ours || index.addressesForLine(ours.file, ours.line).every((x) => x !== a)) continue;
        const out = run('addr2line', ['-e', obj, '-j', s.section, `0x${(a - base).toString(16)}`]).trim();
        assert.equal(out.replace(/ \(discriminator \d+\)$/, ''), `${ours.file}:${ours.line}`, `${s.name} at +${a - f.address!}`);
        checked++;
      }
    }
    assert.ok(checked >= 8, `${checked} line rows checked`);
    // Code bytes come relocated: sum_scaled's call of scale lands on scale.
    const scale = index.function('scale')[0].address!;
    const sum = index.function('sum_scaled')[0];
    const code = elf.bytesAt(sum.address!, sum.size);
    let calls = 0;
    for (let i = 0; i + 5 <= code.length; i++) {
      if (code[i] !== 0xe8) continue;
      const target = sum.address! + BigInt(i + 5) + BigInt(Buffer.from(code).readInt32LE(i + 1));
      if (target === scale) calls++;
    }
    assert.ok(calls >= 1, 'a call of scale decodes to scale');
  });
}

test('a linked file is never relocated: its layout is undefined and its sections are read as stored', () => {
  const exe = join(workDir, 'linked');
  writeFileSync(`${exe}.c`, 'int main(void) { return 0; }\n');
  run('gcc', ['-g', `${exe}.c`, '-o', exe, '-Wl,--emit-relocs']);
  const elf = ElfFile.parse(readFileSync(exe), exe);
  assert.equal(elf.layout, undefined);
  const info = elf.section('.debug_info')!;
  assert.deepEqual(Buffer.from(elf.sectionContents('.debug_info')!), Buffer.from(elf.rawSectionBytes(info)!));
});

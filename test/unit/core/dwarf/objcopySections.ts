// A test-only SectionSource that does not use our ELF layer: binutils' objcopy decompresses the debug
// sections into a temporary copy, and a few lines of Node read its section headers. Tests of the DWARF reader
// therefore stand on an independent path to the bytes.
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { SectionSource } from '../../../../src/core/binary/sections';

export interface TestSections extends SectionSource {
  /** Section bytes by name (copies may be mutated by fuzz tests). */
  readonly sections: Map<string, Uint8Array>;
  readonly machine: number;
}

export function sectionsOf(binary: string): TestSections {
  const plain = parse(readFileSync(binary));
  if (!plain.compressed) return plain;
  const dir = mkdtempSync(join(tmpdir(), 'pl-dwarf-'));
  try {
    const copy = join(dir, 'bin');
    execFileSync('objcopy', ['--decompress-debug-sections', binary, copy], { stdio: 'pipe' });
    return parse(readFileSync(copy));
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

function parse(b: Buffer): TestSections & { compressed: boolean } {
  if (b.readUInt32BE(0) !== 0x7f454c46) throw new Error('not an ELF file');
  const is64 = b[4] === 2,
    le = b[5] === 1;
  const u16 = (o: number) => (le ? b.readUInt16LE(o) : b.readUInt16BE(o));
  const u32 = (o: number) => (le ? b.readUInt32LE(o) : b.readUInt32BE(o));
  const uA = (o: number) => (is64 ? Number(le ? b.readBigUInt64LE(o) : b.readBigUInt64BE(o)) : u32(o));
  const machine = u16(18);
  const shoff = uA(is64 ? 0x28 : 0x20);
  const shentsize = u16(is64 ? 0x3a : 0x2e),
    shnum = u16(is64 ? 0x3c : 0x30),
    shstrndx = u16(is64 ? 0x3e : 0x32);
  const hdr = (i: number) => {
    const o = shoff + i * shentsize;
    return {
      name: u32(o),
      type: u32(o + 4),
      flags: uA(o + 8),
      offset: uA(is64 ? o + 0x18 : o + 0x10),
      size: uA(is64 ? o + 0x20 : o + 0x14),
    };
  };
  const strtab = hdr(shstrndx);
  const sections = new Map<string, Uint8Array>();
  let compressed = false;
  for (let i = 1; i < shnum; i++) {
    const h = hdr(i);
    const nameStart = strtab.offset + h.name;
    const name = b.toString('latin1', nameStart, b.indexOf(0, nameStart));
    if (name.startsWith('.zdebug_') || (name.startsWith('.debug_') && h.flags & 0x800) /* SHF_COMPRESSED */) compressed = true;
    if (!name.startsWith('.debug_') || h.type === 8 /* NOBITS */) continue;
    sections.set(name, new Uint8Array(b.buffer, b.byteOffset + h.offset, h.size).slice());
  }
  return {
    sections,
    machine,
    compressed,
    littleEndian: le,
    addressSize: is64 ? 8 : 4,
    section: (n) => sections.get(n),
  };
}

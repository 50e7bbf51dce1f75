// A relocatable object (ET_REL: a `.o`, a kernel module's `.ko`) read as if it were linked: nothing in it has an
// address yet (every section starts at 0, symbols are section-relative, and its DWARF's addresses are relocations
// still to be applied), so its allocated sections are laid out one after another from REL_BASE, each at its
// alignment, in section-table order (as a linker or gdb's `add-symbol-file` would place them), and each section's
// relocations (`.rela.debug_info` for `.debug_info`, `.rela.text` for `.text`) are applied against that layout.
// Undefined symbols (a module's calls into the kernel: `__fentry__`, `kmalloc`) get addresses of their own past
// the last section, one 16-byte slot each, so calls to different functions stay different targets.
//
// A linked file (ET_EXEC, ET_DYN) is never relocated here: a vmlinux keeps `.rela.debug_*` sections whose
// relocations the linker has already applied.
// Tests: test/unit/core/binary/relocatable.test.ts, test/unit/core/probes/kernel.test.ts, test/vm/kernelModule.test.ts
import { elfReader } from './byteReader';
import { ElfFormatError } from './errors';
import { EM_AARCH64, EM_X86_64, SHF_ALLOC, SHT_NOBITS, type RawSection, type RawSegment } from './elfHeader';

/** Where the first allocated section of a relocatable object is placed (0 would read as "discarded" in DWARF). */
export const REL_BASE = 0x100000n;

const SHT_RELA = 4;
const SHT_REL = 9;
const SHT_SYMTAB = 2;
const SHN_UNDEF = 0;
const SHN_LORESERVE = 0xff00;
const SHN_ABS = 0xfff1;
const UNDEF_SLOT = 16n;

export interface RelocatableLayout {
  /** Section index → its address in the layout (allocated sections only). */
  base: Map<number, bigint>;
  /** A synthetic PT_LOAD per allocated section, so address ↔ file offset works as for a linked file. */
  segments: RawSegment[];
  /** Symbol index → address, for every symbol of `.symtab` (undefined ones in their slots). */
  symbolValue: (index: number) => bigint;
  /** Symbol index → name. */
  symbolName: (index: number) => string;
  /** Section index → the relocation sections that apply to it. */
  relocations: Map<number, RawSection[]>;
}

interface Raw {
  sections: readonly RawSection[];
  littleEndian: boolean;
  elfClass: 32 | 64;
  bytes: (sec: RawSection) => Uint8Array | undefined;
}

/** Lays out `raw`'s allocated sections and reads its symbol table (see the header comment). */
export function layoutRelocatable(raw: Raw): RelocatableLayout {
  const base = new Map<number, bigint>();
  const segments: RawSegment[] = [];
  let at = REL_BASE;
  for (const s of raw.sections) {
    if ((s.flags & SHF_ALLOC) === 0n) continue;
    const align = s.addralign > 1n ? s.addralign : 1n;
    at = ((at + align - 1n) / align) * align;
    base.set(s.index, at);
    if (s.size > 0)
      segments.push({
        index: segments.length,
        type: 1,
        flags: 4 | ((s.flags & 0x4n) !== 0n ? 1 : 0) | ((s.flags & 0x1n) !== 0n ? 2 : 0),
        offset: s.offset,
        vaddr: at,
        paddr: at,
        filesz: s.type === SHT_NOBITS ? 0 : s.size,
        memsz: BigInt(s.size),
        align,
      });
    at += BigInt(s.size);
  }
  const symtab = raw.sections.find((s) => s.type === SHT_SYMTAB);
  const entsize = raw.elfClass === 64 ? 24 : 16;
  const symBytes = (symtab && raw.bytes(symtab)) ?? new Uint8Array(0);
  const strBytes = (symtab && raw.sections[symtab.link] && raw.bytes(raw.sections[symtab.link])) ?? new Uint8Array(0);
  const count = Math.floor(symBytes.length / entsize);
  const values = new Array<bigint>(count).fill(0n);
  const names = new Array<string>(count).fill('');
  const strs = Buffer.from(strBytes.buffer, strBytes.byteOffset, strBytes.byteLength);
  let slot = ((at + 0xfffn) / 0x1000n) * 0x1000n;
  if (symtab) {
    const c = elfReader(symBytes, raw.littleEndian, symtab.name, symtab.offset);
    for (let i = 1; i < count; i++) {
      c.seek(i * entsize);
      let nameOff: number, shndx: number, value: bigint;
      if (raw.elfClass === 64) {
        nameOff = c.u32();
        c.u8();
        c.u8();
        shndx = c.u16();
        value = c.u64big();
      } else {
        nameOff = c.u32();
        value = BigInt(c.u32());
        c.u32();
        c.u8();
        c.u8();
        shndx = c.u16();
      }
      const end = strs.indexOf(0, nameOff);
      names[i] = nameOff < strs.length ? strs.toString('latin1', nameOff, end < 0 ? strs.length : end) : '';
      if (shndx === SHN_UNDEF) {
        if (names[i]) {
          values[i] = slot;
          slot += UNDEF_SLOT;
        }
      } else if (shndx === SHN_ABS || shndx >= SHN_LORESERVE) values[i] = value;
      else values[i] = value + (base.get(shndx) ?? 0n);
    }
  }
  const relocations = new Map<number, RawSection[]>();
  for (const s of raw.sections) {
    if ((s.type !== SHT_RELA && s.type !== SHT_REL) || !symtab || s.link !== symtab.index) continue;
    const list = relocations.get(s.info);
    if (list) list.push(s);
    else relocations.set(s.info, [s]);
  }
  return {
    base,
    segments,
    symbolValue: (i) => values[i] ?? 0n,
    symbolName: (i) => names[i] ?? '',
    relocations,
  };
}

/** How one relocation type writes its value: width in bytes, PC-relative or not, signed range check. */
interface Kind {
  bytes: 4 | 8;
  pcrel: boolean;
  signed?: boolean;
  /** AArch64 CALL26/JUMP26: the word's low 26 bits take (S + A − P) >> 2. */
  branch26?: boolean;
}

const X86_64: Record<number, Kind | null> = {
  0: null, // R_X86_64_NONE
  1: { bytes: 8, pcrel: false }, // R_X86_64_64
  2: { bytes: 4, pcrel: true, signed: true }, // R_X86_64_PC32
  4: { bytes: 4, pcrel: true, signed: true }, // R_X86_64_PLT32 (no PLT here: the symbol itself)
  10: { bytes: 4, pcrel: false }, // R_X86_64_32
  11: { bytes: 4, pcrel: false, signed: true }, // R_X86_64_32S
  24: { bytes: 8, pcrel: true }, // R_X86_64_PC64
};
const AARCH64: Record<number, Kind | null> = {
  0: null,
  256: null, // R_AARCH64_NONE
  257: { bytes: 8, pcrel: false }, // ABS64
  258: { bytes: 4, pcrel: false }, // ABS32
  260: { bytes: 8, pcrel: true }, // PREL64
  261: { bytes: 4, pcrel: true, signed: true }, // PREL32
  282: { bytes: 4, pcrel: true, branch26: true }, // JUMP26
  283: { bytes: 4, pcrel: true, branch26: true }, // CALL26
};

/**
 * `contents` (a copy of section `target`'s bytes, decompressed) with the relocations that apply to it written in,
 * against `layout`. A relocation type this does not know is skipped in code and data (it only changes what the
 * decoder sees of one instruction) and refused in a non-allocated section (debug information), where leaving it
 * out would make addresses silently wrong.
 */
export function applyRelocations(
  target: RawSection,
  contents: Uint8Array,
  layout: RelocatableLayout,
  raw: Raw & { machine: number },
): Uint8Array {
  const table = raw.machine === EM_X86_64 ? X86_64 : raw.machine === EM_AARCH64 ? AARCH64 : undefined;
  const rels = layout.relocations.get(target.index) ?? [];
  if (rels.length === 0) return contents;
  if (!table)
    throw new ElfFormatError(target.name, target.offset, `relocations of machine ${raw.machine} are not applied (x86-64 and AArch64 only)`);
  const dv = new DataView(contents.buffer, contents.byteOffset, contents.byteLength);
  const le = raw.littleEndian;
  const debug = (target.flags & SHF_ALLOC) === 0n;
  const P0 = layout.base.get(target.index) ?? 0n;
  for (const rs of rels) {
    const rela = rs.type === SHT_RELA;
    const entsize = raw.elfClass === 64 ? (rela ? 24 : 16) : rela ? 12 : 8;
    const bytes = raw.bytes(rs) ?? new Uint8Array(0);
    const c = elfReader(bytes, le, rs.name, rs.offset);
    for (let at = 0; at + entsize <= bytes.length; at += entsize) {
      c.seek(at);
      let offset: bigint, sym: number, type: number, addend: bigint | undefined;
      if (raw.elfClass === 64) {
        offset = c.u64big();
        const info = c.u64big();
        sym = Number(info >> 32n);
        type = Number(info & 0xffffffffn);
        addend = rela ? BigInt.asIntN(64, c.u64big()) : undefined;
      } else {
        offset = BigInt(c.u32());
        const info = c.u32();
        sym = info >>> 8;
        type = info & 0xff;
        addend = rela ? BigInt(c.s32()) : undefined;
      }
      const kind = table[type];
      if (kind === null) continue;
      const where = `${rs.name} entry ${at / entsize}`;
      if (kind === undefined) {
        if (debug) throw new ElfFormatError(where, rs.offset + at, `relocation type ${type} is not supported in ${target.name}`);
        continue;
      }
      const off = Number(offset);
      if (off < 0 || off + kind.bytes > contents.length)
        throw new ElfFormatError(where, rs.offset + at, `offset 0x${offset.toString(16)} lies outside ${target.name}`);
      const implicit = () => (kind.bytes === 8 ? dv.getBigInt64(off, le) : BigInt(dv.getInt32(off, le)));
      const A = addend ?? (kind.branch26 ? 0n : implicit());
      let v = layout.symbolValue(sym) + A - (kind.pcrel ? P0 + offset : 0n);
      if (kind.branch26) {
        const word = dv.getUint32(off, le);
        dv.setUint32(off, ((word & 0xfc000000) | Number(BigInt.asUintN(26, v >> 2n))) >>> 0, le);
        continue;
      }
      if (kind.bytes === 8) {
        dv.setBigUint64(off, BigInt.asUintN(64, v), le);
        continue;
      }
      const fits = kind.signed ? v >= -(1n << 31n) && v < 1n << 31n : v >= 0n && v < 1n << 32n;
      if (!fits && debug)
        throw new ElfFormatError(where, rs.offset + at, `relocated value 0x${v.toString(16)} does not fit 32 bits in ${target.name}`);
      v = BigInt.asUintN(32, v);
      dv.setUint32(off, Number(v), le);
    }
  }
  return contents;
}

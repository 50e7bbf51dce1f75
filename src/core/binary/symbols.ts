// Function symbols from .symtab and .dynsym. Entry sizes come from the ELF class (Elf64_Sym is 24 bytes,
// Elf32_Sym 16), never from sh_entsize, which elfy misreads and a hostile file may set to anything.
// Tests: test/unit/core/binary/symbols.test.ts
import { elfReader, stringAt } from './byteReader';
import { ElfFormatError } from './errors';
import type { RawSection } from './elfHeader';

export type SymbolBinding = 'local' | 'global' | 'weak' | 'unique';

export interface FunctionSymbol {
  name: string;
  /** st_value: the entry address (virtual address in the object's own address space). */
  address: bigint;
  /** st_size in bytes (0 when the assembler gave none). */
  size: bigint;
  binding: SymbolBinding;
  /** 'ifunc' for STT_GNU_IFUNC: the address is the resolver, not the implementation. */
  kind: 'func' | 'ifunc';
  /** st_shndx: the section the code is in. */
  sectionIndex: number;
  table: '.symtab' | '.dynsym';
}

/** All the names one address is known by (aliases such as `__libc_malloc`/`malloc`). */
export interface SymbolGroup {
  address: bigint;
  /** The largest size among the aliases. */
  size: bigint;
  symbols: FunctionSymbol[];
}

const STT_FUNC = 2;
const STT_GNU_IFUNC = 10;
const SHN_UNDEF = 0;
const SHN_LORESERVE = 0xff00;
const isFunction = (type: number): boolean => type === STT_FUNC || type === STT_GNU_IFUNC;
const BINDINGS: Record<number, SymbolBinding | undefined> = { 0: 'local', 1: 'global', 2: 'weak', 10: 'unique' };

/** Defined STT_FUNC/STT_GNU_IFUNC symbols of one symbol table. */
export function readFunctionSymbols(
  table: RawSection,
  tableBytes: Uint8Array,
  strtab: Uint8Array,
  strtabName: string,
  elfClass: 32 | 64,
  littleEndian: boolean,
): FunctionSymbol[] {
  const entsize = elfClass === 64 ? 24 : 16;
  const count = Math.floor(tableBytes.length / entsize);
  const where = table.name || `section ${table.index}`;
  const c = elfReader(tableBytes, littleEndian, where, table.offset);
  const out: FunctionSymbol[] = [];
  for (let i = 1; i < count; i++) {
    // The type first: most symbols (objects, sections, files) are not functions and are not read further.
    if (!isFunction(tableBytes[i * entsize + (elfClass === 64 ? 4 : 12)] & 0xf)) continue;
    c.seek(i * entsize);
    let nameOff: number, info: number, shndx: number, value: bigint, size: bigint;
    if (elfClass === 64) {
      nameOff = c.u32();
      info = c.u8();
      c.u8(); // st_other
      shndx = c.u16();
      value = c.u64big();
      size = c.u64big();
    } else {
      nameOff = c.u32();
      value = BigInt(c.u32());
      size = BigInt(c.u32());
      info = c.u8();
      c.u8();
      shndx = c.u16();
    }
    const type = info & 0xf;
    if (type !== STT_FUNC && type !== STT_GNU_IFUNC) continue;
    // Undefined (imported) functions and absolute/common pseudo-sections have no code in this file.
    if (shndx === SHN_UNDEF || shndx >= SHN_LORESERVE) continue;
    const binding = BINDINGS[info >> 4];
    if (!binding) continue;
    const name = stringAt(strtab, nameOff, strtabName);
    if (name === '') continue;
    out.push({
      name,
      address: value,
      size,
      binding,
      kind: type === STT_GNU_IFUNC ? 'ifunc' : 'func',
      sectionIndex: shndx,
      table: table.name === '.dynsym' ? '.dynsym' : '.symtab',
    });
  }
  return out;
}

/** Merges tables (first wins on equal name+address) and groups aliases by address, sorted by address. */
export function groupSymbols(tables: FunctionSymbol[][]): { symbols: FunctionSymbol[]; groups: SymbolGroup[] } {
  // One stable sort and a linear pass: Maps keyed by bigint (or by strings built from them) cost seconds on
  // binaries with ~100k symbols.
  const all = tables.flat();
  const order = addressOrder(all);
  const symbols: FunctionSymbol[] = [];
  const groups: SymbolGroup[] = [];
  let g: SymbolGroup | undefined;
  for (let k = 0; k < order.length; k++) {
    const s = all[order[k]];
    if (!g || g.address !== s.address) {
      g = { address: s.address, size: s.size, symbols: [s] };
      groups.push(g);
      symbols.push(s);
      continue;
    }
    if (g.symbols.some((x) => x.name === s.name)) continue;
    g.symbols.push(s);
    symbols.push(s);
    if (s.size > g.size) g.size = s.size;
  }
  return { symbols, groups };
}

/**
 * The symbols' indexes by address, equal addresses in table order. An address's high and low words are exact
 * numbers (a kernel's addresses, above 2^53, tie as doubles within 2 KiB of each other): by high word, then a
 * native sort of low word · 2^21 + index (exact below 2^53) for each; a comparator where there are more symbols
 * or high words.
 */
function addressOrder(all: readonly FunctionSymbol[]): Uint32Array {
  const n = all.length;
  const hi = new Float64Array(n);
  const lo = new Float64Array(n);
  const his: number[] = [];
  // The words through an 8-byte scratch view: shifting and masking a bigint makes two more bigints per symbol.
  const word = new DataView(new ArrayBuffer(8));
  for (let i = 0; i < n; i++) {
    word.setBigUint64(0, all[i].address);
    hi[i] = word.getUint32(0);
    lo[i] = word.getUint32(4);
    if (his.length <= 8 && !his.includes(hi[i])) his.push(hi[i]);
  }
  const order = new Uint32Array(n);
  for (let i = 0; i < n; i++) order[i] = i;
  // Real files have one or two high words (user space, a kernel's top 4 GiB); a file with many is sorted slowly.
  if (n >= 2 ** 21 || his.length > 8) return order.sort((i, j) => hi[i] - hi[j] || lo[i] - lo[j] || i - j);
  his.sort((a, b) => a - b);
  let k = 0;
  for (let h = 0; h < his.length; h++) {
    let m = 0;
    for (let i = 0; i < n; i++) if (hi[i] === his[h]) m++;
    const keys = new Float64Array(m);
    m = 0;
    for (let i = 0; i < n; i++) if (hi[i] === his[h]) keys[m++] = lo[i] * 2 ** 21 + i;
    keys.sort();
    for (let q = 0; q < m; q++) order[k++] = keys[q] % 2 ** 21;
  }
  return order;
}

export function checkStrtab(sections: RawSection[], table: RawSection): RawSection {
  const s = sections[table.link];
  if (!s || table.link === 0) {
    throw new ElfFormatError(table.name, undefined, `sh_link ${table.link} names no string table`);
  }
  return s;
}

// Small in-place edits of a real ELF64 little-endian file's headers, for tests that need one field hostile
// while everything else stays genuine (a section's size, its flags, e_type, e_machine).
import { readFileSync, writeFileSync } from 'node:fs';

interface SectionHeader {
  /** File offset of the section header itself. */
  at: number;
  name: string;
  offset: number;
  size: number;
}

export function sectionHeaders(b: Buffer): SectionHeader[] {
  const shoff = Number(b.readBigUInt64LE(0x28));
  const shentsize = b.readUInt16LE(0x3a);
  const shnum = b.readUInt16LE(0x3c);
  const shstrndx = b.readUInt16LE(0x3e);
  const strOff = Number(b.readBigUInt64LE(shoff + shstrndx * shentsize + 0x18));
  return Array.from({ length: shnum }, (_, i) => {
    const at = shoff + i * shentsize;
    const nameOff = strOff + b.readUInt32LE(at);
    return {
      at,
      name: b.toString('latin1', nameOff, b.indexOf(0, nameOff)),
      offset: Number(b.readBigUInt64LE(at + 0x18)),
      size: Number(b.readBigUInt64LE(at + 0x20)),
    };
  });
}

/** Rewrites one section header's sh_size and/or ORs bits into its sh_flags; writes `out`. */
export function patchSection(bin: string, out: string, name: string, edit: { size?: bigint; flags?: bigint }): void {
  const b = readFileSync(bin);
  const s = sectionHeaders(b).find((x) => x.name === name);
  if (!s) throw new Error(`${bin} has no ${name} section`);
  if (edit.size !== undefined) b.writeBigUInt64LE(edit.size, s.at + 0x20);
  if (edit.flags !== undefined) b.writeBigUInt64LE(b.readBigUInt64LE(s.at + 0x08) | edit.flags, s.at + 0x08);
  writeFileSync(out, b, { mode: 0o755 });
}

/** Rewrites e_type (16) and/or e_machine (18) of the ELF header; writes `out`. */
export function patchHeader(bin: string, out: string, edit: { type?: number; machine?: number }): void {
  const b = readFileSync(bin);
  if (edit.type !== undefined) b.writeUInt16LE(edit.type, 16);
  if (edit.machine !== undefined) b.writeUInt16LE(edit.machine, 18);
  writeFileSync(out, b, { mode: 0o755 });
}

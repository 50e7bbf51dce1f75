// ELF notes (SHT_NOTE sections and PT_NOTE segments): namesz, descsz, type, then name and descriptor each
// padded to the note's alignment (4, or 8 for notes in 8-aligned sections such as .note.gnu.property).
import { elfReader } from './byteReader';

export interface ElfNote {
  owner: string;
  type: number;
  desc: Uint8Array;
  /** Offset of desc inside the note region (for error messages). */
  descOffset: number;
}

export const NT_GNU_BUILD_ID = 3;
export const NT_STAPSDT = 3;
export const NT_GO_BUILDID = 4;

export function parseNotes(bytes: Uint8Array, littleEndian: boolean, align: number, where: string, fileOffset: number): ElfNote[] {
  const a = align === 8 ? 8 : 4;
  const c = elfReader(bytes, littleEndian, where, fileOffset);
  const notes: ElfNote[] = [];
  while (c.left >= 12) {
    const namesz = c.u32();
    const descsz = c.u32();
    const type = c.u32();
    const nameBytes = c.bytes(namesz);
    c.align(a);
    const descOffset = c.pos;
    const desc = c.bytes(descsz);
    c.align(a);
    const nul = nameBytes.indexOf(0);
    const owner = Buffer.from(nameBytes.subarray(0, nul < 0 ? nameBytes.length : nul)).toString('latin1');
    notes.push({ owner, type, desc, descOffset });
  }
  return notes;
}

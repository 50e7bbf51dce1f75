// The subset of elfy 1.0.0's result that elfyAdapter.ts reads; elfy ships no types. Only the adapter may import it.
// Tests: test/unit/core/binary/elfFile.test.ts
declare module 'elfy' {
  interface ElfyProgram {
    type: string | number;
    offset: number;
    vaddr: number;
    filesz: number;
  }
  interface ElfySection {
    name: string;
    type: string | number;
    link: number;
    info: number;
    off: number;
    size: number;
  }
  interface ElfyFile {
    class: '32' | '64';
    endian: 'lsb' | 'msb';
    machine: string | undefined;
    type: string | undefined;
    phnum: number;
    shnum: number;
    shstrndx: number;
    body: { programs: ElfyProgram[]; sections: ElfySection[] };
  }
  export function parse(buf: Buffer): ElfyFile;
}

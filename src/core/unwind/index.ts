// CFA lookups for a binary: .eh_frame from the executable (always loaded, so never stripped), else
// .debug_frame from wherever the DWARF lives.
// Tests: test/unit/cli/inspect.test.ts, test/integration/lines.test.ts
import type { BinaryImage } from '../binary/binaryImage';
import { CallFrameInfo, type CfaRule } from './cfi';

export { CallFrameInfo, CfiError, type CfaRule } from './cfi';

export function callFrameInfo(image: BinaryImage): CallFrameInfo | undefined {
  const eh = image.elf.section('.eh_frame');
  const ehBytes = eh ? image.elf.sectionContents('.eh_frame') : undefined;
  if (eh && ehBytes && ehBytes.length > 0)
    return new CallFrameInfo(ehBytes, Number(eh.addr), image.elf.addressSize, image.elf.littleEndian, true);
  const owner = image.debugElf ?? image.elf;
  const df = owner.section('.debug_frame');
  const dfBytes = df ? owner.sectionContents('.debug_frame') : undefined;
  if (df && dfBytes && dfBytes.length > 0) return new CallFrameInfo(dfBytes, Number(df.addr), owner.addressSize, owner.littleEndian, false);
  return undefined;
}

export type { CfaRule as Cfa };

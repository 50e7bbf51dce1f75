// On-demand DWARF access for what the full index leaves out (locals, struct layouts, locations at arbitrary
// addresses). The binary is read range by range, as the index reads it: a kernel's 590 MB image is not read whole
// to place a few functions (its descriptor closes when the access is collected: see fileBytes.ts). Callers keep one
// DebugAccess per binary for a session.
// Tests: test/unit/core/index/debugAccess.test.ts, test/unit/core/probes/compiler.test.ts, test/unit/cli/inspect.test.ts
import { openBinary, type BinaryImage } from '../binary/binaryImage';
import { openDwarf, type Dwarf } from '../dwarf';

export interface DebugAccess {
  image: BinaryImage;
  dwarf: Dwarf;
}

export class NoDebugInfoError extends Error {
  constructor(readonly path: string) {
    super(
      `${path} has no DWARF debug information and no separate debug file was found: rebuild with -g, or install its debug file (by build-id under /usr/lib/debug/.build-id or next to it via .gnu_debuglink)`,
    );
    this.name = 'NoDebugInfoError';
  }
}

export async function openDebugAccess(path: string, debugDirs?: string[]): Promise<DebugAccess> {
  const image = await openBinary(path, { debugDirs, readOnDemand: true });
  if (!image.hasDwarf) {
    image.close();
    throw new NoDebugInfoError(path);
  }
  return { image, dwarf: openDwarf(image.dwarf(), image.elf.requireProbeableArch()) };
}

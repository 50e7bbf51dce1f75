// On-demand DWARF access for what the full index leaves out (locals, struct layouts, locations at arbitrary
// addresses). Opening re-reads the binary, so callers keep one DebugAccess per binary for a session.
// Tests: test/unit/core/probes/compiler.test.ts, test/unit/cli/inspect.test.ts
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
  const image = await openBinary(path, { debugDirs });
  if (!image.hasDwarf) throw new NoDebugInfoError(path);
  return { image, dwarf: openDwarf(image.dwarf(), image.elf.requireProbeableArch()) };
}

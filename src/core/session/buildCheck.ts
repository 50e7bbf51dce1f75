// Is the target running the build ProbeLens indexed? Before any probe is written, a program's file on the target,
// the running kernel (its /sys/kernel/notes) or a loaded module (/sys/module/NAME/notes) is compared by GNU build-id
// with the local file the probes were placed from; another build is refused naming both ids, and a module that is
// not loaded is refused (a kprobe on it would wait, silently, for its load).
// Tests: test/vm/kernelDwarf.test.ts, test/vm/kernelModule.test.ts, test/e2e/kernelLens.test.ts, test/integration/capture.test.ts
import type { BinaryIndex } from '../index/binaryIndex';
import { readBinaryIdentity } from '../index/identity';
import type { CompiledProbe } from '../probes/compiler';
import { AgentError, type TracefsAgent } from '../tracefs/agentClient';

/** The running kernel's notes (its build-id among them), as the image's PT_NOTE segment holds them. */
const KERNEL_NOTES = '/sys/kernel/notes';

/** Where a loaded module's build-id note is: /sys/module/NAME/notes/.note.gnu.build-id (the section's bytes). */
export const moduleNotes = (module: string): string => `/sys/module/${module}/notes/.note.gnu.build-id`;

/** The module a .ko's probes are for is not loaded on the target (a kprobe on it would wait, silently, for its load). */
export class ModuleNotLoadedError extends Error {
  constructor(
    readonly host: string,
    readonly module: string,
    path: string,
  ) {
    super(`module ${module} is not loaded on ${host} (no ${path}): load it (modprobe ${module}) and trace again; nothing was armed`);
    this.name = 'ModuleNotLoadedError';
  }
}

export class BuildIdMismatchError extends Error {
  constructor(
    readonly host: string,
    readonly path: string,
    detail: string,
    what: 'binary' | 'kernel' | { module: string } = 'binary',
  ) {
    super(
      what === 'kernel'
        ? `kernel on ${host} differs from the local vmlinux (${path}: ${detail}): use the vmlinux of the kernel it runs, or pass --no-build-id-check`
        : typeof what === 'object'
          ? `module ${what.module} on ${host} differs from the local .ko (${path}: ${detail}): use the .ko (with its debug information) of the module it runs, or pass --no-build-id-check`
          : `binary on ${host} differs from the local build (${path}: ${detail}): rebuild or deploy it, or pass --no-build-id-check`,
    );
    this.name = 'BuildIdMismatchError';
  }
}

/**
 * Compares `index`'s build with the target's before anything is written: the running kernel's or the loaded
 * module's for kernel probes, else the file at `remotePath` (and the local file with the index, which a rebuild may
 * have overtaken). A file without a GNU build-id is not compared.
 */
export async function checkTargetBuild(
  agent: Pick<TracefsAgent, 'checkBuildId'>,
  host: string,
  index: BinaryIndex,
  probes: readonly CompiledProbe[],
  remotePath: string,
): Promise<void> {
  const id = readBinaryIdentity(index.path);
  // Kernel probes are about the running kernel: its build-id is in /sys/kernel/notes, the kernel's own copy of the
  // image's note segment.
  if (probes.some((p) => p.definition.target.type === 'kprobe')) {
    // A module's .ko is compared with the loaded module's own copy of its build-id note section.
    const module = probes.map((p) => (p.definition.target.type === 'kprobe' ? p.definition.target.module : undefined)).find((m) => m);
    const notes = module ? moduleNotes(module) : KERNEL_NOTES;
    if (id.buildId && id.buildIdNoteOffset !== undefined && id.buildIdLength !== undefined) {
      try {
        await agent.checkBuildId(notes, id.buildIdNoteOffset, id.buildIdLength, id.buildId);
      } catch (e) {
        if (e instanceof AgentError && e.code === 'EMISMATCH')
          throw new BuildIdMismatchError(
            host,
            notes,
            `the ${module ? 'loaded module' : 'running kernel'}'s build-id is ${foundId(e)}, ${index.path} is build ${id.buildId}`,
            module ? { module } : 'kernel',
          );
        if (module && e instanceof AgentError && e.code === 'ENOENT') throw new ModuleNotLoadedError(host, module, notes);
        throw e;
      }
    }
  } else {
    if (id.buildId && id.buildIdOffset !== undefined && id.buildIdLength !== undefined) {
      if (id.buildId !== index.buildId)
        throw new BuildIdMismatchError(
          'this machine',
          index.path,
          `the index is of build ${index.buildId}, the file is now ${id.buildId}; re-index`,
        );
      try {
        await agent.checkBuildId(remotePath, id.buildIdOffset, id.buildIdLength, id.buildId);
      } catch (e) {
        if (e instanceof AgentError && e.code === 'EMISMATCH')
          throw new BuildIdMismatchError(host, remotePath, `its build-id is ${foundId(e)}, ${index.path} is build ${id.buildId}`);
        throw e;
      }
    }
  }
}

/** The build-id the agent read where the note should be (bytes in hex), or what it found instead. */
function foundId(e: AgentError): string {
  return /^[0-9a-f]+$/.test(e.reply) ? e.reply : e.reply ? `unreadable (${e.reply})` : 'absent (the file ends before the note)';
}

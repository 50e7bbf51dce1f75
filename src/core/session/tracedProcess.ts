// Which process a `--pid` names, and where its build is. A probe sits on an inode: a process in a container runs its
// own copy of the build (another inode), so a probe on the host's copy never fires there. Before arming, the agent
// finds the process (by its host PID or, where none runs the build, by its PID in its own namespace) and the file it
// runs the build from; the probes are then armed on that file, and a process that runs another build is refused.
// Tests: test/integration/containers.test.ts
import { basename } from 'node:path';
import type { BinaryIndex } from '../index/binaryIndex';
import { readBinaryIdentity } from '../index/identity';
import { AgentError, type BuildProcess, type TracefsAgent } from '../tracefs/agentClient';

/** The local file's name as the agent may match a mapped file by (null: only executables are looked at). */
export function mappedName(path: string): string | null {
  const name = basename(path);
  return /^[A-Za-z0-9._+@,=~-]{1,255}$/.test(name) ? name : null;
}

/** The build's GNU build-id bytes where the agent reads them, or undefined for a file without one. */
export function buildIdBytes(path: string): { offset: number; length: number; hex: string } | undefined {
  const id = readBinaryIdentity(path);
  if (!id.buildId || id.buildIdOffset === undefined || id.buildIdLength === undefined) return undefined;
  return { offset: id.buildIdOffset, length: id.buildIdLength, hex: id.buildId };
}

/**
 * The process `pid` names on `host` and the path its copy of `index`'s build has there; a sentence when no such
 * process runs the build. Undefined when the build has no build-id to recognise it by (the pid filter then applies
 * to the file at the traced path, as without containers).
 */
export async function tracedProcess(
  agent: Pick<TracefsAgent, 'processOf'>,
  host: string,
  index: BinaryIndex,
  pid: number,
): Promise<BuildProcess | undefined> {
  const id = buildIdBytes(index.path);
  if (!id) return undefined;
  try {
    return await agent.processOf(pid, id.offset, id.length, id.hex, mappedName(index.path));
  } catch (e) {
    if (!(e instanceof AgentError)) throw e;
    const build = `${index.path}'s build (build-id ${id.hex})`;
    if (e.code === 'ESRCH') throw new Error(`no process ${pid} on ${host}, in any PID namespace, runs ${build}; nothing was armed`);
    if (e.code === 'ENOTBUILD')
      throw new Error(
        `process ${pid} on ${host} does not run ${build}: neither its executable nor a file it maps holds that build-id, so no probe would fire in it; nothing was armed`,
      );
    if (e.code === 'EAMBIGUOUS') {
      const hostPids = e.reply.split(' ').slice(1);
      throw new Error(
        `several processes on ${host} run ${build} as PID ${pid} in their own namespaces (host PIDs ${hostPids.join(', ')}): name one by its host PID; nothing was armed`,
      );
    }
    throw e;
  }
}

// `probelens ps BIN`: the processes on each target that run BIN's build — its executable, or a library they map,
// holds BIN's GNU build-id — in any mount and PID namespace (a container's too), with the PID on the target and the
// PID in the process's own namespace, and where the target arms that process's copy of the build.
// Tests: test/integration/containers.test.ts
import { buildIdBytes, mappedName } from '../../core/session/tracedProcess';
import type { BuildProcess } from '../../core/tracefs/agentClient';
import { toJson } from '../../shared/hitJson';
import { nameRecord } from '../../shared/names';
import { parseArgs, UsageError } from '../args';
import type { Io } from './inspect';
import { SSH_OPTS, withEachAgent } from './trace';

export async function psCommand(argv: string[], io: Io): Promise<number> {
  const args = parseArgs(argv, nameRecord({ ...SSH_OPTS, json: { kind: 'flag' } }));
  if (args.positionals.length !== 1) throw new UsageError('ps takes one BIN: the local build whose processes to list');
  const bin = args.positionals[0];
  const id = buildIdBytes(bin);
  if (!id) throw new Error(`${bin} has no GNU build-id: the processes running it cannot be told from others'`);
  const json = args.flags.has('json');
  const hosts = args.values.get('host') ?? ['local'];
  const rows: Array<BuildProcess & { host: string }> = [];
  const failed = await withEachAgent(args, hosts, async (agent, host) => {
    for (const p of await agent.processes(id.offset, id.length, id.hex, mappedName(bin))) rows.push({ host, ...p });
  });
  if (json) io.out(`${toJson({ buildId: id.hex, processes: rows })}\n`);
  else {
    const table = [['HOST', 'PID', 'NSPID', 'PATH'], ...rows.map((r) => [r.host, String(r.pid), String(r.nsPid), r.path])];
    const width = table[0].map((_, i) => Math.max(...table.map((row) => row[i].length)));
    for (const row of table) io.out(`${row.map((c, i) => (i < row.length - 1 ? c.padEnd(width[i]) : c)).join('  ')}\n`);
    if (!rows.length) io.out(`no process on ${hosts.join(', ')} runs ${bin}'s build (build-id ${id.hex})\n`);
  }
  return failed ? 1 : 0;
}

// `probelens ps BIN`: the processes on each target that run BIN's build — its executable, or a library they map,
// holds BIN's GNU build-id — in any mount and PID namespace (a container's too), with the PID on the target and the
// PID in the process's own namespace, and where the target arms that process's copy of the build.
// Tests: test/integration/containers.test.ts
import { buildIdBytes, mappedName } from '../../core/session/tracedProcess';
import type { Target } from '../../core/target/target';
import { TracefsAgent, type BuildProcess } from '../../core/tracefs/agentClient';
import { toJson } from '../../shared/hitJson';
import { nameRecord } from '../../shared/names';
import { parseArgs, UsageError } from '../args';
import type { Io } from './inspect';
import { connector, SSH_OPTS, useSudo } from './trace';

export async function psCommand(argv: string[], io: Io): Promise<number> {
  const args = parseArgs(argv, nameRecord({ ...SSH_OPTS, json: { kind: 'flag' } }));
  if (args.positionals.length !== 1) throw new UsageError('ps takes one BIN: the local build whose processes to list');
  const bin = args.positionals[0];
  const id = buildIdBytes(bin);
  if (!id) throw new Error(`${bin} has no GNU build-id: the processes running it cannot be told from others'`);
  const json = args.flags.has('json');
  const hosts = args.values.get('host') ?? ['local'];
  const connect = connector(args, (m) => process.stderr.write(`probelens: ${m}\n`));
  const rows: Array<BuildProcess & { host: string }> = [];
  let failed = 0;
  for (const host of hosts) {
    let target: Target | undefined;
    try {
      target = await connect(host);
      const agent = await TracefsAgent.start(target, { sudo: useSudo(args, host) });
      try {
        for (const p of await agent.processes(id.offset, id.length, id.hex, mappedName(bin))) rows.push({ host, ...p });
      } finally {
        await agent.stop();
        await agent.exit;
      }
    } catch (e) {
      failed++;
      process.stderr.write(`probelens: ${host}: ${e instanceof Error ? e.message : String(e)}\n`);
    } finally {
      await target?.close().catch(() => undefined);
    }
  }
  if (json) io.out(`${toJson({ buildId: id.hex, processes: rows })}\n`);
  else {
    const table = [['HOST', 'PID', 'NSPID', 'PATH'], ...rows.map((r) => [r.host, String(r.pid), String(r.nsPid), r.path])];
    const width = table[0].map((_, i) => Math.max(...table.map((row) => row[i].length)));
    for (const row of table) io.out(`${row.map((c, i) => (i < row.length - 1 ? c.padEnd(width[i]) : c)).join('  ')}\n`);
    if (!rows.length) io.out(`no process on ${hosts.join(', ')} runs ${bin}'s build (build-id ${id.hex})\n`);
  }
  return failed ? 1 : 0;
}

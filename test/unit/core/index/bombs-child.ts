// Child of bombs.test.ts: indexes one file the way the CLI does (in a worker, under the scaled limits, no
// cache) and prints what happened with the CPU time and peak memory of the whole process (worker included).
import { loadIndex } from '../../../../src/core/index/load';

async function main(): Promise<void> {
  const before = process.cpuUsage();
  let result: { ok: boolean; message?: string; functions?: number };
  try {
    const { index } = await loadIndex(process.argv[2], { noCache: true, inWorker: true });
    result = { ok: true, functions: index.data.functions.length };
  } catch (e) {
    result = { ok: false, message: (e as Error).message };
  }
  const cpu = process.cpuUsage(before);
  const maxRssMb = process.resourceUsage().maxRSS / 1024;
  process.stdout.write(`${JSON.stringify({ ...result, cpuMs: (cpu.user + cpu.system) / 1000, maxRssMb })}\n`);
}

void main();

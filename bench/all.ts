// npm run bench:all [-- --skip NAME,…] [--only NAME,…]
// Every benchmark of package.json (`bench:*`) in one run, one after the other, so docs/benchmarks.md's table is measured
// in one sitting: each benchmark prints its figures beside its own baselines; this adds the commit, the machine and
// the load average before and after each, and how long each took. The output is also written to
// bench-results/all-<time>.log (not committed). bench:parity is left out unless named in --only: it is a
// placement table over the whole corpus (see its header), not a speed figure.
import { execFileSync, spawn } from 'node:child_process';
import { createWriteStream, mkdirSync, readFileSync } from 'node:fs';
import { cpus, loadavg, totalmem } from 'node:os';
import { join } from 'node:path';

const root = join(__dirname, '..');
const pkg = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')) as { scripts: Record<string, string> };
const argv = process.argv.slice(2);
const list = (flag: string): string[] | undefined => {
  const i = argv.indexOf(flag);
  return i < 0 ? undefined : (argv[i + 1] ?? '').split(',').filter(Boolean);
};
const only = list('--only');
const skip = new Set(list('--skip') ?? []);
const names = Object.keys(pkg.scripts)
  .filter((s) => s.startsWith('bench:') && s !== 'bench:all')
  .map((s) => s.slice('bench:'.length))
  .filter((n) => (only ? only.includes(n) : n !== 'parity' && !skip.has(n)));

mkdirSync(join(root, 'bench-results'), { recursive: true });
const stamp = new Date().toISOString().replace(/[:.]/g, '-');
const logPath = join(root, 'bench-results', `all-${stamp}.log`);
const log = createWriteStream(logPath);
const say = (s: string) => {
  process.stdout.write(s);
  log.write(s);
};
const load = () =>
  loadavg()
    .map((x) => x.toFixed(1))
    .join(' ');
let commit = '?';
try {
  commit = execFileSync('git', ['rev-parse', '--short', 'HEAD'], { cwd: root, encoding: 'utf8' }).trim();
} catch {
  // not a git checkout
}
say(
  `# bench:all at ${new Date().toISOString()}, commit ${commit}, ${cpus().length} CPUs (${cpus()[0]?.model ?? '?'}), ` +
    `${Math.round(totalmem() / 2 ** 30)} GiB, node ${process.version}; benchmarks: ${names.join(', ')}\n`,
);

async function main(): Promise<void> {
  const results: Array<{ name: string; code: number | null; seconds: number; before: string; after: string }> = [];
  for (const name of names) {
    const before = load();
    say(`\n## bench:${name} (load average ${before})\n`);
    const t0 = Date.now();
    const code = await new Promise<number | null>((resolve) => {
      const child = spawn('npm', ['run', '--silent', `bench:${name}`], { cwd: root, stdio: ['ignore', 'pipe', 'pipe'] });
      child.stdout.on('data', (d: Buffer) => say(d.toString()));
      child.stderr.on('data', (d: Buffer) => say(d.toString()));
      child.on('close', (c) => resolve(c));
    });
    const seconds = (Date.now() - t0) / 1000;
    const after = load();
    results.push({ name, code, seconds, before, after });
    say(`## bench:${name} ${code === 0 ? 'done' : `FAILED (exit ${code})`} in ${seconds.toFixed(0)} s (load average ${after})\n`);
  }
  say('\n# summary\n');
  for (const r of results)
    say(
      `bench:${r.name.padEnd(10)} ${r.code === 0 ? 'ok    ' : 'FAILED'} ${r.seconds.toFixed(0).padStart(5)} s   load ${r.before} → ${r.after}\n`,
    );
  say(`(written to ${logPath})\n`);
  log.end();
  process.exitCode = results.some((r) => r.code !== 0) ? 1 : 0;
}

void main();

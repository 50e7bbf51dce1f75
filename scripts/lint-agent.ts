// `npm run lint`'s check of the target-side agent (src/core/tracefs/agent/): shellcheck on the composed script as
// POSIX sh, its findings named by the file and line they come from, and the lease guards compiled by perl and python3.
import { spawnSync } from 'node:child_process';
import { join } from 'node:path';
import { agentLines, AGENT_FILES } from '../src/core/tracefs/agentScript';

interface Finding {
  line: number;
  column: number;
  level: string;
  code: number;
  message: string;
}

const AGENT_DIR = join(__dirname, '..', 'src', 'core', 'tracefs', 'agent');
let failed = false;

function run(cmd: string, args: string[], input?: string) {
  const r = spawnSync(cmd, args, { input, encoding: 'utf8', maxBuffer: 64 << 20 });
  if (r.error) {
    const missing = (r.error as NodeJS.ErrnoException).code === 'ENOENT';
    console.error(
      missing
        ? `lint-agent: ${cmd} is not installed (Debian package ${cmd === 'python3' ? 'python3' : cmd})`
        : `lint-agent: ${cmd}: ${r.error.message}`,
    );
    process.exit(2);
  }
  return r;
}

const lines = agentLines(AGENT_FILES[0]);
const sc = run('shellcheck', ['--shell=sh', '--format=json1', '-'], lines.map((l) => l.text).join('\n') + '\n');
const comments = (JSON.parse(sc.stdout || '{"comments":[]}') as { comments: Finding[] }).comments;
for (const c of comments) {
  const at = lines[c.line - 1];
  console.error(`src/core/tracefs/agent/${at.file}:${at.line}:${c.column}: ${c.level}: ${c.message} [SC${c.code}]`);
  failed = true;
}
if (sc.status !== 0 && comments.length === 0) {
  console.error(`lint-agent: shellcheck failed: ${sc.stderr}`);
  failed = true;
}

const perl = run('perl', ['-c', join(AGENT_DIR, 'lease.pl')]);
if (perl.status !== 0) {
  console.error(perl.stderr);
  failed = true;
}
const py = run('python3', ['-c', 'import ast, sys; ast.parse(open(sys.argv[1]).read(), sys.argv[1])', join(AGENT_DIR, 'lease.py')]);
if (py.status !== 0) {
  console.error(py.stderr);
  failed = true;
}

if (failed) process.exit(1);
console.log(`lint-agent: ${lines.length} lines of agent clean (shellcheck --shell=sh, perl -c, python3)`);

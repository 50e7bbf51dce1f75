// The `probelens` command: its usage text, --version, and dispatch to the commands; every error ends in one
// sentence on stderr and exit status 1 (2 for a usage error).
// Tests: test/unit/cli/inspect.test.ts, test/unit/cli/messages.test.ts, test/unit/cli/files.test.ts, test/unit/cli/epipe.test.ts
import { PROBELENS_VERSION } from '../core/version';
import { batchedOut } from './batchedOut';
import { UsageError } from './args';
import { functionsCommand, linesCommand, usdtCommand, varsCommand, type Io } from './commands/inspect';
import { cleanupCommand, defineCommand, traceCommand } from './commands/trace';
import { psCommand } from './commands/ps';
import { nameRecord } from '../shared/names';

const USAGE = `probelens ${PROBELENS_VERSION} — dynamic tracing with uprobes

usage:
  probelens functions BIN [--match GLOB] [--json] [--no-cache]
  probelens functions kernel --btf FILE [--base-btf FILE] [--match GLOB] [--json]
  probelens lines     BIN SRC[:LINE]     [--json] [--no-cache]
  probelens vars      BIN POINT          [--json] [--no-cache]
  probelens usdt      BIN                [--json] [--no-cache]
  probelens define    BIN SPEC…          [--json] [--remote-path PATH] [--max-sites N] [--disable-site 0xADDR]…
  probelens define    kernel SPEC…       [--btf FILE [--kallsyms FILE] | --host …] [--json]
  probelens trace     BIN SPEC… [--host [USER@]HOST[:PORT]]… [--identity FILE] [--known-hosts FILE] [--accept-new]
                      [--remote-path PATH] [--pid N] [--filter EXPR] [--duration SECONDS] [--count N] [--json]
                      [--no-build-id-check] [--buffer-kb N] [--sudo] [--max-sites N] [--disable-site 0xADDR]…
                      [--aggregate] [--by KEY]… [--maxactive N]
  probelens cleanup   [--host …] [--identity FILE] [--known-hosts FILE] [--sudo] [--force GROUP]…
  probelens ps        BIN [--host …] [--identity FILE] [--known-hosts FILE] [--sudo] [--json]

SPEC is a point and its arguments in one word (quote it): 'add_ints a b', 'deposit%return $retval',
'calls.c:42 acct->balance', 'sdt:app:request arg1'.

BIN 'kernel' (in trace and define) is the target's running kernel without a vmlinux: functions by name from its
/proc/kallsyms, parameters from its BTF (/sys/kernel/btf/vmlinux), entry and %return only.

POINT is FUNC[@SRC][:RLN|+OFFS] or SRC:LINE (perf probe's syntax). --debug-dir DIR (repeatable) adds a
directory searched for separate debug files. Exit status is 0 on success, 1 on an error, 2 on bad usage.
Indexing runs under time and memory limits scaled to the binary's DWARF; PROBELENS_INDEX_TIME_LIMIT (seconds)
and PROBELENS_INDEX_MEMORY_LIMIT_MB in the environment fix them instead.
`;

const COMMANDS: Record<string, (argv: string[], io: Io) => Promise<void | number>> = nameRecord({
  functions: functionsCommand,
  lines: linesCommand,
  vars: varsCommand,
  usdt: usdtCommand,
  define: defineCommand,
  trace: traceCommand,
  cleanup: cleanupCommand,
  ps: psCommand,
});

// A reader that goes away (`probelens functions BIN | head -1`) is no error: output stops, a trace is stopped and
// cleaned up as on Ctrl-C, and the command ends with its own status. Without a listener Node throws the EPIPE.
let stdoutClosed = false;
let onStdoutClosed: () => void = () => undefined;
const stdoutGone = new Promise<void>((res) => (onStdoutClosed = res));
process.stdout.on('error', (e: NodeJS.ErrnoException) => {
  if (e.code !== 'EPIPE') throw e;
  stdoutClosed = true;
  onStdoutClosed();
});
process.stderr.on('error', (e: NodeJS.ErrnoException) => {
  if (e.code !== 'EPIPE') throw e;
});

async function main(argv: string[]): Promise<number> {
  const [cmd, ...rest] = argv;
  if (!cmd || cmd === '--help' || cmd === '-h' || cmd === 'help') {
    process.stdout.write(USAGE);
    return 0;
  }
  if (cmd === '--version') {
    process.stdout.write(`${PROBELENS_VERSION}\n`);
    return 0;
  }
  const run = COMMANDS[cmd];
  if (!run) {
    process.stderr.write(`probelens: unknown command '${cmd}'; run 'probelens --help' for the list.\n`);
    return 2;
  }
  const stdout = batchedOut((bytes) => {
    if (!stdoutClosed) process.stdout.write(bytes);
  });
  const io: Io = {
    out: (text) => {
      if (!stdoutClosed) stdout.out(text);
    },
    closed: stdoutGone,
  };
  try {
    return (await run(rest, io)) ?? 0;
  } catch (e) {
    return report(e);
  } finally {
    stdout.flush();
  }
}

function report(e: unknown): number {
  if (e instanceof UsageError) {
    process.stderr.write(`probelens: ${e.message}; run 'probelens --help' for usage.\n`);
    return 2;
  }
  const err = e as NodeJS.ErrnoException;
  if (err && (err.code === 'ENOENT' || err.code === 'EACCES') && err.path) {
    process.stderr.write(`probelens: ${err.code === 'ENOENT' ? 'no such file' : 'permission denied'}: ${err.path}\n`);
    return 1;
  }
  const msg = e instanceof Error ? e.message : String(e);
  process.stderr.write(`probelens: ${msg.split('\n')[0]}\n`);
  if (process.env.PROBELENS_DEBUG && e instanceof Error && e.stack) process.stderr.write(`${e.stack}\n`);
  return 1;
}

void main(process.argv.slice(2)).then((code) => {
  process.exitCode = code;
});

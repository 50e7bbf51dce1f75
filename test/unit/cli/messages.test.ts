// Every way a file or a target can be wrong ends in one ProbeLens sentence on stderr that names the file or
// target and says what to do, exit status 1, and nothing else (no Node warning, no JavaScript error):
// a PowerPC64 header (before: elfy's TypeError), a core dump (before: `functions` exited 0 printing nothing),
// a .debug_info claiming 2^40 bytes (before: TimeoutOverflowWarning, then a false "time limit" error), and a
// uprobe_events that is read-only for root (before: "needs root or passwordless sudo"). Directories and
// symbolic-link loops are in files.test.ts. The timeout only catches a hang; each run prints its time.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { test, type TestContext } from 'node:test';
import { ElfFile } from '../../../src/core/binary/elfFile';
import { indexLimitsFor } from '../../../src/core/index/load';
import { MAX_TIME_LIMIT_SECONDS, scaledLimits } from '../../../src/core/index/worker/limits';
import { buildC, CALLS_C, have } from '../core/binary/build';
import { patchHeader, patchSection } from '../../helpers/elfPatch';
import { missing } from '../../helpers/require';
import { requireTracefs, TRACEFS } from '../../helpers/tracefs';

const MAIN = resolve(__dirname, '../../../src/cli/main.ts');
const HANG_MS = 120_000;
const dir = mkdtempSync(join(tmpdir(), 'probelens-messages-'));

function cli(t: TestContext, args: string[], wrap: string[] = []) {
  const t0 = Date.now();
  const cmd = [...wrap, process.execPath, '--import', 'tsx', MAIN, ...args];
  const r = spawnSync(cmd[0], cmd.slice(1), {
    encoding: 'utf8',
    timeout: HANG_MS,
    killSignal: 'SIGKILL',
    env: { ...process.env, XDG_CACHE_HOME: join(dir, 'xdg') },
  });
  t.diagnostic(`probelens ${args.join(' ')}: ${Date.now() - t0} ms`);
  assert.equal(r.signal, null, `probelens ${args.join(' ')} did not end within ${HANG_MS} ms (a hang)`);
  return { code: r.status, out: r.stdout, err: r.stderr };
}

/** Exit 1, nothing on stdout, and exactly `probelens: SENTENCE` on stderr. */
function refused(r: { code: number | null; out: string; err: string }, sentence: string | RegExp): void {
  assert.equal(r.code, 1, r.err);
  assert.equal(r.out, '');
  assert.equal(r.err.split('\n').length, 2, `one line: ${r.err}`);
  if (typeof sentence === 'string') assert.equal(r.err, `probelens: ${sentence}\n`);
  else assert.match(r.err.trimEnd(), sentence);
}

let calls: string | undefined;
function callsBinary(t: TestContext): string | undefined {
  if (!have('gcc')) {
    missing(t, 'gcc (builds the binary)');
    return undefined;
  }
  return (calls ??= buildC('messages-calls', CALLS_C, ['-g', '-O0']));
}

/** An ELF header alone: class 1/2, byte order 1 (LE) / 2 (BE), executable, machine `machine`, no tables. */
function headerOnly(name: string, cls: 1 | 2, order: 1 | 2, machine: number): string {
  const b = Buffer.alloc(cls === 2 ? 64 : 52);
  b.write('\x7fELF', 0, 'latin1');
  b[4] = cls;
  b[5] = order;
  b[6] = 1;
  const u16 = (v: number, at: number) => (order === 1 ? b.writeUInt16LE(v, at) : b.writeUInt16BE(v, at));
  u16(2, 16); // ET_EXEC
  u16(machine, 18);
  u16(b.length, cls === 2 ? 52 : 40); // e_ehsize
  const path = join(dir, name);
  writeFileSync(path, b, { mode: 0o755 });
  return path;
}

test('a PowerPC64 (or PowerPC) binary: built for that machine, ProbeLens probes x86-64 and AArch64', (t) => {
  const cases: Array<[string, string]> = [
    [headerOnly('ppc64-be', 2, 2, 21), 'PowerPC64'],
    [headerOnly('ppc64-le', 2, 1, 21), 'PowerPC64'],
    [headerOnly('ppc-be', 1, 2, 20), 'PowerPC'],
  ];
  const bin = callsBinary(t);
  if (bin) {
    patchHeader(bin, join(dir, 'ppc64-real'), { machine: 21 });
    cases.push([join(dir, 'ppc64-real'), 'PowerPC64']);
  }
  for (const [path, machine] of cases) {
    for (const args of [
      ['functions', path],
      ['define', path, 'deposit amount'],
      ['usdt', path, '--no-cache'],
    ]) {
      refused(cli(t, args), `${path} is built for ${machine}; ProbeLens probes x86-64 and AArch64 binaries only: build for one of those`);
    }
  }
});

test('an ELF header without tables parses (elfy is not asked to name sections that are not there)', () => {
  for (const [path, machine] of [
    [headerOnly('bare-ppc64-be', 2, 2, 21), 'PowerPC64'],
    [headerOnly('bare-x86-64', 2, 1, 62), 'x86-64'],
    [headerOnly('bare-ppc-be', 1, 2, 20), 'PowerPC'],
  ]) {
    const elf = ElfFile.parse(readFileSync(path), path);
    assert.equal(elf.machineName, machine);
    assert.deepEqual([elf.sections.length, elf.segments.length], [0, 0]);
  }
});

test('a core dump is recognised as one, not listed as a program with no functions', (t) => {
  const bin = callsBinary(t);
  if (!bin) return;
  const core = join(dir, 'core.1234');
  patchHeader(bin, core, { type: 4 });
  for (const args of [
    ['functions', core],
    ['functions', core, '--no-cache'],
    ['vars', core, 'deposit'],
  ])
    refused(
      cli(t, args),
      `${core} is a core dump, not a program: point ProbeLens at the executable that crashed (\`file ${core}\` names it)`,
    );
});

test('a .debug_info claiming 2^40 bytes: the damage is reported, not a timer overflow or a time limit', (t) => {
  const bin = callsBinary(t);
  if (!bin) return;
  const huge = join(dir, 'huge-debug-info');
  patchSection(bin, huge, '.debug_info', { size: 2n ** 40n });
  const r = cli(t, ['functions', huge, '--no-cache']);
  assert.doesNotMatch(r.err, /TimeoutOverflowWarning|time limit/);
  refused(
    r,
    new RegExp(
      `^probelens: ${huge}: malformed ELF in \\.debug_info at offset 0x[0-9a-f]+: 1099511627776 bytes run past the end of the \\d+-byte file; rebuild the binary or check that the file was copied completely$`,
    ),
  );
});

test('time limits never exceed what a timer can wait, scaled or given', async (t) => {
  assert.equal(scaledLimits(2 ** 60).timeLimitSeconds, MAX_TIME_LIMIT_SECONDS);
  assert.ok(MAX_TIME_LIMIT_SECONDS * 1000 <= 2 ** 31 - 1);
  const bin = callsBinary(t);
  if (!bin) return;
  const l = await indexLimitsFor(bin, { limits: { timeLimitSeconds: 1e12 } });
  assert.equal(l.timeLimitSeconds, MAX_TIME_LIMIT_SECONDS);
});

test('uprobe_events read-only for root: said as such, with how to remount, naming the target', (t) => {
  if (process.getuid?.() !== 0) return missing(t, 'root (to mount tracefs read-only in a private mount namespace)');
  if (!have('unshare')) return missing(t, 'unshare');
  // Mounts tracefs where a freshly booted machine has not yet: the test binds that mount read-only below.
  const tracefs = requireTracefs(t);
  if (!tracefs) return;
  if (tracefs !== TRACEFS) return missing(t, `tracefs at ${TRACEFS} (the message names that path)`);
  const bin = callsBinary(t);
  if (!bin) return;
  // A private mount namespace whose tracefs is bound read-only: nothing outside it changes.
  const ro = 'mount --bind /sys/kernel/tracing /sys/kernel/tracing && mount -o remount,ro,bind /sys/kernel/tracing && exec "$@"';
  const r = cli(
    t,
    ['trace', bin, 'deposit amount', '--duration', '1'],
    ['unshare', '-m', '--propagation', 'private', 'sh', '-c', ro, 'sh'],
  );
  refused(
    r,
    'local: /sys/kernel/tracing/uprobe_events is read-only even for root (tracefs is mounted read-only, or kernel lockdown or a security module forbids it): remount it read-write (mount -o remount,rw /sys/kernel/tracing) or lift the restriction, then trace again',
  );
});

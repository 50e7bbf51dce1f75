import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { copyFileSync, existsSync, mkdirSync, mkdtempSync } from 'node:fs';
import { join } from 'node:path';
import { openBinary } from '../../../../src/core/binary/binaryImage';
import { parseUsdtArgs, type UsdtProbe } from '../../../../src/core/binary/usdt';
import { fixtureOrSkip } from '../../../helpers/fixtures';
import { missing } from '../../../helpers/require';
import { buildC, have, readelfSections, run, workDir } from './build';

interface ReadelfProbe {
  provider: string;
  name: string;
  location: bigint;
  base: bigint;
  semaphore: bigint;
  args: string;
}

function readelfProbes(bin: string): ReadelfProbe[] {
  const re =
    /Provider: (\S+)\s+Name: (\S+)\s+Location: (0x[0-9a-f]+), Base: (0x[0-9a-f]+), Semaphore: (0x[0-9a-f]+)\s+Arguments: ?([^\n]*)/g;
  return [...run('readelf', ['-n', bin]).matchAll(re)].map((m) => ({
    provider: m[1],
    name: m[2],
    location: BigInt(m[3]),
    base: BigInt(m[4]),
    semaphore: BigInt(m[5]),
    args: m[6].trim(),
  }));
}

/** perf probe -D's `BIN:0xOFF(0xREFCTR)` for one probe: the oracle for both file offsets. */
function perfSdt(bin: string, p: UsdtProbe): { offset: number; refctr?: number; output: string } {
  // perf answers sdt_ points from its build-id cache, so give it a private one holding just this binary
  // (the user's ~/.debug may lack it, or list other copies of the same build).
  const cache = mkdtempSync(join(workDir, 'perf-buildid-'));
  run('perf', ['--buildid-dir', cache, 'buildid-cache', '--add', bin]);
  const r = spawnSync('perf', ['--buildid-dir', cache, 'probe', '-x', bin, '-D', `sdt_${p.provider}:${p.name}`], { encoding: 'utf8' });
  const line = (r.stdout ?? '').split('\n').find((l) => l.includes(`${bin}:0x`)) ?? '';
  const m = line.match(/:0x([0-9a-f]+)(?:\(0x([0-9a-f]+)\))?/);
  return { offset: m ? parseInt(m[1], 16) : -1, refctr: m?.[2] ? parseInt(m[2], 16) : undefined, output: `${r.stdout}${r.stderr}` };
}

for (const name of ['usdt', 'usdt-O0'] as const) {
  test(`${name}: USDT probes equal readelf -n; pc, semaphore and their offsets equal perf probe -D`, async (t) => {
    const f = await fixtureOrSkip(t, name);
    if (!f) return;
    const image = await openBinary(f.path, { noSystemDebugDir: true });
    const probes = image.usdtProbes();
    const expected = readelfProbes(f.path);
    assert.ok(expected.length >= 3);
    const base = readelfSections(f.path).find((s) => s.name === '.stapsdt.base')!;
    const probesSec = readelfSections(f.path).find((s) => s.name === '.probes')!;
    assert.deepEqual(
      probes.map((p) => ({ provider: p.provider, name: p.name, location: p.address, semaphore: p.semaphore ?? 0n, args: p.argsText })),
      // Not prelinked: .stapsdt.base is where the note says, so the adjustment is zero.
      expected.map((e) => ({
        provider: e.provider,
        name: e.name,
        location: e.location + base.addr - e.base,
        semaphore: e.semaphore,
        args: e.args,
      })),
    );
    const guarded = probes.find((p) => p.name === 'guarded')!;
    assert.ok(guarded.semaphore);
    assert.equal(guarded.semaphoreFileOffset, Number(guarded.semaphore - probesSec.addr) + probesSec.offset);
    assert.ok(probes.some((p) => p.semaphore === undefined && p.semaphoreFileOffset === undefined));
    if (!have('perf')) return missing(t, 'perf (linux-perf) for the perf probe -D oracle');
    for (const p of probes) {
      const perf = perfSdt(f.path, p);
      assert.equal(p.fileOffset, perf.offset, `${p.name} offset; perf probe -D said: ${perf.output}`);
      assert.equal(p.semaphoreFileOffset, perf.refctr, `${p.name} semaphore offset`);
    }
    for (const p of probes) {
      for (const a of p.args) {
        assert.ok([1, 2, 4, 8].includes(a.size), `${p.name} ${a.text}`);
        assert.notEqual(a.operand.kind, 'unknown', `${p.name} ${a.text}`);
      }
    }
  });
}

test('AArch64 USDT notes: x/w registers and [base, offset] operands', async (t) => {
  if (!have('aarch64-linux-gnu-gcc')) return missing(t, 'gcc-aarch64-linux-gnu');
  const sdt = ['/usr/include/x86_64-linux-gnu/sys/sdt.h', '/usr/include/sys/sdt.h'].find((p) => existsSync(p));
  if (!sdt) return missing(t, 'systemtap-sdt-dev (sys/sdt.h)');
  // sdt.h is architecture-neutral but lives in the host's multiarch include dir, which the cross compiler skips.
  const inc = join(workDir, 'sdtinc', 'sys');
  mkdirSync(inc, { recursive: true });
  copyFileSync(sdt, join(inc, 'sdt.h'));
  if (existsSync(sdt.replace('sdt.h', 'sdt-config.h'))) copyFileSync(sdt.replace('sdt.h', 'sdt-config.h'), join(inc, 'sdt-config.h'));
  const bin = buildC(
    'usdt_arm',
    `#include <sys/sdt.h>
struct s { long a; int b; };
int counter;
int __attribute__((noinline)) work(struct s *p, int n) { DTRACE_PROBE3(app, work, p->b, n, &counter); return p->b + n; }
int main(int argc, char **argv) { struct s v = {1, argc}; (void)argv; DTRACE_PROBE1(app, start, argc); return work(&v, 5); }
`,
    ['-O2', '-g', `-I${join(workDir, 'sdtinc')}`],
    'aarch64-linux-gnu-gcc',
  );
  const image = await openBinary(bin, { noSystemDebugDir: true });
  assert.equal(image.arch, 'aarch64');
  const probes = image.usdtProbes();
  assert.deepEqual(
    probes.map((p) => [p.provider, p.name, p.address, p.argsText]),
    readelfProbes(bin).map((e) => [e.provider, e.name, e.location, e.args]),
  );
  const kinds = probes.flatMap((p) => p.args.map((a) => a.operand.kind));
  assert.ok(kinds.includes('register'));
  assert.ok(
    probes.every((p) => p.args.every((a) => a.operand.kind !== 'unknown')),
    JSON.stringify(probes.map((p) => p.argsText)),
  );
  if (have('perf')) {
    for (const p of probes) assert.equal(p.fileOffset, perfSdt(bin, p).offset, p.name);
  }
});

test('argument strings: size, sign and every operand form sdt.h emits on x86-64 and AArch64', () => {
  const cases: [string, object][] = [
    ['-4@%edi', { size: 4, signed: true, operand: { kind: 'register', register: 'edi' } }],
    ['8@%rsi', { size: 8, signed: false, operand: { kind: 'register', register: 'rsi' } }],
    ['-1@%r8b', { size: 1, signed: true, operand: { kind: 'register', register: 'r8b' } }],
    ['8@-24(%rbp)', { size: 8, signed: false, operand: { kind: 'memory', base: 'rbp', offset: -24 } }],
    ['4@(%rax)', { size: 4, signed: false, operand: { kind: 'memory', base: 'rax', offset: 0 } }],
    ['-4@counter(%rip)', { size: 4, signed: true, operand: { kind: 'memory', base: 'rip', offset: 0, symbol: 'counter' } }],
    ['8@tab+16(%rip)', { size: 8, signed: false, operand: { kind: 'memory', base: 'rip', offset: 16, symbol: 'tab' } }],
    ['4@8(%rax,%rbx,4)', { size: 4, signed: false, operand: { kind: 'memory', base: 'rax', offset: 8, index: 'rbx', scale: 4 } }],
    ['-4@$-5', { size: 4, signed: true, operand: { kind: 'constant', value: -5n } }],
    ['8@$0x10', { size: 8, signed: false, operand: { kind: 'constant', value: 16n } }],
    ['-4@w0', { size: 4, signed: true, operand: { kind: 'register', register: 'w0' } }],
    ['8@x1', { size: 8, signed: false, operand: { kind: 'register', register: 'x1' } }],
    ['8@[sp, 8]', { size: 8, signed: false, operand: { kind: 'memory', base: 'sp', offset: 8 } }],
    ['-4@[x0]', { size: 4, signed: true, operand: { kind: 'memory', base: 'x0', offset: 0 } }],
    ['4@[x29, -12]', { size: 4, signed: false, operand: { kind: 'memory', base: 'x29', offset: -12 } }],
    ['-4@5', { size: 4, signed: true, operand: { kind: 'constant', value: 5n } }],
  ];
  for (const [text, want] of cases) {
    const [arg] = parseUsdtArgs(text);
    const { text: _t, ...rest } = arg;
    assert.deepEqual(rest, want, text);
  }
  // Several at once, with the space inside an arm64 memory operand.
  assert.deepEqual(
    parseUsdtArgs('-4@w0 8@[sp, 16] 8@x2').map((a) => a.text),
    ['w0', '[sp, 16]', 'x2'],
  );
  assert.deepEqual(parseUsdtArgs(''), []);
  assert.equal(parseUsdtArgs('8@%%weird')[0].operand.kind, 'unknown');
});

// The binary stream's decoder on this machine's kernel: a uprobe with integer, hex, array and string arguments in a
// private instance, a tiny C program run with known values (hostile strings among them), its per-CPU
// trace_pipe_raw pages read without ever blocking and decoded from the instance's own header_page and format
// files; every hit is checked against the calls made and against the instance's text `trace` file read by the
// text parser. Also how trace_pipe_raw behaves when empty and what a page that lost events says.
import { test, type TestContext } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync, spawnSync, type SpawnSyncReturns } from 'node:child_process';
import {
  closeSync,
  constants,
  mkdirSync,
  mkdtempSync,
  openSync,
  readFileSync,
  readSync,
  readdirSync,
  rmSync,
  rmdirSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { frameDefinition, newSentinel } from '../../src/core/tracefs/framing';
import { HitParser, type EventSchema, type Hit } from '../../src/core/tracefs/hitParser';
import { checkHeaderEvent, parseEventFormat, parseHeaderPage, type HeaderPage } from '../../src/core/tracefs/rawFormat';
import { RawHitDecoder } from '../../src/core/tracefs/rawHits';
import { decodePage, timestampText } from '../../src/core/tracefs/rawPages';
import { missing } from '../helpers/require';
import { requireTracefs } from '../helpers/tracefs';
import { plainData } from '../helpers/plain';

const PROGRAM = `#include <stdio.h>
#include <stdlib.h>
#include <string.h>
__attribute__((noipa)) long take(long n, const char *s, unsigned long x) { return n + (long)x + (s != 0); }
int main(int argc, char **argv) {
  long acc = 0;
  if (argc == 3 && !strcmp(argv[1], "loop")) {
    long count = atol(argv[2]);
    for (long i = 0; i < count; i++) acc += take(i, "loop", (unsigned long)i);
  } else {
    for (int i = 1; i + 2 < argc; i += 3)
      acc += take(strtol(argv[i], 0, 0), strcmp(argv[i + 1], "NULL") ? argv[i + 1] : NULL, strtoul(argv[i + 2], 0, 0));
  }
  printf("%ld\\n", acc);
  return 0;
}
`;

const ARGS = 'n=%di:s64 s=+0(%si):string x=%dx:x64 u=%di:u32 c=%di:s8 h=%dx:x16 b=+0(%si):u8[4] d=%di';
const SCHEMA_ARGS = [
  { name: 'n', type: 's64' },
  { name: 's', type: 'string' },
  { name: 'x', type: 'x64' },
  { name: 'u', type: 'u32' },
  { name: 'c', type: 's8' },
  { name: 'h', type: 'x16' },
  { name: 'b', type: 'u8[4]' },
  { name: 'd', type: '' },
];

/** Calls made, as [n, s, x]; `NULL` passes a null pointer (the string fetch faults). */
const CALLS: Array<[string, string, string]> = [
  ['1', 'plain', '0x1f'],
  ['-1', 'two\nlines', '0xffffffffffffffff'],
  ['300', 'cr\rhere', '65535'],
  ['-9223372036854775808', 'ls\u2028ps\u2029end', '0x8000000000000000'],
  ['9007199254740993', 'CPU:0 [LOST 5 EVENTS]', '0'],
  ['-9007199254740992', '\nCPU:1 [LOST 7 EVENTS]\n          rawfix-1     [000] ..... 1.000000: take: (0x1) n=1 s="x"', '1'],
  ['42', '', '2'],
  ['43', 'NULL', '3'],
  ['44', 'a" n=5 s="b', '4'],
  ['-128', 'h\u00e9llo \u2713', '0x10000'],
];
const RUNS = 6;

function expected(n: string, s: string, x: string): Record<string, unknown> {
  const nb = BigInt(n);
  const xb = BigInt.asUintN(64, BigInt(x));
  const int = (v: bigint) => (v < 2n ** 53n && v > -(2n ** 53n) ? Number(v) : v.toString());
  return {
    n: int(nb),
    s: s === 'NULL' ? null : s,
    x: `0x${xb.toString(16)}`,
    u: Number(BigInt.asUintN(32, nb)),
    c: Number(BigInt.asIntN(8, nb)),
    h: `0x${BigInt.asUintN(16, xb).toString(16)}`,
    d: `0x${BigInt.asUintN(64, nb).toString(16)}`,
  };
}

/** The file offset of a function: its address in the PT_LOAD segment that holds it. */
function fileOffset(bin: string, symbol: string): bigint {
  const sym = new RegExp(`^([0-9a-f]+) T ${symbol}$`, 'm').exec(execFileSync('nm', [bin], { encoding: 'utf8' }));
  assert.ok(sym, `nm lists ${symbol}`);
  const addr = BigInt(`0x${sym[1]}`);
  for (const line of execFileSync('readelf', ['-lW', bin], { encoding: 'utf8' }).split('\n')) {
    const m = /^\s*LOAD\s+0x([0-9a-f]+)\s+0x([0-9a-f]+)\s+0x[0-9a-f]+\s+0x([0-9a-f]+)/.exec(line);
    if (!m) continue;
    const [off, vaddr, filesz] = [BigInt(`0x${m[1]}`), BigInt(`0x${m[2]}`), BigInt(`0x${m[3]}`)];
    if (addr >= vaddr && addr < vaddr + filesz) return addr - vaddr + off;
  }
  throw new Error(`no PT_LOAD of ${bin} holds ${symbol}`);
}

interface Setup {
  bin: string;
  inst: string;
  group: string;
  tracefs: string;
}

/** Builds the program and makes a private instance; the instance and the event are removed after the test. */
function setUp(t: TestContext, tracefs: string, tag: string): Setup | undefined {
  try {
    execFileSync('gcc', ['--version'], { stdio: 'ignore' });
  } catch {
    missing(t, 'gcc is not installed (apt-get install -y gcc)');
    return undefined;
  }
  const dir = mkdtempSync(join(tmpdir(), 'probelens-raw-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  writeFileSync(join(dir, 'rawfix.c'), PROGRAM);
  const bin = join(dir, 'rawfix');
  execFileSync('gcc', ['-O1', '-g', '-o', bin, join(dir, 'rawfix.c')]);
  const name = `probelens_raw_${tag}_${process.pid}`;
  const inst = join(tracefs, 'instances', name);
  mkdirSync(inst);
  const s: Setup = { bin, inst, group: name, tracefs };
  t.after(() => tearDown(s));
  return s;
}

/** Whatever happened: the instance goes (which disables its events), then the definition. */
function tearDown(s: Setup): void {
  const errors: string[] = [];
  try {
    writeFileSync(join(s.inst, 'tracing_on'), '0');
  } catch (e) {
    errors.push(`tracing_on: ${(e as Error).message}`);
  }
  try {
    rmdirSync(s.inst);
  } catch (e) {
    errors.push(`rmdir ${s.inst}: ${(e as Error).message}`);
  }
  try {
    if (readFileSync(join(s.tracefs, 'uprobe_events'), 'utf8').includes(`:${s.group}/`))
      writeFileSync(join(s.tracefs, 'uprobe_events'), `-:${s.group}/take\n`, { flag: 'a' });
  } catch (e) {
    errors.push(`removing ${s.group}/take: ${(e as Error).message}`);
  }
  if (errors.length) throw new Error(`cleanup failed: ${errors.join('; ')}`);
}

function define(s: Setup, definition: string): void {
  writeFileSync(join(s.tracefs, 'uprobe_events'), `${definition}\n`, { flag: 'a' });
  writeFileSync(join(s.inst, 'events', s.group, 'take', 'enable'), '1');
}

function cpuDirs(inst: string): number[] {
  return readdirSync(join(inst, 'per_cpu'))
    .map((d) => /^cpu(\d+)$/.exec(d))
    .filter((m): m is RegExpExecArray => m !== null)
    .map((m) => Number(m[1]))
    .sort((a, b) => a - b);
}

/**
 * Every page a CPU's trace_pipe_raw holds now, read with O_NONBLOCK (an empty buffer is EAGAIN, never a wait);
 * at most `limit` pages, so a buffer that keeps filling cannot hold the test.
 */
function readPages(inst: string, cpu: number, header: HeaderPage, limit = 100_000): Buffer[] {
  const fd = openSync(join(inst, 'per_cpu', `cpu${cpu}`, 'trace_pipe_raw'), constants.O_RDONLY | constants.O_NONBLOCK);
  const pages: Buffer[] = [];
  try {
    while (pages.length < limit) {
      const buf = Buffer.alloc(header.pageSize);
      let n: number;
      try {
        n = readSync(fd, buf, 0, buf.length, null);
      } catch (e) {
        if ((e as NodeJS.ErrnoException).code === 'EAGAIN') break;
        throw e;
      }
      if (n === 0) break;
      assert.equal(n, header.pageSize, 'one read returns one whole page');
      pages.push(buf);
    }
  } finally {
    closeSync(fd);
  }
  return pages;
}

function run(bin: string, args: string[]): void {
  const r = spawnSync(bin, args, { timeout: 120_000, encoding: 'utf8' });
  assert.equal(r.status, 0, `${bin} exited ${r.status ?? r.signal}: ${r.stderr}`);
}

function readFormats(s: Setup): { header: HeaderPage; format: ReturnType<typeof parseEventFormat> } {
  const header = parseHeaderPage(readFileSync(join(s.inst, 'events', 'header_page'), 'utf8'));
  checkHeaderEvent(readFileSync(join(s.inst, 'events', 'header_event'), 'utf8'));
  const path = join(s.inst, 'events', s.group, 'take', 'format');
  return { header, format: parseEventFormat(readFileSync(path, 'utf8'), path) };
}

test('uprobe hits decoded from trace_pipe_raw pages are exactly the calls made, hostile strings included, and equal the trace file parsed as text', async (t) => {
  const tracefs = requireTracefs(t);
  if (!tracefs) return;
  const s = setUp(t, tracefs, 'values');
  if (!s) return;
  const sentinel = newSentinel();
  // Framed as a session frames its definitions, so the text parser reads the trace file robustly; the binary
  // decoder needs no framing and skips those fields.
  define(s, frameDefinition(`p:${s.group}/take ${s.bin}:0x${fileOffset(s.bin, 'take').toString(16)} ${ARGS}`, sentinel));
  const { header, format } = readFormats(s);
  t.diagnostic(`header_page: page ${header.pageSize} bytes, data at ${header.dataOffset}, commit ${header.commitSize} bytes`);
  const pids: number[] = [];
  for (let r = 0; r < RUNS; r++) {
    // Runs more than 2^27 ns apart: the clock then moves by time-extend records between them.
    if (r > 0) Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, 200);
    const child: SpawnSyncReturns<Buffer> = spawnSync(s.bin, CALLS.flat(), { timeout: 120_000 });
    assert.equal(child.status, 0, String(child.stderr));
    pids.push(child.pid!);
  }
  const schema: EventSchema = { event: 'take', probe: 'take', kind: 'entry', args: SCHEMA_ARGS };

  // The text first: reading `trace` consumes nothing.
  const textHits: Hit[] = [];
  const parser = new HitParser({ host: 'local', events: [schema], sentinel, onHit: (h) => textHits.push(h) });
  const lines = readFileSync(join(s.inst, 'trace'), 'utf8').split('\n');
  let i = 0;
  while (i < lines.length && lines[i].startsWith('#')) i++;
  for (; i < lines.length - 1; i++) parser.push(lines[i]);
  parser.end();
  assert.equal(lines[lines.length - 1], '', 'the trace file ends with a newline');

  const rawHits: Array<Hit & { tsText: string }> = [];
  const decoder = new RawHitDecoder({
    host: 'local',
    header,
    events: [schema],
    formats: [format],
    onHit: (h) => rawHits.push({ ...h, tsText: '' }),
    task: (tid) => (pids.includes(tid) ? { comm: 'rawfix', pid: tid } : undefined),
  });
  let pages = 0;
  for (const cpu of cpuDirs(s.inst)) {
    for (const page of readPages(s.inst, cpu, header)) {
      pages++;
      const before = rawHits.length;
      decoder.push(page, cpu);
      // The same page's records, for their exact timestamps.
      const recs = decodePage(page, header).records.filter((r) => r.id === format.id);
      assert.equal(recs.length, rawHits.length - before);
      recs.forEach((r, k) => (rawHits[before + k].tsText = timestampText(r.sec, r.nsec)));
    }
  }
  t.diagnostic(
    `${pages} pages, ${rawHits.length} raw hits, ${textHits.length} text hits, stats ${JSON.stringify({ ...decoder.stats, lostByCpu: undefined })}`,
  );
  // Exact order: the trace file merges the CPUs by time, as this sort does (nanoseconds apart).
  rawHits.sort((a, b) => a.ts - b.ts);

  assert.equal(decoder.stats.lost, 0);
  assert.equal(decoder.stats.unknown, 0);
  assert.equal(rawHits.length, RUNS * CALLS.length);
  rawHits.forEach((h, k) => {
    const [n, str, x] = CALLS[k % CALLS.length];
    const { b, ...rest } = h.args;
    assert.deepEqual(rest, expected(n, str, x), `hit ${k}`);
    assert.ok(Array.isArray(b) && b.length === 4, `hit ${k}: b is 4 bytes`);
    if (str === 'NULL') assert.deepEqual(b, [0, 0, 0, 0], 'a faulted array fetch reads as zeros');
    else assert.deepEqual(b.slice(0, Math.min(4, Buffer.byteLength(str) + 1)), [...Buffer.from(`${str}\0`)].slice(0, 4));
    assert.equal(h.tid, pids[Math.floor(k / CALLS.length)]);
  });

  assert.equal(parser.stats.malformed, 0);
  assert.equal(parser.stats.unparsed, 0);
  assert.equal(textHits.length, rawHits.length);
  textHits.forEach((th, k) => {
    const rh = rawHits[k];
    assert.deepEqual(plainData(rh.args), plainData(th.args), `hit ${k}: the same values as the text parser's`);
    assert.equal(rh.tid, th.tid);
    assert.equal(rh.cpu, th.cpu);
    // trace prints the comm from the kernel's small cache of names, which a busy machine may have recycled.
    assert.ok(th.comm === rh.comm || th.comm === '<...>', `hit ${k}: comm ${JSON.stringify(th.comm)}`);
    assert.equal(parseFloat(rh.tsText), th.ts, `hit ${k}: ${rh.tsText} is the time the trace file prints`);
    const { tsText, ...plain } = rh;
    assert.ok(tsText);
    assert.deepEqual({ ...plain, ts: th.ts, comm: th.comm }, th);
  });
});

test('an empty trace_pipe_raw: EAGAIN with O_NONBLOCK; a blocking read of a descriptor whose duplicate was closed ends instead of waiting', async (t) => {
  const tracefs = requireTracefs(t);
  if (!tracefs) return;
  const s = setUp(t, tracefs, 'empty');
  if (!s) return;
  const file = join(s.inst, 'per_cpu', 'cpu0', 'trace_pipe_raw');
  const fd = openSync(file, constants.O_RDONLY | constants.O_NONBLOCK);
  try {
    assert.throws(() => readSync(fd, Buffer.alloc(4096), 0, 4096, null), { code: 'EAGAIN' });
  } finally {
    closeSync(fd);
  }
  // `< FILE` opens the file, dups it to 0 and closes the original: the close marks the reader closed, and an
  // empty buffer then reads as end of file. (A plain `cat FILE` would block here until an event came.)
  const r = spawnSync('sh', ['-c', 'cat < "$1" | wc -c', 'sh', file], { timeout: 60_000, encoding: 'utf8' });
  assert.equal(r.signal, null, 'the redirected reader ended by itself');
  assert.equal(r.status, 0);
  assert.equal(r.stdout.trim(), '0');
});

for (const overwrite of [true, false]) {
  test(`a tiny buffer that overflows (overwrite ${overwrite ? 'on' : 'off'}): decoded hits + the kernel's lost count == calls, and the pages say what they lost`, async (t) => {
    const tracefs = requireTracefs(t);
    if (!tracefs) return;
    const s = setUp(t, tracefs, overwrite ? 'over' : 'drop');
    if (!s) return;
    writeFileSync(join(s.inst, 'buffer_size_kb'), '8');
    writeFileSync(join(s.inst, 'options', 'overwrite'), overwrite ? '1' : '0');
    define(s, `p:${s.group}/take ${s.bin}:0x${fileOffset(s.bin, 'take').toString(16)} n=%di:s64 s=+0(%si):string`);
    const { header, format } = readFormats(s);
    const N = 20_000;
    run(s.bin, ['loop', String(N)]);
    const stats = new Map<number, { overrun: number; dropped: number }>();
    const schema: EventSchema = {
      event: 'take',
      probe: 'take',
      kind: 'entry',
      args: [
        { name: 'n', type: 's64' },
        { name: 's', type: 'string' },
      ],
    };
    const hits: Hit[] = [];
    const decoder = new RawHitDecoder({ host: 'local', header, events: [schema], formats: [format], onHit: (h) => hits.push(h) });
    const missedPages: number[] = [];
    for (const cpu of cpuDirs(s.inst)) {
      const text = readFileSync(join(s.inst, 'per_cpu', `cpu${cpu}`, 'stats'), 'utf8');
      const num = (k: string) => Number(new RegExp(`^${k}: (\\d+)$`, 'm').exec(text)?.[1] ?? NaN);
      stats.set(cpu, { overrun: num('overrun'), dropped: num('dropped events') });
      for (const page of readPages(s.inst, cpu, header)) {
        const p = decodePage(page, header);
        if (p.missed) missedPages.push(p.lost ?? -1);
        decoder.push(page, cpu);
      }
    }
    const overrun = [...stats.values()].reduce((a, v) => a + v.overrun, 0);
    const dropped = [...stats.values()].reduce((a, v) => a + v.dropped, 0);
    t.diagnostic(
      `hits ${hits.length}, overrun ${overrun}, dropped ${dropped}, pages that lost events ${JSON.stringify(missedPages)} (-1: count not stored)`,
    );
    assert.ok(overrun + dropped > 0, 'the buffer must overflow, else this test proves nothing');
    assert.equal(hits.length + overrun + dropped, N);
    // Each CPU's hits are its calls in order, none twice.
    const seen = new Set(hits.map((h) => h.args.n));
    assert.equal(seen.size, hits.length);
    assert.ok(hits.every((h) => h.args.s === 'loop'));
    if (overwrite) {
      // The newest survive; the first page after the gap says events were lost.
      assert.ok(seen.has(N - 1), 'the last call survives an overwriting buffer');
      assert.ok(missedPages.length > 0, 'a page says events were lost');
      assert.ok(decoder.stats.lost > 0);
    } else {
      // Dropping the newest marks no page: only the per-CPU counters tell.
      assert.ok(seen.has(0), 'the first call survives a buffer that drops the newest');
      assert.deepEqual(missedPages, []);
    }
  });
}

// npm run bench:raw-decode -- [--records N] [--rounds R]
// CPU cost of turning one hit's record into a Hit, two ways, on the same N synthetic hits of a typical probe
// (`a=%di:s32 b=%si:u64 s=+0(%dx):string p=%cx:x64`, 12-byte strings, framed by the session's secret as the agent
// defines it):
//   baseline   HitParser (src/core/tracefs/hitParser.ts) on the lines trace_pipe prints for them, framed mode (what a
//              session runs) and line mode;
//   raw        RawHitDecoder (src/core/tracefs/rawHits.ts) on the ring-buffer pages trace_pipe_raw returns for them
//              (4 KiB pages built byte by byte, the same records), and the page walk alone (decodePage).
// Neither includes reading the stream or splitting it into lines or pages. Reported: median µs per record over R
// rounds (after one warm-up round) and records/s. Goal for the whole client: ≤ 3 µs per hit.
import { frameDefinition, newSentinel } from '../src/core/tracefs/framing';
import { HitParser, type EventSchema } from '../src/core/tracefs/hitParser';
import { parseEventFormat, parseHeaderPage } from '../src/core/tracefs/rawFormat';
import { RawHitDecoder } from '../src/core/tracefs/rawHits';
import { decodePage, timestampText } from '../src/core/tracefs/rawPages';
import { HEADER_PAGE_TEXT, PageBuilder, probeFormatText, recordBytes } from '../test/helpers/rawPageBuilder';

function arg(name: string, dflt: number): number {
  const i = process.argv.indexOf(`--${name}`);
  return i >= 0 ? Number(process.argv[i + 1]) : dflt;
}
const N = arg('records', 200_000);
const ROUNDS = arg('rounds', 5);

const sentinel = newSentinel();
const framed = frameDefinition('p:g/pl_add /bin/x:0x1139 a=%di:s32 b=%si:u64 s=+0(%dx):string p=%cx:x64', sentinel);
// The event's fields in definition order, as the kernel lays them out (the framing immediates are x64).
const fieldOf: Record<string, [string, number, string]> = {
  s32: ['s32', 4, '%d'],
  u64: ['u64', 8, '%Lu'],
  string: ['__data_loc char[]', 4, '"%s"'],
  x64: ['u64', 8, '0x%Lx'],
};
const defArgs = framed
  .split(' ')
  .slice(2)
  .map((t) => {
    const [name, rest] = t.split('=');
    return { name, type: rest.slice(rest.lastIndexOf(':') + 1) };
  });
const format = parseEventFormat(
  probeFormatText(
    'pl_add',
    2400,
    defArgs.map((a) => [fieldOf[a.type][0], a.name, fieldOf[a.type][1]]),
    defArgs.map((a) => `${a.name}=${fieldOf[a.type][2]}`).join(' '),
  ),
);
const header = parseHeaderPage(HEADER_PAGE_TEXT);
const schema: EventSchema = {
  event: 'pl_add',
  probe: 'add',
  kind: 'entry',
  args: [
    { name: 'a', type: 's32' },
    { name: 'b', type: 'u64' },
    { name: 's', type: 'string' },
    { name: 'p', type: 'x64' },
  ],
};

// The same hits both ways.
const T0 = 23245_000_000_000n;
const pages: Buffer[] = [];
const lines: string[] = [];
let page = new PageBuilder(T0);
let ns = T0;
let inPage = 0;
for (let i = 0; i < N; i++) {
  const values: Record<string, number | bigint | string> = {
    a: (i % 2001) - 1000,
    b: BigInt(i) * 7919n,
    s: `req-${String(i % 100000).padStart(8, '0')}`,
    p: 0x7ffd00000000n + BigInt(i) * 16n,
  };
  for (const a of defArgs) if (a.name.startsWith('__pl')) values[a.name] = BigInt(sentinel.printed);
  const rec = recordBytes(format, 4242, values);
  if (page.length + rec.length + 8 > header.dataSize) {
    pages.push(page.build());
    page = new PageBuilder(ns);
    inPage = 0;
  }
  const delta = 1500 + (i % 7);
  ns += BigInt(delta);
  page.data(rec, delta);
  inPage++;
  const ts = timestampText(Number(ns / 1_000_000_000n), Number(ns % 1_000_000_000n));
  const shown = defArgs
    .map((a) => {
      const v = values[a.name];
      if (a.type === 'string') return `${a.name}="${String(v)}"`;
      if (a.type === 'x64') return `${a.name}=0x${BigInt(v).toString(16)}`;
      return `${a.name}=${String(v)}`;
    })
    .join(' ');
  lines.push(`         loadgen-4242    [001] ..... ${ts}: pl_add: (0x55d0c0a01139) ${shown}`);
}
if (inPage) pages.push(page.build());
const plainLines = lines.map((l) => l.replace(/ __pl\w*=0x[0-9a-f]+/g, ''));

function time(run: () => number): { us: number; count: number } {
  run();
  const figures: number[] = [];
  let count = 0;
  for (let r = 0; r < ROUNDS; r++) {
    const t0 = process.hrtime.bigint();
    count = run();
    figures.push(Number(process.hrtime.bigint() - t0) / 1000 / count);
  }
  figures.sort((x, y) => x - y);
  return { us: figures[Math.floor(figures.length / 2)], count };
}

const textFramed = time(() => {
  let n = 0;
  const p = new HitParser({ host: 'h', events: [schema], sentinel, onHit: () => n++ });
  for (const l of lines) p.push(l);
  return n;
});
const textLine = time(() => {
  let n = 0;
  const p = new HitParser({ host: 'h', events: [schema], onHit: () => n++ });
  for (const l of plainLines) p.push(l);
  return n;
});
const raw = time(() => {
  let n = 0;
  const d = new RawHitDecoder({ host: 'h', header, events: [schema], formats: [format], onHit: () => n++ });
  for (const pg of pages) d.push(pg, 1);
  return n;
});
const walk = time(() => {
  let n = 0;
  for (const pg of pages) n += decodePage(pg, header).records.length;
  return n;
});
for (const r of [textFramed, textLine, raw, walk]) {
  if (r.count !== N) throw new Error(`decoded ${r.count} of ${N} records`);
}

const rows = [
  ['decoder', 'µs/record', 'records/s', 'input'],
  [
    'baseline: HitParser, framed (a session)',
    textFramed.us.toFixed(3),
    Math.round(1e6 / textFramed.us).toLocaleString('en'),
    `${lines.length} lines`,
  ],
  [
    'baseline: HitParser, line mode',
    textLine.us.toFixed(3),
    Math.round(1e6 / textLine.us).toLocaleString('en'),
    `${plainLines.length} lines`,
  ],
  ['raw: RawHitDecoder → Hit', raw.us.toFixed(3), Math.round(1e6 / raw.us).toLocaleString('en'), `${pages.length} pages`],
  ['raw: page walk only (decodePage)', walk.us.toFixed(3), Math.round(1e6 / walk.us).toLocaleString('en'), `${pages.length} pages`],
];
const w = rows[0].map((_, i) => Math.max(...rows.map((r) => r[i].length)));
console.log(`${N} records, ${ROUNDS} rounds (median), node ${process.version}`);
console.log(
  rows
    .map((r) =>
      r
        .map((c, i) => c.padEnd(w[i]))
        .join('  ')
        .trimEnd(),
    )
    .join('\n'),
);
console.log(`raw decode vs framed text parse: ${(textFramed.us / raw.us).toFixed(1)}× faster; goal ≤ 3 µs per hit for the whole client`);

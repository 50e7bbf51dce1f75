// npm run bench:panel [-- --seconds N] [--rate HITS_PER_S] [--baseline-seconds N] [--naive-seconds N] [--profile]
//
// The live panel's webview (the real bundle, page and CSP plus `worker-src` for the feed) in headless
// Chromium, fed by the real host-side PanelFeed (batching, column encoding, stats) from SyntheticHitSource
// at 100,000 hits/s, both running in a worker (bench/panelWorker.ts) as the extension host runs beside the
// webview in VS Code. Two cores cannot also run a traced workload that fast, hence the synthetic source; the
// engine's own end-to-end rate is what `npm run bench:stream` reports. Measures frame times from requestAnimationFrame timestamps, long tasks,
// and the JS heap (CDP Performance.getMetrics) over the run, beside two baselines measured in the same
// run: the same page idle, and the same feed into a naive table that appends one DOM row per hit.
// Diagnostics (environment): PL_BENCH_HIDE=SELECTOR hides part of the page, PL_BENCH_CSS=TEXT adds a
// stylesheet, PL_BENCH_CAPACITY=N sets the history size — to find what a slow frame is spent on.
import type { Browser, CDPSession, Page } from 'playwright-core';
import { BENCH_WORKER_URL, buildBenchWorker, buildWebview, chromiumMissing, launchChromium, openPanelPage } from './panelPage';

interface Args {
  seconds: number;
  rate: number;
  baselineSeconds: number;
  naiveSeconds: number;
  /** print the webview's hottest functions (CDP CPU profile of the live run) */
  profile?: boolean;
}

interface CpuProfile {
  nodes: { id: number; callFrame: { functionName: string; url: string; lineNumber: number } }[];
  samples: number[];
  timeDeltas: number[];
}

function printProfile(p: CpuProfile): void {
  const byId = new Map(p.nodes.map((n) => [n.id, n]));
  const self = new Map<string, number>();
  p.samples.forEach((id, i) => {
    const f = byId.get(id)?.callFrame;
    const key = f ? `${f.functionName || '(anonymous)'} ${f.url.split('/').pop()}:${f.lineNumber + 1}` : '?';
    self.set(key, (self.get(key) ?? 0) + (p.timeDeltas[i] ?? 0) / 1000);
  });
  const total = [...self.values()].reduce((a, b) => a + b, 0);
  console.log(`webview CPU profile, self time (total ${total.toFixed(0)} ms):`);
  for (const [k, ms] of [...self.entries()].sort((a, b) => b[1] - a[1]).slice(0, 15)) {
    console.log(`  ${ms.toFixed(0).padStart(7)} ms  ${((100 * ms) / total).toFixed(1).padStart(5)}%  ${k}`);
  }
}

const NAIVE_CAP_S = 90;

function parseArgs(argv: string[]): Args {
  const a: Args = { seconds: 60, rate: 100_000, baselineSeconds: 5, naiveSeconds: 2 };
  for (let i = 0; i < argv.length; i++) {
    const v = Number(argv[i + 1]);
    if (argv[i] === '--seconds') a.seconds = v;
    else if (argv[i] === '--rate') a.rate = v;
    else if (argv[i] === '--baseline-seconds') a.baselineSeconds = v;
    else if (argv[i] === '--naive-seconds') a.naiveSeconds = v;
    else if (argv[i] === '--profile') {
      a.profile = true;
      continue;
    } else continue;
    if (!(v > 0)) throw new Error(`${argv[i]} needs a positive number`);
    i++;
  }
  return a;
}

// Frame and long-task recorders, installed before the page's own scripts (as text: see panelPage.ts).
const RECORDER = `(() => {
  const r = { frames: [], longTasks: [], delivered: 0, messages: 0 };
  window.__bench = r;
  let last = 0;
  const tick = (t) => { if (last) r.frames.push([t, t - last]); last = t; requestAnimationFrame(tick); };
  requestAnimationFrame(tick);
  try {
    new PerformanceObserver((l) => { for (const e of l.getEntries()) r.longTasks.push([e.startTime, e.duration]); })
      .observe({ type: 'longtask', buffered: true });
  } catch {}
  window.addEventListener('message', (e) => { r.messages++; if (e.data && e.data.type === 'hits') r.delivered += e.data.batch.n; });
  r.start = (url, rate, seconds) => {
    r.worker = new Worker(url);
    // The webview says which batches it drew (flow control: PanelFeed.drawn); the naive page has no host and never does.
    const host = window.__fakeVsCodeHost;
    if (host) host.onPost = (m) => { if (m && m.type === 'drawn') r.worker.postMessage({ cmd: 'drawn', batches: m.batches }); };
    r.stopped = new Promise((resolve) => {
      r.worker.onmessage = (e) => {
        if (e.data && e.data.benchStopped) resolve(e.data.generated);
        // No second structured clone: hand the worker's message straight to the webview's listener.
        else window.dispatchEvent(new MessageEvent('message', { data: e.data }));
      };
    });
    if (rate > 0) r.worker.postMessage({ cmd: 'start', rate, seconds, capacity: ${Number(process.env.PL_BENCH_CAPACITY) || 100000}, drawnAcks: !!host });
    else r.worker.postMessage({ cmd: 'stop' });
    return performance.now();
  };
  r.stop = async () => { r.worker.postMessage({ cmd: 'stop' }); const n = await r.stopped; r.worker.terminate(); return [n, performance.now()]; };
})();`;

// The baseline UI: what a webview without virtualisation does, one <tr> per hit, appended as they come.
const NAIVE_PAGE = `<!DOCTYPE html><html><body><table id="t"><tbody></tbody></table><script>
const tbody = document.querySelector('tbody');
window.addEventListener('message', (e) => {
  const m = e.data; if (m.type !== 'hits') return;
  const b = m.batch; let off = 0;
  for (let i = 0; i < b.n; i++) {
    const names = b.shapes[b.shape[i]]; let args = '';
    for (let k = 0; k < names.length; k++) args += b.strings[names[k]] + '=' + b.args[off + k] + ' ';
    off += names.length;
    const tr = document.createElement('tr');
    for (const v of [b.ts[i].toFixed(6), b.strings[b.host[i]], b.pid[i] + '/' + b.tid[i], b.strings[b.comm[i]], b.strings[b.probe[i]], args, b.retval[i] ?? '', b.latencyNs[i] >= 0 ? b.latencyNs[i] : '']) {
      const td = document.createElement('td'); td.textContent = v; tr.appendChild(td);
    }
    tbody.appendChild(tr);
  }
});
</script></body></html>`;

interface RunResult {
  frames: number[];
  longTasks: number[];
  heapSamples: { t: number; usedMB: number; nodes: number }[];
  delivered: number;
  generated: number;
  /** how long after the feed stopped the page took to handle what it had been sent */
  drainSeconds: number;
}

async function metrics(cdp: CDPSession): Promise<{ usedMB: number; nodes: number }> {
  const { metrics: m } = (await cdp.send('Performance.getMetrics')) as { metrics: { name: string; value: number }[] };
  const get = (n: string) => m.find((x) => x.name === n)?.value ?? 0;
  return { usedMB: get('JSHeapUsedSize') / 2 ** 20, nodes: get('Nodes') };
}

/** Feeds `page` for `seconds` (rate 0: idle) and collects frame times after a warm-up second. */
async function run(page: Page, seconds: number, rate: number, sample: boolean, onSample?: (s: string) => void): Promise<RunResult> {
  const cdp = await page.context().newCDPSession(page);
  await cdp.send('Performance.enable');
  const heapSamples: RunResult['heapSamples'] = [];
  const start = Date.now();
  const warmup = 1000;
  type Rec = { start(url: string, rate: number, seconds: number): number; stop(): Promise<[number, number]> };
  const t0 = await page.evaluate(([url, r, secs]) => (window as unknown as { __bench: Rec }).__bench.start(url, r, secs), [
    BENCH_WORKER_URL,
    rate,
    seconds,
  ] as const);
  const sampleEvery = Math.max(1000, Math.min(5000, (seconds * 1000) / 12));
  while (sample && Date.now() - start < seconds * 1000) {
    await new Promise((r) => setTimeout(r, sampleEvery));
    const m = await metrics(cdp);
    const t = (Date.now() - start) / 1000;
    heapSamples.push({ t, ...m });
    const delivered = await page.evaluate(() => (window as unknown as { __bench: { delivered: number } }).__bench.delivered);
    onSample?.(`  t=${t.toFixed(0)}s heap ${m.usedMB.toFixed(1)} MB, DOM nodes ${m.nodes}, delivered ${delivered}`);
  }
  if (!sample) await new Promise((r) => setTimeout(r, seconds * 1000));
  // The worker stops generating by itself after `seconds`; stop() answers once the page has handled
  // everything before it (for the naive table that is long after).
  const [generated, t1] = await page.evaluate(() => (window as unknown as { __bench: Rec }).__bench.stop());
  const rec = await page.evaluate(() => {
    const b = (window as unknown as { __bench: { frames: [number, number][]; longTasks: [number, number][]; delivered: number } }).__bench;
    return { frames: b.frames, longTasks: b.longTasks, delivered: b.delivered };
  });
  const inRun = (t: number): boolean => t >= t0 + warmup && t <= t1;
  return {
    frames: rec.frames.filter(([t]) => inRun(t)).map(([, d]) => d),
    longTasks: rec.longTasks.filter(([t]) => inRun(t)).map(([, d]) => d),
    heapSamples,
    delivered: rec.delivered,
    generated,
    drainSeconds: (t1 - t0) / 1000 - seconds,
  };
}

function pct(sorted: number[], p: number): number {
  if (sorted.length === 0) return NaN;
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))];
}

function frameLine(label: string, r: RunResult, seconds: number): string {
  const f = [...r.frames].sort((a, b) => a - b);
  const over50 = f.filter((d) => d > 50).length;
  return `${label.padEnd(34)} frames ${String(f.length).padStart(5)}  p50 ${pct(f, 50).toFixed(1).padStart(6)} ms  p99 ${pct(f, 99).toFixed(1).padStart(6)} ms  max ${(f.at(-1) ?? NaN).toFixed(1).padStart(7)} ms  >50ms ${String(over50).padStart(4)}  long tasks ${r.longTasks.length} (max ${Math.max(0, ...r.longTasks).toFixed(0)} ms)  delivered ${r.delivered}/${r.generated} (${(r.delivered / seconds).toFixed(0)}/s), drained ${r.drainSeconds.toFixed(1)} s after`;
}

async function main(): Promise<void> {
  const args = parseArgs(process.argv.slice(2));
  const why = chromiumMissing();
  if (why) {
    console.error(`bench:panel needs ${why}`);
    process.exit(2);
  }
  const bundle = await buildWebview(!args.profile);
  const worker = await buildBenchWorker();
  const browser: Browser = await launchChromium();
  try {
    console.log(
      `bench:panel — ${args.rate} hits/s for ${args.seconds} s through PanelFeed → postMessage → webview (headless Chromium ${browser.version()})`,
    );

    console.log(`idle baseline (${args.baselineSeconds} s)…`);
    const idle = await openPanelPage(browser, { bundle, worker });
    await idle.page.addInitScript({ content: RECORDER });
    await idle.page.reload();
    const idleRun = await run(idle.page, args.baselineSeconds, 0, true);
    await idle.close();

    console.log(`live panel (${args.seconds} s)…`);
    const live = await openPanelPage(browser, { bundle, worker });
    await live.page.addInitScript({ content: RECORDER });
    await live.page.reload();
    const prof = args.profile ? await live.page.context().newCDPSession(live.page) : undefined;
    if (prof) {
      await prof.send('Profiler.enable');
      await prof.send('Profiler.start');
    }
    if (process.env.PL_BENCH_CSS) {
      await live.page.evaluate((css) => {
        const sheet = new CSSStyleSheet();
        sheet.replaceSync(css);
        document.adoptedStyleSheets = [...document.adoptedStyleSheets, sheet];
      }, process.env.PL_BENCH_CSS);
    }
    if (process.env.PL_BENCH_HIDE)
      await live.page.evaluate((sel) => {
        (document.querySelector(sel) as HTMLElement).style.display = 'none';
      }, process.env.PL_BENCH_HIDE);
    const liveRun = await run(live.page, args.seconds, args.rate, true, (s) => console.log(s));
    if (prof) printProfile(((await prof.send('Profiler.stop')) as { profile: CpuProfile }).profile);
    const status = await live.page.evaluate(() => document.getElementById('pl-status')?.textContent ?? '');
    const dropped = await live.page.evaluate(() => document.getElementById('pl-dropped')?.textContent ?? '');
    const domRows = await live.page.evaluate(() => document.querySelectorAll('.pl-spacer > .pl-row').length);
    const cdp = await live.page.context().newCDPSession(live.page);
    await cdp.send('Performance.enable');
    await cdp.send('HeapProfiler.collectGarbage');
    const afterGc = await metrics(cdp);
    const errors = [...live.errors];
    await live.close();

    const heap = liveRun.heapSamples;
    const settled = heap.filter((h) => h.t >= Math.min(10, args.seconds / 3));
    const used = settled.map((h) => h.usedMB);
    console.log('');
    console.log(frameLine(`idle panel (${args.baselineSeconds} s)`, idleRun, args.baselineSeconds));
    console.log(frameLine(`live panel, virtualised (${args.seconds} s)`, liveRun, args.seconds));
    console.log(`live panel JS heap: ${heap.map((h) => `${h.t.toFixed(0)}s ${h.usedMB.toFixed(0)}MB`).join(', ')}`);
    if (used.length > 1) {
      console.log(
        `  after the history filled: min ${Math.min(...used).toFixed(1)} MB, max ${Math.max(...used).toFixed(1)} MB; after a forced GC at the end ${afterGc.usedMB.toFixed(1)} MB`,
      );
    }
    console.log(`  DOM nodes at end ${heap.at(-1)?.nodes} (table rows in the DOM: ${domRows})`);
    console.log(`  status: ${status}`);
    console.log(`  ${dropped}`);
    if (errors.length) console.log(`  page errors: ${errors.join('; ')}`);
    const worst = Math.max(0, ...liveRun.frames);
    console.log(`goal: no frame over 50 ms at ${args.rate} hits/s → ${worst <= 50 ? 'met' : `NOT met (worst ${worst.toFixed(1)} ms)`}`);
    console.log(`engine end-to-end rate: see \`npm run bench:stream\` (the real tracefs→SSH→parser path)`);

    // The naive baseline gets the same feed for a short time: it cannot keep up, by design.
    console.log('');
    console.log(`naive baseline (${args.naiveSeconds} s of feed, waiting up to ${NAIVE_CAP_S} s for the page to catch up)…`);
    const ctx = await browser.newContext({ viewport: { width: 1200, height: 700 } });
    const naive = await ctx.newPage();
    await naive.addInitScript({ content: RECORDER });
    await naive.route('**/*', (route) => {
      const path = new URL(route.request().url()).pathname;
      if (path === '/bench-worker.js') return route.fulfill({ contentType: 'text/javascript', body: worker });
      return route.fulfill({ contentType: 'text/html', body: NAIVE_PAGE });
    });
    await naive.goto(new URL('/naive.html', BENCH_WORKER_URL).toString());
    const naiveRun = await Promise.race([
      run(naive, args.naiveSeconds, args.rate, false),
      new Promise<null>((r) => setTimeout(() => r(null), (args.naiveSeconds + NAIVE_CAP_S) * 1000)),
    ]);
    if (naiveRun) {
      const naiveCdp = await ctx.newCDPSession(naive);
      await naiveCdp.send('Performance.enable');
      const naiveNodes = (await metrics(naiveCdp)).nodes;
      console.log(frameLine(`naive table, 1 row/hit (${args.naiveSeconds} s)`, naiveRun, args.naiveSeconds));
      console.log(`  DOM nodes at end ${naiveNodes}`);
    } else {
      console.log(`naive table, 1 row/hit: page unresponsive for over ${NAIVE_CAP_S} s after ${args.naiveSeconds} s of feed`);
    }
    await ctx.close().catch(() => undefined);
  } finally {
    await browser.close();
  }
}

main().catch((e: unknown) => {
  console.error(e instanceof Error ? e.stack : e);
  process.exit(1);
});

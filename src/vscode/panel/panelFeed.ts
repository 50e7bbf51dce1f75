// The host half of the live panel that does not need VS Code: it keeps the session's bounded history
// (as the same column batches it sends), batches hits to whichever webview is attached, and sends the figures
// the sessions' aggregates counted (per probe, per site, latency: see ./panelStats; nothing is counted here).
// It outlives the panel: closing and reopening the panel replays the history from here. No `vscode` import,
// so the benchmark and tests drive it directly.
import {
  PROTOCOL_VERSION,
  emptyStats,
  decodeHits,
  encodeHits,
  type ExportFormat,
  type HitBatch,
  type PanelStats,
  type ProbeInfo,
  type SessionInfo,
  type ToWebview,
} from '../../shared/protocol';
import type { Hit } from '../../shared/hit';
import type { AggregateSnapshot } from '../../core/session/aggregates';
import { hitsToCsv, hitsToJson } from '../../core/session/export';
import { parseFilter } from '../../shared/hitFilter';
import { formatHitArgs, formatValue } from '../../shared/hitText';
import { realClock, type PacerClock } from '../model/pacer';
import { panelStats, tally, type Tally } from './panelStats';

export interface PanelFeedOptions {
  version: string;
  /** hits kept for replay and export (the webview bounds its own view the same) */
  historyCapacity?: number;
  /**
   * Batches go at most this often: a hit after a quiet spell goes at once (with the others of the same turn of the
   * event loop), hits meanwhile wait for the end of the interval since the last batch.
   */
  flushIntervalMs?: number;
  /** a batch this big is sent at once */
  maxBatch?: number;
  /**
   * Flow control: while the webview has not said it drew the batches sent (`drawn`), the next waits, at most this
   * long after the last (a webview that never says so, hidden or of another version, still gets its hits). 0: no
   * flow control, batches by time and size alone.
   */
  drawnWaitMs?: number;
  /** timers (tests move a clock by hand) */
  clock?: PacerClock;
}

/** Posts one message to the attached webview (fire and forget, as webview.postMessage is). */
export type PanelSink = (msg: ToWebview) => unknown;

/** A session's aggregates, as the panel reads them. */
export interface StatsSource {
  snapshot(): AggregateSnapshot;
}

export class PanelFeed {
  readonly historyCapacity: number;
  private readonly flushIntervalMs: number;
  private readonly maxBatch: number;
  private pending: Hit[] = [];
  private history: HitBatch[] = [];
  private historyRows = 0;
  private evicted = 0;
  private stats: PanelStats = emptyStats();
  private statsDirty = false;
  /** the sessions whose hits the panel shows, and their figures at the last clear */
  private sources = new Set<StatsSource>();
  private baseline: Tally | undefined;
  private mismatch = 0;
  private probes: ProbeInfo[] = [];
  private session: SessionInfo = { state: 'idle' };
  private sink: PanelSink | undefined;
  private timer: unknown;
  private lastSent = -Infinity;
  /** `hits` messages sent to the attached webview that it has not yet said it drew */
  private undrawn = 0;
  private readonly drawnWaitMs: number;
  private readonly clock: PacerClock;
  private disposed = false;

  constructor(private readonly opts: PanelFeedOptions) {
    this.historyCapacity = opts.historyCapacity ?? 100_000;
    this.flushIntervalMs = opts.flushIntervalMs ?? 25;
    this.maxBatch = opts.maxBatch ?? 5_000;
    this.drawnWaitMs = opts.drawnWaitMs ?? 1_000;
    this.clock = opts.clock ?? realClock;
  }

  /** Hits for the table (their session's aggregates, watched, have counted them already). */
  post(hits: readonly Hit[]): void {
    if (this.disposed) return;
    for (const h of hits) this.pending.push(h);
    this.statsDirty = true;
    if (this.pending.length >= this.maxBatch) this.flush();
    else this.schedule();
  }

  /** Shows `source`'s figures, from now on and after its session ends (the panel shows every session since its clear). */
  watch(source: StatsSource): void {
    if (this.sources.has(source)) return;
    this.sources.add(source);
    this.statsChanged();
  }

  /** The sources' figures may have changed without a hit (lost events): send them with the next flush. */
  statsChanged(): void {
    if (this.disposed) return;
    this.statsDirty = true;
    this.schedule();
  }

  private readStats(): void {
    const now = tally([...this.sources].map((s) => s.snapshot()));
    this.stats = panelStats(now, this.baseline, { mismatch: this.mismatch, historyDropped: this.stats.historyDropped });
  }

  /** received + lost against the kernel's count, over every session (see PanelStats.mismatch). */
  setMismatch(total: number): void {
    if (total === this.mismatch) return;
    this.mismatch = total;
    this.statsChanged();
  }

  // The live timer sets both every refreshMs while hits arrive: the webview (on the editor's main thread) is sent
  // them only when they differ from what it holds.
  setProbes(probes: readonly ProbeInfo[]): void {
    if (JSON.stringify(probes) === JSON.stringify(this.probes)) return;
    this.probes = [...probes];
    this.send({ type: 'probes', probes: this.probes });
  }

  setSession(session: SessionInfo): void {
    if (JSON.stringify(session) === JSON.stringify(this.session)) return;
    this.session = session;
    this.send({ type: 'session', session });
  }

  probeInfo(name: string): ProbeInfo | undefined {
    return this.probes.find((p) => p.name === name);
  }

  clear(): void {
    this.pending = [];
    this.history = [];
    this.historyRows = 0;
    this.evicted = 0;
    this.baseline = tally([...this.sources].map((s) => s.snapshot()));
    this.stats = emptyStats();
    this.stats.mismatch = this.mismatch;
    this.statsDirty = false;
    this.send({ type: 'cleared' });
  }

  /**
   * Connect a webview and replay the state to it (init, then the history as batches). Call on the
   * webview's `ready`, which it sends on every (re)load.
   */
  attach(sink: PanelSink): void {
    this.flush();
    this.sink = sink;
    this.undrawn = 0;
    // Rows evicted before this replay are ones the webview never receives; later evictions it sees itself.
    this.stats.historyDropped = this.evicted;
    this.readStats();
    this.send({
      type: 'init',
      version: this.opts.version,
      protocol: PROTOCOL_VERSION,
      probes: this.probes,
      stats: this.stats,
      session: this.session,
      historyCapacity: this.historyCapacity,
      snapshotRows: this.historyRows,
    });
    for (const batch of this.history) this.send({ type: 'hits', batch });
    this.statsDirty = false;
  }

  detach(): void {
    this.sink = undefined;
    this.undrawn = 0;
  }

  /**
   * The webview took in `batches` more `hits` messages and ran a frame since. The page that draws the panel is the
   * editor's own (one main thread for the workbench and its webviews): batches sent faster than it draws them queue
   * there, in front of the editor's redraws too, and every hit on screen waits behind them. So a batch is sent
   * only once the webview has drawn the ones before it (or at maxBatch hits, or after drawnWaitMs): at the
   * webview's own pace, each batch holding what came meanwhile.
   */
  drawn(batches: number): void {
    this.undrawn = Math.max(0, this.undrawn - batches);
    if (this.undrawn > 0 || this.disposed || (this.pending.length === 0 && !this.statsDirty)) return;
    if (this.timer !== undefined) {
      this.clock.clearTimer(this.timer);
      this.timer = undefined;
    }
    this.schedule();
  }

  get attached(): boolean {
    return this.sink !== undefined;
  }

  /** The retained hits, oldest first, narrowed by the panel's filter text (what the user sees). */
  retainedHits(filterText = ''): Hit[] {
    this.flush();
    const filter = parseFilter(filterText);
    const out: Hit[] = [];
    for (const b of this.history) {
      for (const h of decodeHits(b)) {
        if (filter.empty) {
          out.push(h);
          continue;
        }
        const ok = filter.matches({
          probe: h.probe,
          host: h.host,
          comm: h.comm,
          kind: h.kind,
          pid: h.pid,
          tid: h.tid,
          argText: formatHitArgs(h),
          retText: h.retval === undefined ? '' : formatValue(h.retval),
          site: h.site?.address ?? '',
          siteKind: h.site?.kind ?? '',
        });
        if (ok) out.push(h);
      }
    }
    return out;
  }

  /** The export file's text and its hit count: what the panel's Export buttons write (the CLI's serializer for JSON). */
  exportText(format: ExportFormat, filterText = ''): { text: string; hits: number } {
    const hits = this.retainedHits(filterText);
    return { text: format === 'json' ? hitsToJson(hits) : hitsToCsv(hits), hits: hits.length };
  }

  /** Encode what is pending, keep it in the history and send it (with the stats when they changed). */
  flush(): void {
    if (this.timer !== undefined) {
      this.clock.clearTimer(this.timer);
      this.timer = undefined;
    }
    if (this.pending.length > 0 || this.statsDirty) this.lastSent = this.clock.now();
    if (this.pending.length > 0) {
      for (let i = 0; i < this.pending.length; i += this.maxBatch) {
        const batch = encodeHits(this.pending.slice(i, i + this.maxBatch));
        this.remember(batch);
        this.send({ type: 'hits', batch });
      }
      this.pending = [];
    }
    if (this.statsDirty) {
      this.statsDirty = false;
      this.readStats();
      this.send({ type: 'stats', stats: this.stats });
    }
  }

  dispose(): void {
    this.flush();
    this.disposed = true;
    this.sink = undefined;
    if (this.timer !== undefined) this.clock.clearTimer(this.timer);
  }

  private remember(batch: HitBatch): void {
    this.history.push(batch);
    this.historyRows += batch.n;
    // Whole batches go, so the history holds between capacity and capacity + one batch.
    while (this.history.length > 1 && this.historyRows - this.history[0].n >= this.historyCapacity) {
      const old = this.history.shift() as HitBatch;
      this.historyRows -= old.n;
      this.evicted += old.n;
    }
  }

  private schedule(): void {
    if (this.timer === undefined && !this.disposed) {
      const gap = this.undrawn > 0 ? Math.max(this.flushIntervalMs, this.drawnWaitMs) : this.flushIntervalMs;
      const wait = Math.max(0, this.lastSent + gap - this.clock.now());
      this.timer = this.clock.setTimer(() => {
        this.timer = undefined;
        this.flush();
      }, wait);
    }
  }

  private send(msg: ToWebview): void {
    if (!this.sink) return;
    if (msg.type === 'hits') this.undrawn++;
    this.sink(msg);
  }
}

// The live panel's webview: wires the protocol to the hit view, the virtual table and the stats.
// Messages only update models; drawing happens in at most one requestAnimationFrame callback per frame.
// Tests: test/unit/webview/panel.dom.test.ts, test/unit/webview/panelLayout.dom.test.ts, test/e2e/narrowPanel.test.ts
import './panel.css';
import {
  RequestTracker,
  emptyStats,
  unhandled,
  type ExportFormat,
  type FromWebview,
  type PanelStats,
  type ProbeInfo,
  type SessionInfo,
  type ToWebview,
} from '../src/shared/protocol';
import { button, registerToolkit, textField } from './toolkit';
import { HitView } from './table/hitView';
import { emptyRow } from './table/hitRing';
import { VirtualTable, type Column, type TableModel } from './table/virtualTable';
import { HistogramView, sumHistograms } from './stats/histogram';
import { ProbeCountsView } from './stats/probeCounts';
import { SiteBreakdownView } from './stats/siteBreakdown';
import { formatCount, formatDuration, formatTs } from './format';
import { escapeText } from '../src/shared/hitText';
import { namesAsData } from '../src/shared/names';

interface SavedState {
  filter: string;
  follow: boolean;
  scrollRow: number;
  histogramProbe: string | null;
}

interface VsCodeApi {
  postMessage(msg: FromWebview): void;
  getState(): SavedState | undefined;
  setState(s: SavedState): void;
}
declare function acquireVsCodeApi(): VsCodeApi;

const DEFAULT_CAPACITY = 100_000;
const ROW_HEIGHT = 22;

const vscodeApi = acquireVsCodeApi();
const post = (m: FromWebview): void => vscodeApi.postMessage(m);
const saved = vscodeApi.getState();
const requests = new RequestTracker();

registerToolkit();

let view = new HitView(DEFAULT_CAPACITY);
let stats: PanelStats = emptyStats();
let session: SessionInfo = { state: 'idle' };
const probes = new Map<string, ProbeInfo>();
let snapshotRemaining = 0;
let scrollToRestore: { row: number; follow: boolean } | null = saved ? { row: saved.scrollRow, follow: saved.follow } : null;
let notice = '';

// ---- layout -------------------------------------------------------------------------------------------
const toolbar = el('div', 'pl-toolbar');
const filter = textField({
  placeholder: 'Filter: words, probe:NAME host:NAME comm:NAME pid:N kind:return site:ADDR',
  ariaLabel: 'Filter hits',
  id: 'pl-filter',
  onInput: applyFilter,
});
const pauseBtn = button({ label: 'Pause', id: 'pl-pause', title: 'Stop adding rows (hits keep being counted)', onClick: togglePause });
const clearBtn = button({ label: 'Clear', id: 'pl-clear', onClick: clearAll });
const jsonBtn = button({ label: 'Export JSON', id: 'pl-export-json', onClick: () => exportAs('json') });
const csvBtn = button({ label: 'Export CSV', id: 'pl-export-csv', onClick: () => exportAs('csv') });
const status = el('span', 'pl-status');
status.id = 'pl-status';
status.setAttribute('role', 'status');
toolbar.append(filter.element, pauseBtn.element, clearBtn.element, jsonBtn.element, csvBtn.element, status);

const lostBanner = el('div', 'pl-banner pl-lost');
lostBanner.id = 'pl-lost';
lostBanner.setAttribute('role', 'alert');
lostBanner.hidden = true;
const aggregatedNotice = el('div', 'pl-notice');
aggregatedNotice.id = 'pl-aggregated';
aggregatedNotice.hidden = true;
const droppedNotice = el('div', 'pl-notice');
droppedNotice.id = 'pl-dropped';
droppedNotice.hidden = true;

const columns: Column[] = [
  { id: 'time', title: 'Time' },
  { id: 'host', title: 'Host' },
  { id: 'pid', title: 'PID/TID' },
  { id: 'comm', title: 'Comm' },
  { id: 'probe', title: 'Probe' },
  { id: 'args', title: 'Arguments' },
  { id: 'retval', title: 'Return' },
  { id: 'latency', title: 'Latency' },
];
const table = new VirtualTable(columns, { rowHeight: ROW_HEIGHT, onActivate: openSource, onViewChange: () => saveStateSoon() }, () =>
  scheduleRender(),
);
const scratch = emptyRow();
const model: TableModel = {
  get length() {
    return view.length;
  },
  keyAt: (i) => view.seqAt(i),
  indexOfKey: (k) => view.indexOfSeq(k),
  fill(i, cells) {
    if (!view.read(view.seqAt(i), scratch)) return;
    cells[0].textContent = formatTs(scratch.ts);
    cells[1].textContent = view.str(scratch.host);
    cells[2].textContent = `${scratch.pid}/${scratch.tid}`;
    // A comm is the traced program's text: control characters, line separators and bidi overrides show escaped.
    cells[3].textContent = escapeText(view.str(scratch.comm));
    cells[4].textContent = view.str(scratch.probe);
    // The copy of the function's code the hit came from (clone, part, inlined copy), when the engine names it.
    cells[4].title = scratch.siteText;
    cells[5].textContent = scratch.argText;
    cells[6].textContent = scratch.retText;
    cells[7].textContent = scratch.latencyNs >= 0 ? formatDuration(scratch.latencyNs) : '';
  },
};

let histogramProbe: string | null = saved?.histogramProbe ?? null;
const counts = new ProbeCountsView((p) => {
  histogramProbe = p;
  statsDirty = true;
  saveState();
  scheduleRender();
});
counts.selected = histogramProbe;
const sites = new SiteBreakdownView((address) => {
  // The site word replaces any earlier one and keeps the rest of what the user typed.
  const rest = filter.value
    .split(/\s+/)
    .filter((w) => w && !/^site:./i.test(w))
    .join(' ');
  const text = address ? `${rest} site:${address}`.trim() : rest;
  filter.value = text;
  applyFilter(text);
});
const histogram = new HistogramView();
const side = el('aside', 'pl-side');
side.append(counts.element, sites.element, histogram.element);
const main = el('div', 'pl-main');
main.append(table.element, side);
document.body.append(toolbar, lostBanner, aggregatedNotice, droppedNotice, main);

if (saved?.filter) {
  filter.value = saved.filter;
  view.setFilter(saved.filter);
}

// ---- rendering ----------------------------------------------------------------------------------------
let framePending = false;
let statsDirty = true;
/** rows arrived since the table last drew */
let rowsChanged = 0;
let lastTableRender = 0;
/** `hits` messages taken in since the last `drawn` (the host sends the next batch once they are drawn) */
let undrawn = 0;
// Following the tail, the table redraws at most every FOLLOW_REFRESH_MS (every other frame: a new row waits about
// 50 ms at most, the hit-to-screen budget being 100 ms); when more than FOLLOW_FAST_ROWS rows came since the last
// redraw (tens of thousands a second), at most every FOLLOW_FAST_REFRESH_MS: each redraw then costs a raster of
// the whole table and shows nothing a reader can follow.
const FOLLOW_REFRESH_MS = 30;
const FOLLOW_FAST_ROWS = 1_000;
const FOLLOW_FAST_REFRESH_MS = 100;

function scheduleRender(): void {
  if (framePending) return;
  framePending = true;
  requestAnimationFrame(renderFrame);
}

function renderFrame(): void {
  framePending = false;
  // A frame ran with every batch taken in so far: the host may send the next (flow control, PanelFeed.drawn).
  if (undrawn > 0) {
    post({ type: 'drawn', batches: undrawn });
    undrawn = 0;
  }
  if (scrollToRestore && snapshotRemaining <= 0) {
    table.render(model);
    table.restoreScroll(scrollToRestore.row, scrollToRestore.follow);
    scrollToRestore = null;
  }
  // Following the tail, the first change after a quiet spell is drawn at once, later ones paced (see above).
  const now = performance.now();
  const gap = rowsChanged > FOLLOW_FAST_ROWS ? FOLLOW_FAST_REFRESH_MS : FOLLOW_REFRESH_MS;
  if (!table.follow || rowsChanged === 0 || now - lastTableRender >= gap) {
    table.render(model);
    lastTableRender = now;
    rowsChanged = 0;
  } else {
    scheduleRender();
  }

  const lost = stats.lost;
  const mismatch = stats.mismatch;
  lostBanner.hidden = lost <= 0 && mismatch === 0;
  const notes: string[] = [];
  if (lost > 0) notes.push(`${formatCount(lost)} events lost — the kernel buffer overflowed; raise buffer size or add a filter`);
  if (mismatch > 0) notes.push(`${formatCount(mismatch)} events the kernel counted were neither received nor reported lost`);
  if (mismatch < 0) notes.push(`${formatCount(-mismatch)} more records received than the kernel counted`);
  if (notes.length) setText(lostBanner, notes.join(' · '));
  // Probes counted in the kernel have no rows: the table says so rather than stay silently empty of them.
  const kernel = [...probes.values()].filter((p) => p.aggregated).map((p) => p.name);
  aggregatedNotice.hidden = kernel.length === 0;
  if (kernel.length)
    setText(
      aggregatedNotice,
      `${kernel.length === 1 ? `${kernel[0]} is` : `${kernel.join(', ')} are`} aggregated in the kernel: counts and latency are in Probes, no per-hit rows`,
    );
  const dropped = view.dropped + stats.historyDropped;
  droppedNotice.hidden = dropped <= 0;
  if (dropped > 0) setText(droppedNotice, `${formatCount(dropped)} older hits dropped from view`);

  const shown = formatCount(view.length);
  const base = `${session.state}${session.detail ? ` (${session.detail})` : ''} · ${shown} rows`;
  const paused = view.paused ? ` · paused, ${formatCount(view.queued)} new hits waiting` : '';
  setText(status, `${base}${paused}${notice ? ` · ${notice}` : ''}`);

  if (statsDirty) {
    statsDirty = false;
    counts.render(stats.counts, new Set([...probes.values()].filter((p) => p.aggregated).map((p) => p.name)));
    if (histogramProbe && !(histogramProbe in stats.counts)) histogramProbe = null;
    const h = histogramProbe
      ? (stats.latency[histogramProbe] ?? null)
      : Object.keys(stats.latency).length > 0
        ? sumHistograms(Object.values(stats.latency))
        : null;
    histogram.render(histogramProbe ?? 'all probes', h);
    // The picked probe's sites; with nothing picked, those of the only probe that names sites.
    const withSites = Object.keys(stats.sites);
    const siteProbe = histogramProbe ?? (withSites.length === 1 ? withSites[0] : null);
    const activeSite = /(?:^|\s)site:(\S+)/i.exec(view.filterString)?.[1].toLowerCase() ?? null;
    sites.render(siteProbe, siteProbe ? stats.sites[siteProbe] : undefined, activeSite);
  }
}

// ---- messages -----------------------------------------------------------------------------------------
window.addEventListener('message', (ev: MessageEvent<ToWebview>) => {
  const msg = ev.data;
  switch (msg.type) {
    case 'init':
      view = new HitView(msg.historyCapacity > 0 ? msg.historyCapacity : DEFAULT_CAPACITY);
      if (filter.value) view.setFilter(filter.value);
      table.invalidate();
      table.resetAnchor();
      document.body.dataset.version = msg.version;
      setProbes(msg.probes);
      stats = namesAsData(msg.stats);
      session = msg.session;
      snapshotRemaining = msg.snapshotRows;
      statsDirty = true;
      break;
    case 'hits':
      undrawn++;
      rowsChanged += view.receive(msg.batch);
      snapshotRemaining -= msg.batch.n;
      break;
    case 'probes':
      setProbes(msg.probes);
      statsDirty = true;
      break;
    case 'stats':
      // A structured clone's objects have Object.prototype again: its maps are keyed by probe names.
      stats = namesAsData(msg.stats);
      statsDirty = true;
      break;
    case 'session':
      session = msg.session;
      break;
    case 'cleared':
      view.clear();
      table.invalidate();
      stats = emptyStats();
      statsDirty = true;
      break;
    case 'response':
      requests.settle(msg);
      break;
    default:
      unhandled(msg);
  }
  scheduleRender();
});

function setProbes(list: readonly ProbeInfo[]): void {
  probes.clear();
  for (const p of list) probes.set(p.name, p);
}

// ---- actions ------------------------------------------------------------------------------------------
function applyFilter(text: string): void {
  view.setFilter(text);
  statsDirty = true; // the site view marks the site the table is narrowed to
  table.resetAnchor();
  table.invalidate();
  // The filter stays here (and in the saved state); an export sends it with its request.
  saveState();
  scheduleRender();
}

function togglePause(): void {
  if (view.paused) view.resume();
  else view.pause();
  pauseBtn.setLabel(view.paused ? 'Resume' : 'Pause');
  pauseBtn.setPressed(view.paused);
  scheduleRender();
}

function clearAll(): void {
  view.clear();
  table.invalidate();
  stats = emptyStats();
  statsDirty = true;
  post({ type: 'clear' });
  scheduleRender();
}

function exportAs(format: ExportFormat): void {
  notice = `exporting ${format.toUpperCase()}…`;
  scheduleRender();
  requests
    .request(post, (requestId) => ({ type: 'export', requestId, format, filter: view.filterString }))
    .then((result) => {
      notice = result;
    })
    .catch((e: Error) => {
      notice = `export failed: ${e.message}`;
    })
    .finally(scheduleRender);
}

function openSource(key: number): void {
  if (!view.read(key, scratch)) return;
  const probe = view.str(scratch.probe);
  const info = probes.get(probe);
  post({ type: 'openSource', probe, file: info?.file, line: info?.line });
}

// ---- state --------------------------------------------------------------------------------------------
function saveState(): void {
  vscodeApi.setState({ filter: view.filterString, follow: table.follow, scrollRow: table.scrollRow, histogramProbe });
}

let saveTimer: ReturnType<typeof setTimeout> | undefined;
function saveStateSoon(): void {
  clearTimeout(saveTimer);
  saveTimer = setTimeout(saveState, 250);
}

function el(tag: string, className: string): HTMLElement {
  const e = document.createElement(tag);
  e.className = className;
  return e;
}

function setText(e: HTMLElement, t: string): void {
  if (e.textContent !== t) e.textContent = t;
}

post({ type: 'ready' });

// The latency histogram: log2 buckets drawn as DOM bars (heights via CSSOM, which the CSP allows,
// unlike inline style attributes). Shows one probe, or all probes summed.
import type { LatencyHistogram } from '../../src/shared/protocol';
import { bucketLabel, formatCount, formatDuration } from '../format';

export function sumHistograms(hs: readonly LatencyHistogram[]): LatencyHistogram {
  // Percentiles do not add up: one probe keeps its own, a sum of several has none.
  if (hs.length === 1) return hs[0];
  const buckets: number[] = [];
  let count = 0;
  let maxNs = 0;
  for (const h of hs) {
    h.buckets.forEach((n, i) => (buckets[i] = (buckets[i] ?? 0) + n));
    count += h.count;
    maxNs = Math.max(maxNs, h.maxNs);
  }
  for (let i = 0; i < buckets.length; i++) buckets[i] ??= 0;
  return { buckets, count, maxNs };
}

/** The bucket range worth drawing: first to last non-empty, or null for an empty histogram. */
export function occupiedRange(h: LatencyHistogram): { first: number; last: number } | null {
  let first = -1;
  let last = -1;
  h.buckets.forEach((n, i) => {
    if (n > 0) {
      if (first < 0) first = i;
      last = i;
    }
  });
  return first < 0 ? null : { first, last };
}

export class HistogramView {
  readonly element: HTMLElement;
  private readonly title: HTMLElement;
  private readonly bars: HTMLElement;
  private lastKey = '';

  constructor() {
    this.element = document.createElement('section');
    this.element.className = 'pl-histogram';
    this.element.setAttribute('aria-label', 'Latency histogram');
    this.title = document.createElement('h3');
    this.bars = document.createElement('div');
    this.bars.className = 'pl-bars';
    this.element.append(this.title, this.bars);
  }

  render(label: string, h: LatencyHistogram | null): void {
    const key = `${label}|${h ? h.buckets.join(',') : ''}`;
    if (key === this.lastKey) return;
    this.lastKey = key;
    const range = h ? occupiedRange(h) : null;
    this.title.textContent =
      h && range
        ? `Latency · ${label} · ${formatCount(h.count)} calls · ${
            h.p50Ns !== undefined && h.p99Ns !== undefined ? `p50 ${formatDuration(h.p50Ns)} · p99 ${formatDuration(h.p99Ns)} · ` : ''
          }max ${formatDuration(h.maxNs)}`
        : `Latency · ${label} · no returns yet`;
    this.bars.replaceChildren();
    if (!h || !range) return;
    let peak = 0;
    for (let i = range.first; i <= range.last; i++) peak = Math.max(peak, h.buckets[i]);
    for (let i = range.first; i <= range.last; i++) {
      const n = h.buckets[i] ?? 0;
      const col = document.createElement('div');
      col.className = 'pl-bar';
      col.title = `${bucketLabel(i)} – ${bucketLabel(i + 1)}: ${formatCount(n)}`;
      col.dataset.bucket = String(i);
      col.dataset.count = String(n);
      const fill = document.createElement('div');
      fill.className = 'pl-bar-fill';
      fill.style.height = `${peak > 0 ? Math.max(n > 0 ? 2 : 0, (100 * n) / peak) : 0}%`;
      const lab = document.createElement('span');
      lab.className = 'pl-bar-label';
      lab.textContent = bucketLabel(i);
      col.append(fill, lab);
      this.bars.appendChild(col);
    }
  }
}

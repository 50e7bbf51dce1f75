// Which columns the hit table shows at its current width. Widths are in `ch` of the table's (monospace) font,
// so the thresholds follow the user's editor font size. Narrow panels (a side editor column is ~400 px) put
// each hit on two lines — time, comm and probe, then the arguments with the return value and latency — so the
// arguments, which are what users trace for, keep the whole width; wider panels add pid/tid, then the host.
export type LayoutName = 'narrow' | 'medium' | 'wide';

export interface TableLayout {
  name: LayoutName;
  /** px per row (narrow rows hold two lines) */
  rowHeight: number;
}

/** below this many `ch` the table goes to two lines per hit */
export const NARROW_BELOW_CH = 92;
/** below this many `ch` the host column gives way */
export const MEDIUM_BELOW_CH = 107;

/** The layout for a table `widthPx` wide whose font's `0` is `chPx` wide; `lineHeight`: one line's px. */
export function layoutFor(widthPx: number, chPx: number, lineHeight: number): TableLayout {
  const ch = widthPx / Math.max(1, chPx);
  // Two lines share a row's padding: a little less than twice one line.
  if (ch < NARROW_BELOW_CH) return { name: 'narrow', rowHeight: 2 * lineHeight - 4 };
  if (ch < MEDIUM_BELOW_CH) return { name: 'medium', rowHeight: lineHeight };
  return { name: 'wide', rowHeight: lineHeight };
}

/** The width of `0` in `el`'s font, in px. */
export function measureCh(el: HTMLElement): number {
  const probe = document.createElement('span');
  probe.textContent = '0'.repeat(100);
  probe.style.cssText = 'position:absolute;visibility:hidden;white-space:pre;font:inherit';
  el.appendChild(probe);
  const w = probe.getBoundingClientRect().width / 100;
  probe.remove();
  return w > 0 ? w : 8;
}

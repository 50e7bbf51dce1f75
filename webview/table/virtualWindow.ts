// The arithmetic of a fixed-row-height virtual list: which rows the DOM must hold, where to scroll to
// reveal one, and where keyboard navigation moves the selection. No DOM here, so it is unit-tested directly.
import { unreachable } from '../../src/shared/unreachable';

export interface RowRange {
  /** first row index in the DOM (inclusive) */
  start: number;
  /** last row index in the DOM (exclusive) */
  end: number;
}

export function visibleRange(scrollTop: number, viewportHeight: number, rowHeight: number, total: number, overscan: number): RowRange {
  if (total <= 0 || viewportHeight <= 0) return { start: 0, end: 0 };
  const first = Math.floor(Math.max(0, scrollTop) / rowHeight);
  const last = Math.ceil((Math.max(0, scrollTop) + viewportHeight) / rowHeight);
  const start = Math.max(0, Math.min(first, total) - overscan);
  const end = Math.min(total, last + overscan);
  return { start: Math.min(start, end), end };
}

/** Smallest scroll change that brings row `index` fully into view (unchanged when it already is). */
export function scrollToReveal(index: number, scrollTop: number, viewportHeight: number, rowHeight: number): number {
  const top = index * rowHeight;
  const bottom = top + rowHeight;
  if (top < scrollTop) return top;
  // A viewport shorter than a row shows the row's top.
  if (bottom > scrollTop + viewportHeight) return Math.max(0, Math.min(top, bottom - viewportHeight));
  return scrollTop;
}

/** Rows per page for PageUp/PageDown: the rows fully visible, at least one. */
export function pageRows(viewportHeight: number, rowHeight: number): number {
  return Math.max(1, Math.floor(viewportHeight / rowHeight));
}

export type NavKey = 'ArrowUp' | 'ArrowDown' | 'PageUp' | 'PageDown' | 'Home' | 'End';

export function isNavKey(key: string): key is NavKey {
  return key === 'ArrowUp' || key === 'ArrowDown' || key === 'PageUp' || key === 'PageDown' || key === 'Home' || key === 'End';
}

/** New selected index after a navigation key; -1 (nothing selected) enters at the nearest sensible row. */
export function moveSelection(key: NavKey, current: number, total: number, page: number): number {
  if (total <= 0) return -1;
  const last = total - 1;
  switch (key) {
    case 'Home':
      return 0;
    case 'End':
      return last;
    case 'ArrowUp':
      return current < 0 ? last : Math.max(0, current - 1);
    case 'ArrowDown':
      return current < 0 ? 0 : Math.min(last, current + 1);
    case 'PageUp':
      return current < 0 ? Math.max(0, last - page) : Math.max(0, current - page);
    case 'PageDown':
      return current < 0 ? Math.min(last, page) : Math.min(last, current + page);
    default:
      return unreachable(key, 'navigation key');
  }
}

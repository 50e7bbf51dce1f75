// A virtualised table with fixed row height: the DOM holds only the rows in view plus an overscan,
// positioned inside a spacer as tall as the whole list. It follows the tail while scrolled to the
// bottom, keeps the row under the user's eyes in place otherwise, and is driven by the keyboard.
// Tests: test/unit/webview/panel.dom.test.ts, test/unit/webview/panelLayout.dom.test.ts
import { layoutFor, measureCh, type TableLayout } from './layout';
import { isNavKey, moveSelection, pageRows, scrollToReveal, visibleRange } from './virtualWindow';

export interface Column {
  id: string;
  title: string;
}

export interface TableModel {
  readonly length: number;
  /** a stable key for a row (survives rows being added or evicted) */
  keyAt(index: number): number;
  /** -1 when the key is no longer in the view */
  indexOfKey(key: number): number;
  /** write row `index`'s text into its cells */
  fill(index: number, cells: HTMLElement[]): void;
}

interface RowEl {
  el: HTMLElement;
  cells: HTMLElement[];
  key: number;
}

export interface VirtualTableOptions {
  /** px per row in the wide layouts; narrow layouts may use more (see layout.ts) */
  rowHeight: number;
  overscan?: number;
  /** Enter or click on a row */
  onActivate(key: number): void;
  /** the user scrolled or moved the selection (for state persistence) */
  onViewChange?(): void;
}

export class VirtualTable {
  readonly element: HTMLElement;
  readonly viewport: HTMLElement;
  /** while true, new rows scroll into view */
  follow = true;
  selectedKey = -1;
  private readonly spacer: HTMLElement;
  private readonly rows: RowEl[] = [];
  private readonly overscan: number;
  private anchorKey = -1;
  private anchorOffset = 0;
  private lastSetTop = -1;
  private model: TableModel | null = null;
  private rh: number;
  private chPx = 8;
  /** The layout for the current width (columns shown, row height); `data-layout` on the table for the CSS. */
  layout: TableLayout;

  constructor(
    private readonly columns: readonly Column[],
    private readonly opts: VirtualTableOptions,
    private readonly requestRender: () => void,
  ) {
    this.overscan = opts.overscan ?? 10;
    this.rh = opts.rowHeight;
    this.layout = { name: 'wide', rowHeight: opts.rowHeight };
    this.element = document.createElement('div');
    this.element.className = 'pl-table';
    this.element.dataset.layout = this.layout.name;
    this.element.style.setProperty('--pl-row-height', `${this.rh}px`);
    this.element.setAttribute('role', 'grid');
    const header = document.createElement('div');
    header.className = 'pl-row pl-header';
    header.setAttribute('role', 'row');
    header.setAttribute('aria-rowindex', '1');
    for (const c of columns) {
      const h = document.createElement('span');
      h.className = `pl-cell pl-col-${c.id}`;
      h.setAttribute('role', 'columnheader');
      h.textContent = c.title;
      header.appendChild(h);
    }
    this.viewport = document.createElement('div');
    this.viewport.className = 'pl-viewport';
    this.viewport.tabIndex = 0;
    this.viewport.setAttribute('aria-label', 'Hits');
    this.spacer = document.createElement('div');
    this.spacer.className = 'pl-spacer';
    this.viewport.appendChild(this.spacer);
    this.element.append(header, this.viewport);

    this.viewport.addEventListener('scroll', () => this.onScroll(), { passive: true });
    this.viewport.addEventListener('keydown', (e) => this.onKey(e));
    this.spacer.addEventListener('click', (e) => this.onClick(e));
    new ResizeObserver(() => {
      this.relayout();
      this.requestRender();
    }).observe(this.viewport);
  }

  get rowHeight(): number {
    return this.rh;
  }

  /** Picks the layout for the table's width; keeps the row at the top of the view in place across a change. */
  relayout(): void {
    const width = this.element.clientWidth;
    if (width <= 0) return;
    // Measured each time: VS Code changes the editor font variables in place when the user changes the font.
    this.chPx = measureCh(this.element);
    const next = layoutFor(width, this.chPx, this.opts.rowHeight);
    if (next.name === this.layout.name && next.rowHeight === this.rh) return;
    if (!this.follow) this.anchorAtTop();
    this.layout = next;
    this.element.dataset.layout = next.name;
    if (next.rowHeight !== this.rh) {
      this.rh = next.rowHeight;
      this.element.style.setProperty('--pl-row-height', `${next.rowHeight}px`);
      this.anchorOffset = 0;
      this.lastSetTop = -1;
    }
  }

  /** Scroll position as rows from the top, for state persistence. */
  get scrollRow(): number {
    return this.viewport.scrollTop / this.rowHeight;
  }

  restoreScroll(row: number, follow: boolean): void {
    this.follow = follow;
    if (!follow && this.model) {
      const i = Math.min(Math.max(0, Math.floor(row)), Math.max(0, this.model.length - 1));
      this.anchorKey = this.model.length > 0 ? this.model.keyAt(i) : -1;
      this.anchorOffset = 0;
    }
    this.requestRender();
  }

  /** Forget the anchor (e.g. the filter changed, so the old row may be gone). */
  resetAnchor(): void {
    this.anchorKey = -1;
  }

  render(model: TableModel): void {
    this.model = model;
    const rh = this.rowHeight;
    const total = model.length;
    this.spacer.style.height = `${total * rh}px`;
    this.element.setAttribute('aria-rowcount', String(total + 1));
    const vh = this.viewport.clientHeight;
    let top = this.viewport.scrollTop;
    if (this.follow) {
      top = Math.max(0, total * rh - vh);
    } else if (this.anchorKey >= 0) {
      const idx = model.indexOfKey(this.anchorKey);
      if (idx >= 0) top = idx * rh + this.anchorOffset;
    }
    if (Math.abs(top - this.viewport.scrollTop) >= 1) this.viewport.scrollTop = top;
    top = this.viewport.scrollTop;
    this.lastSetTop = top;

    const { start, end } = visibleRange(top, vh, rh, total, this.overscan);
    const needed = end - start;
    while (this.rows.length < needed) this.rows.push(this.makeRow());
    for (let i = 0; i < this.rows.length; i++) {
      const r = this.rows[i];
      if (i >= needed) {
        if (r.key !== -2) {
          r.el.style.display = 'none';
          r.key = -2;
        }
        continue;
      }
      const index = start + i;
      const key = model.keyAt(index);
      if (r.key === -2) r.el.style.display = '';
      r.el.style.transform = `translateY(${index * rh}px)`;
      r.el.setAttribute('aria-rowindex', String(index + 2));
      if (r.key !== key) {
        r.key = key;
        r.el.dataset.key = String(key);
        model.fill(index, r.cells);
      }
    }
    this.markSelection();
  }

  /** Shows the selection on the rows in the DOM now, not at the next frame: a click's row is selected at once. */
  private markSelection(): void {
    for (const r of this.rows) {
      const selected = r.key >= 0 && r.key === this.selectedKey;
      if (r.el.classList.contains('pl-selected') !== selected) {
        r.el.classList.toggle('pl-selected', selected);
        r.el.setAttribute('aria-selected', String(selected));
      }
    }
  }

  /** Rows currently in the DOM must be refilled (their data changed under the same key, e.g. after a clear). */
  invalidate(): void {
    for (const r of this.rows) if (r.key !== -2) r.key = -1;
  }

  private makeRow(): RowEl {
    const el = document.createElement('div');
    el.className = 'pl-row';
    el.setAttribute('role', 'row');
    el.setAttribute('aria-selected', 'false');
    const cells = this.columns.map((c) => {
      const cell = document.createElement('span');
      cell.className = `pl-cell pl-col-${c.id}`;
      cell.setAttribute('role', 'gridcell');
      el.appendChild(cell);
      return cell;
    });
    this.spacer.appendChild(el);
    return { el, cells, key: -1 };
  }

  private anchorAtTop(): void {
    if (!this.model || this.model.length === 0) return;
    const top = this.viewport.scrollTop;
    const idx = Math.min(Math.floor(top / this.rowHeight), this.model.length - 1);
    this.anchorKey = this.model.keyAt(idx);
    this.anchorOffset = top - idx * this.rowHeight;
  }

  private onScroll(): void {
    const top = this.viewport.scrollTop;
    // Our own scrollTop writes also fire 'scroll'; only the user's scrolling changes follow/anchor.
    if (Math.abs(top - this.lastSetTop) < 1 || !this.model) return;
    const rh = this.rowHeight;
    const total = this.model.length;
    this.follow = top + this.viewport.clientHeight >= total * rh - rh / 2;
    const idx = Math.min(Math.floor(top / rh), total - 1);
    this.anchorKey = idx >= 0 ? this.model.keyAt(idx) : -1;
    this.anchorOffset = top - idx * rh;
    this.lastSetTop = top;
    this.requestRender();
    this.opts.onViewChange?.();
  }

  private onKey(e: KeyboardEvent): void {
    const model = this.model;
    if (!model) return;
    if (e.key === 'Enter') {
      if (this.selectedKey >= 0 && model.indexOfKey(this.selectedKey) >= 0) this.opts.onActivate(this.selectedKey);
      e.preventDefault();
      return;
    }
    if (!isNavKey(e.key)) return;
    e.preventDefault();
    const rh = this.rowHeight;
    const vh = this.viewport.clientHeight;
    const current = this.selectedKey >= 0 ? model.indexOfKey(this.selectedKey) : -1;
    const next = moveSelection(e.key, current, model.length, pageRows(vh, rh));
    if (next < 0) return;
    this.selectedKey = model.keyAt(next);
    const top = scrollToReveal(next, this.viewport.scrollTop, vh, rh);
    this.follow = next === model.length - 1;
    const idx = Math.floor(top / rh);
    this.anchorKey = model.keyAt(Math.min(idx, model.length - 1));
    this.anchorOffset = top - idx * rh;
    this.requestRender();
    this.opts.onViewChange?.();
  }

  private onClick(e: MouseEvent): void {
    const rowEl = (e.target as HTMLElement).closest<HTMLElement>('.pl-row');
    if (!rowEl || rowEl.dataset.key === undefined) return;
    const key = Number(rowEl.dataset.key);
    this.selectedKey = key;
    this.follow = false;
    this.anchorAtTop();
    this.viewport.focus({ preventScroll: true });
    this.markSelection();
    this.requestRender();
    this.opts.onActivate(key);
  }
}

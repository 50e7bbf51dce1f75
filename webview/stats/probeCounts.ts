// Per-probe hit counts (the host's authoritative totals, not just what the history still holds).
// Clicking a probe shows its latency histogram; clicking it again goes back to all probes. A probe counted in the
// kernel is marked so (its figures are the kernel's; it has no hit rows).
// Tests: test/unit/webview/panel.dom.test.ts
import { badge, type ToolkitBadge } from '../toolkit';
import { formatCount } from '../format';

export class ProbeCountsView {
  readonly element: HTMLElement;
  private readonly list: HTMLElement;
  private readonly items = new Map<string, { li: HTMLElement; badge: ToolkitBadge }>();
  selected: string | null = null;

  constructor(private readonly onSelect: (probe: string | null) => void) {
    this.element = document.createElement('section');
    this.element.className = 'pl-counts';
    const h = document.createElement('h3');
    h.textContent = 'Probes';
    this.list = document.createElement('ul');
    this.list.setAttribute('role', 'listbox');
    this.list.setAttribute('aria-label', 'Hits per probe');
    this.element.append(h, this.list);
  }

  render(counts: Record<string, number>, aggregated: ReadonlySet<string> = new Set()): void {
    const names = Object.keys(counts).sort();
    for (const name of names) {
      let item = this.items.get(name);
      if (!item) {
        const li = document.createElement('li');
        li.setAttribute('role', 'option');
        li.tabIndex = 0;
        li.dataset.probe = name;
        const label = document.createElement('span');
        label.className = 'pl-probe-name';
        label.textContent = name;
        const b = badge('0');
        li.append(label, b.element);
        const pick = (): void => {
          this.selected = this.selected === name ? null : name;
          this.onSelect(this.selected);
          this.markSelection();
        };
        li.addEventListener('click', pick);
        li.addEventListener('keydown', (e) => {
          if (e.key === 'Enter' || e.key === ' ') {
            e.preventDefault();
            pick();
          }
        });
        item = { li, badge: b };
        this.items.set(name, item);
        this.list.appendChild(li);
      }
      item.badge.set(formatCount(counts[name]));
      this.markPath(item.li, aggregated.has(name));
    }
    for (const [name, item] of this.items) {
      if (!(name in counts)) {
        item.li.remove();
        this.items.delete(name);
      }
    }
    this.markSelection();
  }

  /** "in the kernel" beside a probe whose figures the kernel's hist triggers produced. */
  private markPath(li: HTMLElement, kernel: boolean): void {
    let tag = li.querySelector<HTMLElement>('.pl-probe-path');
    if (kernel && !tag) {
      tag = document.createElement('span');
      tag.className = 'pl-probe-path';
      tag.textContent = 'in the kernel';
      tag.title = 'aggregated in the kernel (hist triggers): counts and latency, no per-hit rows';
      li.insertBefore(tag, li.lastChild);
    } else if (!kernel) tag?.remove();
    li.dataset.path = kernel ? 'kernel' : 'stream';
  }

  private markSelection(): void {
    for (const [name, item] of this.items) item.li.setAttribute('aria-selected', String(name === this.selected));
  }
}

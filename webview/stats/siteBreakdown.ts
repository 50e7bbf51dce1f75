// One probe's hits by site: a function is all of its copies (its entry, clones, parts, inlined copies), and
// a count that looks wrong is usually one copy that ran more or less than expected. Each site shows its
// count, latest values and latency; clicking a site narrows the table to its hits (the `site:ADDR` filter
// word), clicking it again shows all hits again.
// Tests: test/unit/webview/panel.dom.test.ts
import type { SiteStats } from '../../src/shared/protocol';
import { describeSite, escapeText } from '../../src/shared/hitText';
import { badge } from '../toolkit';
import { formatCount, formatDuration } from '../format';

export class SiteBreakdownView {
  readonly element: HTMLElement;
  private readonly title: HTMLElement;
  private readonly list: HTMLElement;
  private lastKey = '';

  /** `onPick(address)` asks to filter the table to one site's hits (null: back to all). */
  constructor(private readonly onPick: (address: string | null) => void) {
    this.element = document.createElement('section');
    this.element.className = 'pl-sites';
    this.element.hidden = true;
    this.title = document.createElement('h3');
    this.list = document.createElement('ul');
    this.list.setAttribute('role', 'listbox');
    this.list.setAttribute('aria-label', 'Hits per site');
    this.element.append(this.title, this.list);
  }

  /** `active`: the site address the table is filtered to, if any. */
  render(probe: string | null, sites: readonly SiteStats[] | undefined, active: string | null): void {
    const key = probe && sites ? `${probe}\n${active}\n${JSON.stringify(sites)}` : '';
    if (key === this.lastKey) return;
    this.lastKey = key;
    this.element.hidden = !key;
    this.list.replaceChildren();
    if (!probe || !sites) return;
    const total = sites.reduce((n, s) => n + s.count, 0);
    this.title.textContent = `${probe} · ${sites.length} site${sites.length === 1 ? '' : 's'} · ${formatCount(total)} hits`;
    for (const s of sites) this.list.append(this.item(s, s.site.address === active));
  }

  private item(s: SiteStats, selected: boolean): HTMLElement {
    const li = document.createElement('li');
    li.setAttribute('role', 'option');
    li.setAttribute('aria-selected', String(selected));
    li.tabIndex = 0;
    li.dataset.site = s.site.address;
    li.title = selected ? 'Show the hits of every site' : 'Show only this site’s hits';
    const head = document.createElement('div');
    head.className = 'pl-site-head';
    const name = document.createElement('span');
    name.className = 'pl-site-name';
    name.textContent = `${s.site.kind} ${escapeText(s.site.address)}`;
    head.append(name, badge(formatCount(s.count)).element);
    li.append(head);
    const line = (cls: string, text: string): void => {
      if (!text) return;
      const d = document.createElement('div');
      d.className = `pl-site-detail ${cls}`;
      d.textContent = text;
      li.append(d);
    };
    line('pl-site-where', describeSite(s.site, 'place'));
    const values = [s.lastArgs, s.lastRet && `→ ${s.lastRet}`].filter(Boolean).join(' ');
    line('pl-site-last', values && `last: ${values}`);
    line(
      'pl-site-latency',
      s.latencyCount > 0
        ? `latency: mean ${formatDuration(s.latencySumNs / s.latencyCount)}, max ${formatDuration(s.latencyMaxNs)} (${formatCount(s.latencyCount)})`
        : '',
    );
    const pick = (): void => this.onPick(selected ? null : s.site.address);
    li.addEventListener('click', pick);
    li.addEventListener('keydown', (e) => {
      if (e.key === 'Enter' || e.key === ' ') {
        e.preventDefault();
        pick();
      }
    });
    return li;
  }
}

// Text for the inline decoration, the hover and the status bar. Fixed formatting (not the UI locale) so what
// a user reads and what tests assert are the same everywhere: `● 1,204 hits · last a=3 b=-7 · p50 2.1µs`.
import type { LatencyStats } from '../../core/session/aggregates';
import type { HitValue } from '../../core/tracefs/hitParser';
import type { ProbeState, SpecStats } from './stats';

export function formatCount(n: number): string {
  const s = String(Math.trunc(Math.abs(n)));
  return (n < 0 ? '-' : '') + s.replace(/\B(?=(\d{3})+(?!\d))/g, ',');
}

/** Nanoseconds with two significant digits: 850ns, 2.1µs, 15ms, 1.2s. */
export function formatNs(ns: number): string {
  const units: Array<[number, string]> = [
    [1e9, 's'],
    [1e6, 'ms'],
    [1e3, 'µs'],
  ];
  for (const [scale, unit] of units) {
    if (ns >= scale) {
      const v = ns / scale;
      return `${v >= 10 ? Math.round(v) : Math.round(v * 10) / 10}${unit}`;
    }
  }
  return `${Math.round(ns)}ns`;
}

export function formatValue(v: HitValue | undefined, max = 24): string {
  if (v === undefined || v === null) return '?';
  if (typeof v === 'number') return String(v);
  if (Array.isArray(v)) return `[${v.map((x) => formatValue(x, max)).join(',')}]`;
  // Pointers and big integers come as strings already formatted ("0x…", decimal); text gets quotes.
  const s = /^(0x[0-9a-f]+|-?[0-9]+)$/i.test(v) ? v : JSON.stringify(v);
  return s.length > max ? `${s.slice(0, max - 1)}…` : s;
}

export function formatValues(values: Record<string, HitValue>): string {
  return Object.entries(values)
    .map(([k, v]) => `${k}=${formatValue(v)}`)
    .join(' ');
}

/** The inline text after a probe's line; `undefined` stats means armed and silent so far. */
export function decorationText(st: SpecStats | undefined, state: ProbeState, problem?: string): string {
  if (state === 'error') return `● error${problem ? `: ${problem}` : ''}`;
  if (state === 'stale') return `● stale (binary rebuilt) · ${formatCount(st?.hits ?? 0)} ${plural(st?.hits ?? 0)}`;
  if (state === 'pending') return '○ not armed';
  if (state === 'disabled') return '○ disabled';
  const hits = st?.hits ?? 0;
  // After Stop the last session's numbers stay, with a hollow dot.
  const parts = [`${state === 'stopped' ? '○' : '●'} ${formatCount(hits)} ${plural(hits)}`];
  const last = st?.lastHits[st.lastHits.length - 1];
  if (last && Object.keys(last.values).length) parts.push(`last ${formatValues(last.values)}`);
  if (st?.latency && st.latency.count > 0) parts.push(`p50 ${formatNs(st.latency.p50)}`);
  return parts.join(' · ');
}

function plural(n: number): string {
  return n === 1 ? 'hit' : 'hits';
}

const BARS = '▁▂▃▄▅▆▇█';

/** A text sparkline over the occupied range of log2 latency buckets. */
export function sparkline(log2: readonly number[]): { bars: string; from: number; to: number } | undefined {
  let lo = log2.findIndex((c) => c > 0);
  if (lo < 0) return undefined;
  let hi = log2.length - 1;
  while (hi > lo && log2[hi] === 0) hi--;
  const max = Math.max(...log2.slice(lo, hi + 1));
  let bars = '';
  for (let i = lo; i <= hi; i++)
    bars += log2[i] === 0 ? ' ' : BARS[Math.min(BARS.length - 1, Math.floor((log2[i] / max) * (BARS.length - 1)))];
  if (lo === hi) lo = hi;
  return { bars, from: 2 ** lo, to: 2 ** (hi + 1) };
}

function latencyLines(l: LatencyStats): string[] {
  const out = [
    `**Latency** (${formatCount(l.count)} calls): p50 ${formatNs(l.p50)} · p90 ${formatNs(l.p90)} · p99 ${formatNs(l.p99)} · max ${formatNs(l.max)}`,
  ];
  const sp = sparkline(l.log2);
  if (sp) out.push('', `\`${formatNs(sp.from)} ${sp.bars} ${formatNs(sp.to)}\``);
  return out;
}

/** Markdown for the hover on a probe's line. */
export function hoverMarkdown(spec: string, st: SpecStats | undefined, state: ProbeState, problems: readonly string[] = []): string {
  const lines = [`**ProbeLens** \`${spec.replace(/`/g, "'")}\` — ${state}`];
  for (const p of problems) lines.push('', `⚠ ${p}`);
  if (st) {
    const hosts = Object.entries(st.byHost);
    if (hosts.length) lines.push('', hosts.map(([h, n]) => `${h}: ${formatCount(n)} ${plural(n)}`).join(' · '));
    lines.push(...siteLines(st));
    if (st.lastHits.length) {
      lines.push('', '**Last hits**', '');
      for (const h of [...st.lastHits].reverse())
        lines.push(`- \`${h.host}\` ${h.ts.toFixed(6)} — ${formatValues(h.values) || '(no values)'}`);
    }
    if (st.latency && st.latency.count > 0) lines.push('', ...latencyLines(st.latency));
  }
  return lines.join('\n');
}

/** The per-site breakdown of a function probe armed at more than one site. */
export function siteLines(st: SpecStats): string[] {
  if (!st.bySite || st.bySite.length < 2) return [];
  const out = ['', `**By site** (${st.bySite.length})`, ''];
  for (const s of st.bySite) {
    const where = s.caller ? ` in ${s.caller}` : '';
    const at = s.file ? ` (${s.file.replace(/^.*\//, '')}:${s.line ?? '?'})` : '';
    out.push(`- ${s.kind} \`${s.address}\`${where}${at}: ${formatCount(s.hits)} ${plural(s.hits)}`);
  }
  return out;
}

/** Hit rate from two (time, total) samples: the status bar's "N hits/s". */
export function hitRate(prev: { t: number; total: number } | undefined, now: { t: number; total: number }): number {
  if (!prev || now.t <= prev.t) return 0;
  return Math.max(0, (now.total - prev.total) / ((now.t - prev.t) / 1000));
}

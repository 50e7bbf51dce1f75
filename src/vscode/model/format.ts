// Text for the inline decoration, the hover and the status bar. Fixed formatting (not the UI locale) so what
// a user reads and what tests assert are the same everywhere: `● 1,204 hits · last a=3 b=-7 · p50 2.1µs`.
import { BTF_SOURCE, DWARF_SOURCE, NO_INLINED_NOTE } from '../../core/probes/kernelBtf';
import { percentiles, type Latency } from '../../core/session/latency';
import { formatCount, formatDuration, describeSite, formatTs, formatValues } from '../../shared/hitText';
import type { CountPath, ProbeState, SpecStats } from './stats';

export { formatCount, formatDuration, formatValue, formatValues } from '../../shared/hitText';

/**
 * Markdown that shows `s` as the literal text where it sits mid-line (values are escaped text already, one line):
 * CommonMark lets a backslash escape any ASCII punctuation, so a traced program's strings cannot add code spans,
 * emphasis, links, images, tables or HTML to a hover.
 */
export function escapeMarkdown(s: string): string {
  return s.replace(/[\\`*_[\]<>&~|]/g, '\\$&');
}

/** The inline text after a probe's line; `undefined` stats means armed and silent so far. */
export function decorationText(st: SpecStats | undefined, state: ProbeState, problem?: string): string {
  if (state === 'error') return `● error${problem ? `: ${problem}` : ''}`;
  if (state === 'stale') return `● stale (binary rebuilt) · ${formatCount(st?.hits ?? 0)} ${plural(st?.hits ?? 0)}`;
  if (state === 'pending') return '○ not armed';
  if (state === 'disabled') return '○ disabled';
  const hits = st?.hits ?? 0;
  // After Stop the last session's numbers stay, with a hollow dot.
  const parts = [`${state === 'stopped' ? '○' : '●'} ${counted(hits, st)}`];
  const last = st?.lastHits[st.lastHits.length - 1];
  if (last && Object.keys(last.values).length) parts.push(`last ${formatValues(last.values, 24, last.cut)}`);
  if (st?.latency && st.latency.count > 0) parts.push(`p50 ${formatDuration(percentiles(st.latency).p50)}`);
  const path = pathOf(st);
  if (path === 'kernel') parts.push('aggregated in the kernel');
  else if (path === 'both') parts.push('aggregated in the kernel (streamed on some targets)');
  return parts.join(' · ');
}

/** Which path the figures came from over every host: the kernel's, the stream's, or both. */
export function pathOf(st: SpecStats | undefined): CountPath | 'both' | undefined {
  const paths = new Set(Object.values(st?.paths ?? {}));
  if (!paths.size) return undefined;
  return paths.size > 1 ? 'both' : [...paths][0];
}

/** What the hover says of the path: aggregated figures have no hits to list. */
export function pathLine(st: SpecStats | undefined): string | undefined {
  const p = st?.paths;
  if (!p || !Object.keys(p).length) return undefined;
  const say = (path: CountPath) =>
    path === 'kernel' ? 'aggregated in the kernel (hist triggers: counts and latency, no per-hit values)' : 'streamed (every hit)';
  const paths = new Set(Object.values(p));
  if (paths.size === 1) return `Counted: ${say([...paths][0])}`;
  return `Counted: ${Object.entries(p)
    .map(([h, path]) => `${escapeMarkdown(h)} ${say(path)}`)
    .join(' · ')}`;
}

function plural(n: number): string {
  return n === 1 ? 'hit' : 'hits';
}

/** "12 hits", or "≥ 12 hits" when the count is a lower bound. */
function counted(n: number, st: SpecStats | undefined): string {
  return st?.lowerBound ? `≥ ${formatCount(n)} hits` : `${formatCount(n)} ${plural(n)}`;
}

/** What the hover says of a count that is a lower bound. */
export const LOWER_BOUND_NOTE =
  'The count is a lower bound: some inlined copies of this function could not be proved to have their entries (or exits) all armed — a computed jump or code that cannot be decoded — so calls there may go uncounted, never counted twice.';

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

function latencyLines(l: Latency): string[] {
  const p = percentiles(l);
  const out = [
    `**Latency** (${formatCount(l.count)} calls): p50 ${formatDuration(p.p50)} · p90 ${formatDuration(p.p90)} · p99 ${formatDuration(p.p99)} · max ${formatDuration(l.max)}`,
  ];
  const sp = sparkline(l.log2);
  if (sp) out.push('', `\`${formatDuration(sp.from)} ${sp.bars} ${formatDuration(sp.to)}\``);
  return out;
}

/** Markdown for the hover on a probe's line. */
export function hoverMarkdown(spec: string, st: SpecStats | undefined, state: ProbeState, problems: readonly string[] = []): string {
  const lines = [`**ProbeLens** \`${spec.replace(/`/g, "'")}\` — ${state}`];
  for (const p of problems) lines.push('', `⚠ ${escapeMarkdown(p)}`);
  // A kernel probe says where it came from, as the CLI does.
  if (st?.kernelSource)
    lines.push('', escapeMarkdown(st.kernelSource === 'btf' ? `from ${BTF_SOURCE}; ${NO_INLINED_NOTE}` : `from ${DWARF_SOURCE}`));
  if (st) {
    const hosts = Object.entries(st.byHost);
    if (hosts.length) lines.push('', hosts.map(([h, n]) => `${escapeMarkdown(h)}: ${counted(n, st)}`).join(' · '));
    const path = pathLine(st);
    if (path) lines.push('', path);
    if (st.lowerBound) lines.push('', `**≥** ${LOWER_BOUND_NOTE}`);
    lines.push(...siteLines(st));
    if (st.lastHits.length) {
      lines.push('', '**Last hits**', '');
      for (const h of [...st.lastHits].reverse())
        lines.push(
          `- ${escapeMarkdown(h.host)} ${formatTs(h.ts)} — ${escapeMarkdown(formatValues(h.values, 200, h.cut)) || '(no values)'}${
            h.site && h.site.kind !== 'entry' ? ` · ${escapeMarkdown(describeSite(h.site))}` : ''
          }`,
        );
    }
    if (st.latency && st.latency.count > 0) lines.push('', ...latencyLines(st.latency));
  }
  return lines.join('\n');
}

/** The commands a hover's toggle link may run (the hover trusts these alone). */
export const TOGGLE_COMMANDS = ['probelens.aggregateProbe', 'probelens.streamProbe'];

/**
 * The hover's link that flips a probe between the kernel and the stream: `aggregated` is what it is now. Its
 * argument is the Probes view's node for the probe (the command's own), URI-encoded JSON.
 */
export function toggleLink(binaryKey: string, spec: string, aggregated: boolean): string {
  const arg = encodeURIComponent(JSON.stringify([{ kind: 'probe', binaryKey, spec }]));
  return aggregated
    ? `[Stream hits](command:probelens.streamProbe?${arg} "Stream every hit of this probe again")`
    : `[Aggregate in the kernel](command:probelens.aggregateProbe?${arg} "Count this probe with hist triggers where the target has them")`;
}

/** The most sites a hover lists: the rest are summed in one line (the live panel lists every site). */
export const HOVER_SITES = 20;

/**
 * The per-site breakdown of a function probe armed at more than one site: the busiest HOVER_SITES sites (ties in
 * the probe's own order), then the others' count and hits in one line. A helper inlined into thousands of
 * functions would otherwise make a hover of thousands of lines, rebuilt and sent to the editor at every redraw.
 */
export function siteLines(st: SpecStats): string[] {
  if (!st.bySite || st.bySite.length < 2) return [];
  const out = ['', `**By site** (${formatCount(st.bySite.length)})`, ''];
  // (sort is stable: ties keep the probe's order)
  const shown = st.bySite.length <= HOVER_SITES ? st.bySite : [...st.bySite].sort((a, b) => b.hits - a.hits).slice(0, HOVER_SITES);
  for (const s of shown) out.push(`- ${escapeMarkdown(describeSite(s))}: ${formatCount(s.hits)} ${plural(s.hits)}`);
  const rest = st.bySite.length - shown.length;
  if (rest > 0) {
    const hits = st.bySite.reduce((n, s) => n + s.hits, 0) - shown.reduce((n, s) => n + s.hits, 0);
    out.push(`- ${formatCount(rest)} other sites: ${formatCount(hits)} ${plural(hits)} (the live panel lists every site)`);
  }
  return out;
}

/** Hit rate from two (time, total) samples: the status bar's "N hits/s". */
export function hitRate(prev: { t: number; total: number } | undefined, now: { t: number; total: number }): number {
  if (!prev || now.t <= prev.t) return 0;
  return Math.max(0, (now.total - prev.total) / ((now.t - prev.t) / 1000));
}

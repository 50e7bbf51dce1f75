// The text form of `trace`'s summary for one probe: its count, the count at each of its sites when it has several,
// and its calls' latency as log2 buckets — the figures the editor's hover and the live panel show, read from the
// same merged summary. Aggregated in the kernel, also the hits per thread id, and percentiles as the upper ends of
// their buckets (the kernel keeps buckets only).
import type { MergedSummary } from '../core/session/fanout';
import { describeSite, formatDuration } from '../shared/hitText';

const BAR_WIDTH = 32;
/** Threads listed per probe (the rest are summed in one line). */
const PIDS_SHOWN = 20;

/** `[lo, hi)` of log2 bucket `i` in ns: bucket 0 also holds 0. */
function bucketRange(i: number): [number, number] {
  return [i === 0 ? 0 : 2 ** i, 2 ** (i + 1)];
}

/** The lines of one probe's summary, each ending in a newline. */
export function probeSummaryLines(summary: MergedSummary, probe: string): string[] {
  const n = summary.hits[probe] ?? 0;
  const lat = summary.latency[probe];
  const kernel = summary.kernelHits[probe];
  const le = summary.aggregated ? '≤ ' : '';
  const out = [
    `${probe}: ${n} hit${n === 1 ? '' : 's'}${kernel !== undefined ? ` (kernel counted ${kernel})` : ''}${lat ? `, p50 ${le}${lat.p50} ns p99 ${le}${lat.p99} ns` : ''}\n`,
  ];
  const sites = summary.sites[probe] ?? [];
  if (sites.length > 1) for (const s of sites) out.push(`  ${describeSite(s.site)}: ${s.hits} hit${s.hits === 1 ? '' : 's'}\n`);
  const pids = summary.pids?.[probe] ?? [];
  const many = new Set(pids.map((p) => p.host)).size > 1;
  for (const p of pids.slice(0, PIDS_SHOWN))
    out.push(`  ${many ? `${p.host} ` : ''}tid ${p.pid}: ${p.hits} hit${p.hits === 1 ? '' : 's'}\n`);
  if (pids.length > PIDS_SHOWN) {
    const rest = pids.slice(PIDS_SHOWN).reduce((a, p) => a + p.hits, 0);
    out.push(`  ${pids.length - PIDS_SHOWN} more threads: ${rest} hit${rest === 1 ? '' : 's'}\n`);
  }
  for (const [key, rows] of Object.entries(summary.keys?.[probe] ?? {})) out.push(...keyLines(key, rows, n));
  if (lat && lat.count > 0) {
    const first = lat.log2.findIndex((c) => c > 0);
    const peak = Math.max(...lat.log2);
    out.push(`  latency of ${lat.count} call${lat.count === 1 ? '' : 's'}:\n`);
    const rows = lat.log2.slice(first).map((c, k) => {
      const [lo, hi] = bucketRange(first + k);
      return { range: `[${lo === 0 ? '0' : formatDuration(lo)}, ${formatDuration(hi)})`, c };
    });
    const w = Math.max(...rows.map((r) => r.range.length));
    const cw = String(peak).length;
    for (const r of rows)
      out.push(
        `    ${r.range.padEnd(w)} ${String(r.c).padStart(cw)} |${'#'.repeat(Math.round((r.c / peak) * BAR_WIDTH)).padEnd(BAR_WIDTH)}|\n`,
      );
  }
  return out;
}

/** Rows listed per key (the rest are summed in one line). */
const ROWS_SHOWN = 20;

/**
 * One key's table (`--by`): each value's hits, most first, or for `.log2` each bucket [2^i, 2^(i+1)) with a bar; and
 * the probe's hits that no row shows (hits of events without the key's field, names the agent does not pass on).
 */
function keyLines(key: string, rows: ReadonlyArray<{ value: number | string; hits: number }>, probeHits: number): string[] {
  const out = [`  by ${key}:\n`];
  const log2 = key.endsWith('.log2');
  const shown = log2 ? rows : rows.slice(0, ROWS_SHOWN);
  const label = (v: number | string): string => {
    if (!log2 || typeof v !== 'number') return String(v);
    const [lo, hi] = bucketRange(v);
    return `[${lo}, ${hi})`;
  };
  const w = Math.max(...shown.map((r) => label(r.value).length));
  const peak = Math.max(...shown.map((r) => r.hits));
  for (const r of shown)
    out.push(
      `    ${label(r.value).padEnd(w)} ${r.hits} hit${r.hits === 1 ? '' : 's'}${log2 ? ` |${'#'.repeat(Math.round((r.hits / peak) * BAR_WIDTH))}` : ''}\n`,
    );
  if (rows.length > shown.length) {
    const rest = rows.slice(shown.length).reduce((a, r) => a + r.hits, 0);
    out.push(`    ${rows.length - shown.length} more values: ${rest} hit${rest === 1 ? '' : 's'}\n`);
  }
  const total = rows.reduce((a, r) => a + r.hits, 0);
  if (probeHits > total) out.push(`    ${probeHits - total} hit${probeHits - total === 1 ? '' : 's'} under no value shown\n`);
  return out;
}

/**
 * The summary's loss line. Streamed, it says what helps, and offers counting in the kernel where every target can
 * (`canAggregate`: its kernel has hist triggers); aggregated, the loss is what the kernel's full tables dropped.
 */
export function lostLine(lost: number, aggregated: boolean, canAggregate: boolean): string {
  if (aggregated) return `lost: ${lost} hit${lost === 1 ? '' : 's'} the kernel could not add to its full tables\n`;
  return `lost: ${lost} events (raise --buffer-kb or add --filter${canAggregate ? ', or count them in the kernel: --aggregate' : ''})\n`;
}

/**
 * The calls kernel probes missed, one line per probe: the kernel counted them in kprobe_profile but made no record
 * and no hit of them. They are part of the summary's lost figure.
 */
export function missedLines(missed: Readonly<Record<string, number>>): string[] {
  return Object.entries(missed)
    .filter(([, n]) => n > 0)
    .map(
      ([probe, n]) =>
        `lost: ${n} call${n === 1 ? '' : 's'} of ${probe} the kernel missed (kprobe_profile: a return probe with every instance in use — raise --maxactive — or a hit inside another probe's handler)\n`,
    );
}

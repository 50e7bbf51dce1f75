// How numbers look in the panel. Pure, so unit-tested without a browser.

/** 950 → "950ns", 2100 → "2.1µs", 3.2e6 → "3.2ms", 4e9 → "4.0s" */
export function formatDuration(ns: number): string {
  if (!(ns >= 0)) return '';
  if (ns < 1000) return `${Math.round(ns)}ns`;
  if (ns < 1e6) return `${(ns / 1e3).toFixed(ns < 1e4 ? 1 : 0)}µs`;
  if (ns < 1e9) return `${(ns / 1e6).toFixed(ns < 1e7 ? 1 : 0)}ms`;
  return `${(ns / 1e9).toFixed(1)}s`;
}

/** Trace-clock seconds with microseconds, as the kernel prints them. */
export function formatTs(ts: number): string {
  return ts.toFixed(6);
}

/** 1204 → "1,204" without Intl (the webview may run with any locale; the table stays stable). */
export function formatCount(n: number): string {
  const s = String(Math.trunc(n));
  return s.replace(/\B(?=(\d{3})+(?!\d))/g, ',');
}

/** Label of log2 bucket i, its lower bound: 1ns, 2ns, …, 1.0µs, … */
export function bucketLabel(i: number): string {
  return formatDuration(2 ** i);
}

// How a hit reads as text, the same in the CLI, the editor's decorations and hovers, and the live panel.
// Everything here is attacker text (a traced program picks its comm and its strings), so no character that a
// terminal or a line splitter acts on leaves unescaped. Fixed formatting, not the UI locale: what a user reads
// and what tests assert are the same everywhere. Side-effect free (the webview imports it).
import type { Hit, HitValue } from './hit';
import type { Site } from './site';
import { nameRecord } from './names';

// C0 and C1 controls, DEL, the Unicode line/paragraph separators, and the bidirectional overrides and isolates
// (which reorder the text around them on screen).
// eslint-disable-next-line no-control-regex -- matching control characters is the point
const CONTROLS = /[\u0000-\u001f\u007f-\u009f\u2028\u2029\u200e\u200f\u202a-\u202e\u2066-\u2069]/g;
const SHORT: Record<string, string> = nameRecord({ '\n': '\\n', '\r': '\\r', '\t': '\\t' });

function escapeControl(c: string): string {
  const short = SHORT[c];
  if (short) return short;
  const code = c.charCodeAt(0);
  return code < 0x100 ? `\\x${code.toString(16).padStart(2, '0')}` : `\\u${code.toString(16).padStart(4, '0')}`;
}

/** Text shown bare (a comm): control characters as `\n`, `\r`, `\t`, `\xHH`, `\uHHHH`; a backslash doubled. */
export function escapeText(s: string): string {
  return s.replace(/\\/g, '\\\\').replace(CONTROLS, escapeControl);
}

/** Text shown as a quoted string: `"…"` with `\"`, `\\` and the control escapes of `escapeText`. */
export function quoteText(s: string): string {
  return `"${s.replace(/[\\"]/g, '\\$&').replace(CONTROLS, escapeControl)}"`;
}

// A value the engine typed as a number or address arrives as a decimal or "0x…" string: shown bare. Any other
// string is text and is quoted, so a string that merely starts with 0x cannot smuggle anything out.
const BARE = /^(?:0x[0-9a-f]+|-?[0-9]+)$/i;

/** One value: numbers and addresses bare, text quoted and escaped, a faulted fetch as `null`, arrays as `[a,b]`. */
export function formatValue(v: HitValue | undefined, max?: number): string {
  let s: string;
  if (v === undefined || v === null) s = 'null';
  else if (typeof v === 'number') s = String(v);
  else if (Array.isArray(v)) s = `[${v.map((x) => formatValue(x)).join(',')}]`;
  else s = BARE.test(v) ? v : quoteText(v);
  return max !== undefined && s.length > max ? `${s.slice(0, max - 1)}…` : s;
}

/** "a=3 b=-7 name=\"hello\"" from parallel name and value lists (values from `offset` on). */
export function formatArgs(names: readonly string[], values: readonly HitValue[], offset = 0, max?: number): string {
  let s = '';
  for (let i = 0; i < names.length; i++) {
    if (i > 0) s += ' ';
    s += `${escapeText(names[i])}=${formatValue(values[offset + i], max)}`;
  }
  return s;
}

/** `cut`: names whose string is only the beginning of a longer one (marked `…(cut)`). */
export function formatValues(values: Readonly<Record<string, HitValue>>, max?: number, cut?: readonly string[]): string {
  const names = Object.keys(values);
  if (cut?.length) return formatHitArgs({ args: values as Record<string, HitValue>, cut: [...cut] }, max);
  return formatArgs(
    names,
    names.map((n) => values[n]),
    0,
    max,
  );
}

/** Nanoseconds with two significant digits: 850ns, 2.1µs, 15ms, 1.2s. */
export function formatDuration(ns: number): string {
  if (!(ns >= 0)) return '';
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

/** 1204 → "1,204" without Intl. */
export function formatCount(n: number): string {
  const s = String(Math.trunc(Math.abs(n)));
  return (n < 0 ? '-' : '') + s.replace(/\B(?=(\d{3})+(?!\d))/g, ',');
}

/** Trace-clock seconds with microseconds, as the kernel prints them. */
export function formatTs(ts: number): string {
  return ts.toFixed(6);
}

/**
 * The one way a site is said: `full` "inlined into main at a.c:12 (0x401136)" (messages, row details, the CLI
 * line, hovers); `place` "into main at a.c:12", only where the code sits, file by its base name, for a list whose
 * rows already name the kind and the address (the panel's per-site breakdown).
 */
export function describeSite(site: Site, form: 'full' | 'place' = 'full'): string {
  const rel = site.caller ? `${site.kind === 'inlined' ? 'into' : 'of'} ${escapeText(site.caller)}` : '';
  const file = site.file && form === 'place' ? site.file.replace(/^.*\//, '') : site.file;
  const at = file ? `at ${escapeText(file)}${site.line ? `:${site.line}` : ''}` : '';
  if (form === 'place') return [rel, at].filter(Boolean).join(' ');
  return [site.kind, rel, at, `(${escapeText(site.address)})`].filter(Boolean).join(' ');
}

/** After a string that is only the beginning of a longer one (`s="abc"…(cut)`): never shown as if complete. */
export const CUT_MARK = '…(cut)';

/**
 * A hit's arguments as text: `a=3 b≈7 s="abc"…(cut) tag=(unavailable: reason)`; `≈` marks a value inferred from
 * the calling convention rather than read where DWARF says it is, `…(cut)` a string longer than what was read.
 */
export function formatHitArgs(h: Pick<Hit, 'args' | 'unavailable' | 'inferred' | 'cut'>, max?: number): string {
  const inferred = new Set(h.inferred ?? []);
  const cut = new Set(h.cut ?? []);
  const parts: string[] = [];
  for (const [name, v] of Object.entries(h.args))
    parts.push(`${escapeText(name)}${inferred.has(name) ? '≈' : '='}${formatValue(v, max)}${cut.has(name) ? CUT_MARK : ''}`);
  for (const [name, why] of Object.entries(h.unavailable ?? {})) parts.push(`${escapeText(name)}=(unavailable: ${escapeText(why)})`);
  return parts.join(' ');
}

/** The CLI's text line for a hit: `TS HOST COMM-PID/TID PROBE ARGS → RET (LATENCY)`. */
export function formatHitLine(h: Hit): string {
  const args = formatHitArgs(h);
  const ret = h.retval !== undefined ? ` → ${formatValue(h.retval)}` : '';
  const lat = h.latencyNs !== undefined ? ` (${formatDuration(h.latencyNs)})` : '';
  const site = h.site && h.site.kind !== 'entry' ? ` [${describeSite(h.site)}]` : '';
  return `${formatTs(h.ts)} ${escapeText(h.host)} ${escapeText(h.comm)}-${h.pid}${h.nsPid !== undefined ? `[${h.nsPid}]` : ''}/${h.tid} ${escapeText(h.probe)}${args ? ` ${args}` : ''}${ret}${lat}${site}\n`;
}

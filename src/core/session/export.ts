// Files of hits: JSON (one array of the contract's hit objects, written by the same serializer as the CLI's
// NDJSON) and CSV (RFC 4180, one column per argument name). Pure functions.
import type { Hit, HitValue } from '../../shared/hit';
import { hitToJson, jsonValue, toJson } from '../../shared/hitJson';

/** One JSON array, one hit per line (diff- and grep-friendly), newline-terminated. */
export function hitsToJson(hits: Iterable<Hit>): string {
  const lines: string[] = [];
  for (const h of hits) lines.push(toJson(hitToJson(h)));
  return lines.length === 0 ? '[]\n' : `[\n${lines.join(',\n')}\n]\n`;
}

const NUMBER = /^-?\d+(?:\.\d+)?(?:e[+-]?\d+)?$/i;
// A spreadsheet evaluates a cell that starts with one of these as a formula (OWASP "CSV injection"); tab and CR
// start one too in some of them once leading whitespace is trimmed.
const FORMULA_START = /^[=+\-@\t\r]/;

/**
 * One CSV field. Text that a spreadsheet would run as a formula gets a leading single quote (numbers such as
 * `-5` stay numbers); then RFC 4180 §2: a field with a comma, quote, CR or LF is quoted, its quotes doubled.
 */
export function csvField(v: HitValue | undefined): string {
  if (v === undefined) return '';
  let s = v === null ? 'null' : typeof v === 'string' ? v : typeof v === 'number' ? String(v) : JSON.stringify(v);
  if (typeof v === 'string' && FORMULA_START.test(s) && !NUMBER.test(s)) s = `'${s}`;
  return /[",\r\n]/.test(s) ? `"${s.replace(/"/g, '""')}"` : s;
}

const FIXED_COLUMNS = ['ts', 'host', 'probe', 'kind', 'pid', 'tid', 'comm', 'cpu', 'retval', 'latency_ns'] as const;

/**
 * Header plus one record per hit, CRLF line breaks (RFC 4180). Each argument name gets its own
 * `args.NAME` column (in order of first appearance) so spreadsheets can sort and sum by value.
 */
export function hitsToCsv(hits: Iterable<Hit>): string {
  const list = Array.isArray(hits) ? (hits as Hit[]) : [...hits];
  const argNames: string[] = [];
  const seen = new Set<string>();
  for (const h of list) {
    for (const k of Object.keys(h.args)) {
      if (!seen.has(k)) {
        seen.add(k);
        argNames.push(k);
      }
    }
  }
  // A `cut` column (the names of strings shown only by their beginning, space-separated) when any hit has one.
  const anyCut = list.some((h) => h.cut?.length);
  const rows: string[] = [[...FIXED_COLUMNS, ...argNames.map((n) => `args.${n}`), ...(anyCut ? ['cut'] : [])].map(csvField).join(',')];
  for (const h of list) {
    const fields = [
      csvField(h.ts),
      csvField(h.host),
      csvField(h.probe),
      csvField(h.kind),
      csvField(h.pid),
      csvField(h.tid),
      csvField(h.comm),
      csvField(h.cpu),
      csvField(h.retval === undefined ? undefined : jsonValue(h.retval)),
      csvField(h.latencyNs),
    ];
    for (const n of argNames) fields.push(csvField(n in h.args ? jsonValue(h.args[n]) : undefined));
    if (anyCut) fields.push(csvField(h.cut?.join(' ') ?? ''));
    rows.push(fields.join(','));
  }
  return `${rows.join('\r\n')}\r\n`;
}

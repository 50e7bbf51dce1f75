// Serialisers for a list of hits: JSON (contracts.md's hit objects, one array) and CSV (RFC 4180).
// Pure functions, so the live panel and the CLI write the same files.

export type ExportValue = number | string | bigint;

/** contracts.md's hit shape, plus the panel's paired latency (written to CSV only; JSON keeps the contract). */
export interface ExportHit {
  host: string;
  probe: string;
  kind: string;
  pid: number;
  tid: number;
  comm: string;
  cpu: number;
  ts: number;
  args: Record<string, ExportValue>;
  retval?: ExportValue;
  latencyNs?: number;
}

const MAX_SAFE = BigInt(Number.MAX_SAFE_INTEGER);

/** contracts.md: integers are JSON numbers when |v| < 2^53, otherwise decimal strings. */
export function jsonValue(v: ExportValue): number | string {
  if (typeof v === 'bigint') return v <= MAX_SAFE && v >= -MAX_SAFE ? Number(v) : v.toString();
  if (typeof v === 'number' && Number.isInteger(v) && !Number.isSafeInteger(v)) {
    // Already past 2^53, so precision is gone; at least keep the contract's type.
    return BigInt(v).toString();
  }
  return v;
}

function contractHit(h: ExportHit): Record<string, unknown> {
  const args: Record<string, number | string> = {};
  for (const [k, v] of Object.entries(h.args)) args[k] = jsonValue(v);
  const o: Record<string, unknown> = {
    host: h.host,
    probe: h.probe,
    kind: h.kind,
    pid: h.pid,
    tid: h.tid,
    comm: h.comm,
    cpu: h.cpu,
    ts: h.ts,
    args,
  };
  if (h.retval !== undefined) o.retval = jsonValue(h.retval);
  return o;
}

/** One JSON array, one hit per line (diff- and grep-friendly), newline-terminated. */
export function hitsToJson(hits: Iterable<ExportHit>): string {
  const lines: string[] = [];
  for (const h of hits) lines.push(JSON.stringify(contractHit(h)));
  return lines.length === 0 ? '[]\n' : `[\n${lines.join(',\n')}\n]\n`;
}

/** RFC 4180 §2: a field with a comma, quote, CR or LF is quoted, and its quotes doubled. */
export function csvField(v: ExportValue | undefined | null): string {
  if (v === undefined || v === null) return '';
  const s = typeof v === 'string' ? v : String(v);
  return /[",\r\n]/.test(s) ? `"${s.replace(/"/g, '""')}"` : s;
}

const FIXED_COLUMNS = ['ts', 'host', 'probe', 'kind', 'pid', 'tid', 'comm', 'cpu', 'retval', 'latency_ns'] as const;

/**
 * Header plus one record per hit, CRLF line breaks (RFC 4180). Each argument name gets its own
 * `args.NAME` column (in order of first appearance) so spreadsheets can sort and sum by value.
 */
export function hitsToCsv(hits: Iterable<ExportHit>): string {
  const list = Array.isArray(hits) ? (hits as ExportHit[]) : [...hits];
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
  const rows: string[] = [[...FIXED_COLUMNS, ...argNames.map((n) => `args.${n}`)].map(csvField).join(',')];
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
    rows.push(fields.join(','));
  }
  return `${rows.join('\r\n')}\r\n`;
}

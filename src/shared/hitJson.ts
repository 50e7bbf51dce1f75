// The JSON rules (docs/contracts.md) and the one hit serializer: the CLI's `--json` lines, the panel's JSON
// export and anything else that writes hits go through `hitToJson` and `toJson`, so they cannot disagree.
//   integers are JSON numbers only while exact (|v| < 2^53), otherwise decimal strings;
//   addresses, offsets and pointers are "0x…" hex strings.
import type { Hit, HitValue } from './hit';
import { nameRecord } from './names';

const LIMIT = 2n ** 53n;

export function jsonInteger(v: number | bigint): number | string {
  if (typeof v === 'number') {
    if (!Number.isInteger(v)) throw new RangeError(`not an integer: ${v}`);
    return Math.abs(v) < 2 ** 53 ? v : BigInt(v).toString();
  }
  return v < LIMIT && v > -LIMIT ? Number(v) : v.toString();
}

/** A decimal integer as text (as tracefs prints it) under the same rule. */
export function jsonIntegerText(text: string): number | string {
  // Up to 15 digits is always below 2^53: skip BigInt on the hot path.
  if (text.length <= 15) return Number(text);
  return jsonInteger(BigInt(text));
}

export function hexAddress(v: number | bigint): string {
  if (typeof v === 'number' && (!Number.isInteger(v) || v < 0)) throw new RangeError(`not an address: ${v}`);
  if (typeof v === 'bigint' && v < 0n) throw new RangeError(`not an address: ${v}`);
  return `0x${v.toString(16)}`;
}

/** A value under the rule: an integer past 2^53 (its precision already gone) at least keeps the contract's type. */
export function jsonValue(v: HitValue | bigint): HitValue {
  if (typeof v === 'bigint') return jsonInteger(v);
  if (typeof v === 'number') return Number.isInteger(v) && !Number.isSafeInteger(v) ? BigInt(v).toString() : v;
  if (Array.isArray(v)) return v.map(jsonValue);
  return v;
}

// JSON allows U+2028, U+2029 and the C1 controls (U+0085 NEL among them) raw inside strings, but line splitters
// (JavaScript's old line terminators, Python's str.splitlines, many log shippers) break a line there, and a
// terminal acts on C1 controls (U+009B is CSI). Outside strings JSON never contains them, so replacing every
// occurrence with its \u escape is exact.
const LINE_BREAKERS = /[\u007f-\u009f\u2028\u2029]/g;
const escapeCode = (c: string) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`;

/** JSON.stringify that writes bigint values by the rule and never emits a character that splits or controls a line. */
export function toJson(value: unknown, indent?: number): string {
  return JSON.stringify(value, (_k, v: unknown) => (typeof v === 'bigint' ? jsonInteger(v) : v), indent).replace(LINE_BREAKERS, escapeCode);
}

/**
 * The contract's hit object:
 * `{host, probe, kind, pid, tid, comm, cpu, ts, args, nsPid?, retval?, latencyNs?, site?, caller?, unavailable?, inferred?, cut?}`.
 */
export type HitJson = Omit<Hit, 'event'>;

export function hitToJson(h: Hit): HitJson {
  const args: Record<string, HitValue> = nameRecord();
  for (const [k, v] of Object.entries(h.args)) args[k] = jsonValue(v);
  const o: HitJson = { host: h.host, probe: h.probe, kind: h.kind, pid: h.pid, tid: h.tid, comm: h.comm, cpu: h.cpu, ts: h.ts, args };
  if (h.nsPid !== undefined) o.nsPid = h.nsPid;
  if (h.retval !== undefined) o.retval = jsonValue(h.retval);
  if (h.latencyNs !== undefined) o.latencyNs = h.latencyNs;
  if (h.site) {
    const s = h.site;
    o.site = { kind: s.kind, address: s.address };
    if (s.caller !== undefined) o.site.caller = s.caller;
    if (s.file !== undefined) o.site.file = s.file;
    if (s.line !== undefined) o.site.line = s.line;
  }
  if (h.caller !== undefined) o.caller = h.caller;
  if (h.unavailable && Object.keys(h.unavailable).length) o.unavailable = nameRecord(h.unavailable);
  if (h.inferred?.length) o.inferred = [...h.inferred];
  if (h.cut?.length) o.cut = [...h.cut];
  return o;
}

/** A number field as JSON.stringify writes it (not finite: null). */
const num = (x: number): string => (Number.isFinite(x) ? String(x) : 'null');

const E9 = 1e9;
const ZEROS = ['', '0', '00', '000', '0000', '00000', '000000', '0000000', '00000000'];

/**
 * A time in seconds as JSON.stringify (String) writes it, without its general shortest-digits search, which cost
 * a tenth of a hit's client time: a trace clock's time has at most 9 decimals (ns; the text stream's 6). Below
 * 2^23 s a double's spacing is under 1e-9, so when x is the double nearest a decimal N/1e9 (N / 1e9 === x: IEEE
 * division rounds to nearest) no other decimal of 9 places or fewer rounds to x, and that decimal, trailing zeros
 * dropped, is the shortest text that does: String's. Anything else (negative, below 1 s, past 97 days, not on the
 * ns grid) is String's own. A test holds them equal over millions of times.
 */
export function secondsText(x: number): string {
  if (x >= 1 && x < 8388608) {
    let n = Math.round(x * E9);
    // x * 1e9 is rounded once more past 2^52 (52 days): the decimal may be a nanosecond either side.
    if (n / E9 !== x) n = (n - 1) / E9 === x ? n - 1 : (n + 1) / E9 === x ? n + 1 : -1;
    if (n >= 0) {
      const sec = Math.floor(n / E9);
      let f = n - sec * E9;
      if (f === 0) return String(sec);
      let width = 9;
      while (f % 10 === 0) {
        f /= 10;
        width--;
      }
      const digits = String(f);
      return `${sec}.${ZEROS[width - digits.length]}${digits}`;
    }
  }
  return num(x);
}

const LINE_BREAKER = /[\u007f-\u009f\u2028\u2029]/;

/** JSON text with every character that splits or controls a line escaped (see LINE_BREAKERS). */
const lineSafe = (json: string): string => (LINE_BREAKER.test(json) ? json.replace(LINE_BREAKERS, escapeCode) : json);

/** A string as a line-safe JSON string. */
const quoted = (text: string): string => lineSafe(JSON.stringify(text));

/** Text that repeats from hit to hit, quoted once: `{"host":…,"probe":…,"kind":…,"pid":` per probe, comms, arg names. */
const heads = new Map<string, Map<string, string>>();
const quotes = new Map<string, string>();
/** A site is one object shared by every hit at it (the session's site table): its JSON is written once. */
const sites = new WeakMap<object, string>();

function quotedOften(text: string): string {
  let q = quotes.get(text);
  if (q === undefined) {
    q = quoted(text);
    // Bounded: a program renaming its threads without end must not grow the table without end.
    if (quotes.size >= 4096) quotes.clear();
    quotes.set(text, q);
  }
  return q;
}

/** The last head looked up: a stream's hits mostly repeat the host, probe and kind of the one before. */
let lastHead = { host: '', probe: '', kind: '', text: '' };

/** By host, then kind and probe: the key made per hit stays short (one with the host cost a third of the line). */
function head(h: Hit): string {
  const last = lastHead;
  if (h.probe === last.probe && h.kind === last.kind && h.host === last.host && last.text) return last.text;
  let byProbe = heads.get(h.host);
  if (!byProbe) heads.set(h.host, (byProbe = new Map()));
  const key = h.kind + '\0' + h.probe;
  let t = byProbe.get(key);
  if (t === undefined) {
    t = `{"host":${quoted(h.host)},"probe":${quoted(h.probe)},"kind":${quoted(h.kind)},"pid":`;
    if (byProbe.size >= 4096) byProbe.clear();
    byProbe.set(key, t);
  }
  lastHead = { host: h.host, probe: h.probe, kind: h.kind, text: t };
  return t;
}

function siteText(s: NonNullable<Hit['site']>): string {
  let t = sites.get(s);
  if (t === undefined) {
    t = `,"site":{"kind":${quoted(s.kind)},"address":${quoted(s.address)}`;
    if (s.caller !== undefined) t += `,"caller":${quoted(s.caller)}`;
    if (s.file !== undefined) t += `,"file":${quoted(s.file)}`;
    if (s.line !== undefined) t += `,"line":${num(s.line)}`;
    t += '}';
    sites.set(s, t);
  }
  return t;
}

/** A value under the rule as line-safe JSON text (finite numbers as JSON.stringify writes them). */
function valueText(v: HitValue | bigint): string {
  if (typeof v === 'number' && Number.isSafeInteger(v)) return String(v);
  if (typeof v === 'string') return quoted(v);
  const j = jsonValue(v);
  return typeof j === 'number' && Number.isFinite(j) ? String(j) : lineSafe(JSON.stringify(j));
}

/**
 * One NDJSON line (newline-terminated): what `probelens trace --json` prints per hit. Written field by field in the
 * contract's order — byte for byte `toJson(hitToJson(h))` (a test holds them equal), without building the object
 * and walking it again with a replacer, which cost most of the CLI's time per hit. What repeats from hit to hit (the
 * probe's fields, the site, the comm, argument names) is quoted once, and only strings are searched for characters
 * to escape (JSON outside strings never holds them).
 */
export function hitToJsonLine(h: Hit): string {
  let line = `${head(h)}${num(h.pid)},"tid":${num(h.tid)},"comm":${quotedOften(h.comm)},"cpu":${num(h.cpu)},"ts":${secondsText(h.ts)},"args":{`;
  let first = true;
  for (const k in h.args) {
    if (!Object.prototype.hasOwnProperty.call(h.args, k)) continue;
    line += `${first ? '' : ','}${quotedOften(k)}:${valueText(h.args[k])}`;
    first = false;
  }
  line += '}';
  if (h.nsPid !== undefined) line += `,"nsPid":${num(h.nsPid)}`;
  if (h.retval !== undefined) line += `,"retval":${valueText(h.retval)}`;
  if (h.latencyNs !== undefined) line += `,"latencyNs":${num(h.latencyNs)}`;
  if (h.site) line += siteText(h.site);
  if (h.caller !== undefined) line += `,"caller":${quoted(h.caller)}`;
  if (h.unavailable && Object.keys(h.unavailable).length) line += `,"unavailable":${lineSafe(JSON.stringify(h.unavailable))}`;
  if (h.inferred?.length) line += `,"inferred":${lineSafe(JSON.stringify(h.inferred))}`;
  if (h.cut?.length) line += `,"cut":${lineSafe(JSON.stringify(h.cut))}`;
  return line + '}\n';
}

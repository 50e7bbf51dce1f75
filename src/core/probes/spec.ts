// Probe specs in perf probe's grammar (docs/contracts.md): a point followed by arguments, one string.
//   point: [MODULE:]FUNC[@SRC][:RLN|+OFFS|%return] | SRC:ALN | sdt:PROVIDER:NAME   (MODULE: a kernel module's)
//   arg:   name | name->field | name.field | name[idx] | name:TYPE | $params | $vars | $retval | $comm
//          | NEWNAME=ARG | raw tracefs fetcharg (%di, +8(%sp):s32, +0(%di):string, @0x1234, $stack2)
// Parsing is purely syntactic: whether a name exists is the compiler's business (it has the BinaryIndex).

export type FetchType = 's8' | 's16' | 's32' | 's64' | 'u8' | 'u16' | 'u32' | 'u64' | 'x8' | 'x16' | 'x32' | 'x64' | 'string' | 'ustring';

const FETCH_TYPES: ReadonlySet<string> = new Set([
  's8',
  's16',
  's32',
  's64',
  'u8',
  'u16',
  'u32',
  'u64',
  'x8',
  'x16',
  'x32',
  'x64',
  'string',
  // A string in user memory, read from a kernel probe (on a user binary, the same as string).
  'ustring',
]);

export type ProbePoint =
  | {
      kind: 'function';
      func: string;
      src?: string;
      relLine?: number;
      offset?: number;
      ret: boolean;
      glob: boolean;
      /** A loadable kernel module the function is in (`af_key:pfkey_create`), as kallsyms names it. */
      module?: string;
    }
  | { kind: 'line'; src: string; line: number }
  | { kind: 'usdt'; provider: string; name: string };

/** One step of a member/element access path after the base variable. */
export type Access = { op: '->' | '.'; field: string } | { op: '[]'; index: number };

export type ProbeArg =
  | { kind: 'var'; name: string; base: string; path: Access[]; type?: FetchType; text: string }
  | { kind: 'special'; name: string; which: 'params' | 'vars' | 'retval' | 'comm'; text: string }
  | { kind: 'raw'; name: string; fetch: string; text: string };

export interface ProbeSpec {
  point: ProbePoint;
  args: ProbeArg[];
  text: string;
}

export class SpecSyntaxError extends Error {
  constructor(
    readonly spec: string,
    readonly column: number,
    detail: string,
  ) {
    super(`invalid probe spec '${spec}' at column ${column + 1}: ${detail}`);
    this.name = 'SpecSyntaxError';
  }
}

// Source files are told apart from Go-style dotted function names (main.add) by their extension or a slash.
const SOURCE_FILE = /(^|\/)[^/]*\.(c|h|cc|cp|cpp|cxx|c\+\+|hh|hpp|hxx|inl|rs|go|s|S|m|mm|zig)$|\//;
const IDENT = /^[A-Za-z_][A-Za-z0-9_]*$/;
// Raw fetchargs are passed to the kernel as text, so they are held to the uprobe fetcharg grammar's charset.
const RAW_FETCH =
  /^(%[a-z][a-z0-9]{1,5}|@0x[0-9a-fA-F]+|@\+0x[0-9a-fA-F]+|@\+?[0-9]+|\$stack[0-9]{0,3}|\$retval|\$comm|[+-](0x[0-9a-fA-F]+|[0-9]+)\((?:[^()\s]|\([^()\s]*\))+\))(:[a-z0-9]+(\[[0-9]+\])?)?$/;

/** Splits on whitespace, keeping <…>, (…) and […] groups (templates, raw fetchargs) whole; `\` escapes. */
export function tokenizeSpec(text: string): { token: string; start: number }[] {
  const out: { token: string; start: number }[] = [];
  let depth = 0;
  let cur = '';
  let start = -1;
  for (let i = 0; i < text.length; i++) {
    const ch = text[i];
    if (ch === '\\' && i + 1 < text.length) {
      if (start < 0) start = i;
      cur += ch + text[++i];
      continue;
    }
    if (/\s/.test(ch) && depth === 0) {
      if (start >= 0) out.push({ token: cur, start });
      cur = '';
      start = -1;
      continue;
    }
    if (start < 0) start = i;
    if (ch === '<' || ch === '(' || ch === '[') depth++;
    else if ((ch === '>' || ch === ')' || ch === ']') && depth > 0) {
      // `->` is a member access, not the end of a template argument list.
      if (!(ch === '>' && text[i - 1] === '-')) depth--;
    }
    cur += ch;
  }
  if (depth !== 0) throw new SpecSyntaxError(text, text.length - 1, 'unbalanced brackets');
  if (start >= 0) out.push({ token: cur, start });
  return out;
}

/** Finds separator `sep` at bracket depth 0, skipping escapes and `::` (C++ scopes) when sep is ':'. */
function findTop(s: string, sep: string, from = 0): number {
  let depth = 0;
  for (let i = from; i < s.length; i++) {
    const ch = s[i];
    if (ch === '\\') {
      i++;
      continue;
    }
    if (ch === '<' || ch === '(' || ch === '[') depth++;
    else if ((ch === '>' && s[i - 1] !== '-') || ch === ')' || ch === ']') depth--;
    else if (depth === 0 && s.startsWith(sep, i)) {
      if (sep === ':' && (s[i + 1] === ':' || s[i - 1] === ':')) {
        i++;
        continue;
      }
      return i;
    }
  }
  return -1;
}

const unescape = (s: string): string => s.replace(/\\(.)/g, '$1');

function parseInteger(spec: string, col: number, s: string, what: string): number {
  if (!/^(0x[0-9a-fA-F]+|[0-9]+)$/.test(s)) throw new SpecSyntaxError(spec, col, `${what} must be a number, got '${s}'`);
  const n = Number(s);
  if (!Number.isSafeInteger(n)) throw new SpecSyntaxError(spec, col, `${what} is out of range`);
  return n;
}

export function parsePoint(token: string, spec = token, col = 0): ProbePoint {
  if (token.startsWith('sdt:') || token.startsWith('%sdt_')) {
    const body = token.startsWith('sdt:') ? token.slice(4) : token.slice(5);
    const [provider, name, ...rest] = body.split(':');
    if (!provider || !name || rest.length || !IDENT.test(provider) || !IDENT.test(name))
      throw new SpecSyntaxError(spec, col, 'a USDT point is sdt:PROVIDER:NAME');
    return { kind: 'usdt', provider, name };
  }
  if (token.length === 0) throw new SpecSyntaxError(spec, col, 'empty probe point');

  let head = token;
  let ret = false;
  const pct = findTop(head, '%');
  if (pct >= 0) {
    if (head.slice(pct) !== '%return') throw new SpecSyntaxError(spec, col + pct, `unknown suffix '${head.slice(pct)}' (only %return)`);
    ret = true;
    head = head.slice(0, pct);
  }
  let relLine: number | undefined;
  let offset: number | undefined;
  // `MODULE:FUNC…`: a module name (kallsyms writes `-` as `_`) before a name, where `FUNC:RLN` has a number.
  let module: string | undefined;
  const first = findTop(head, ':');
  if (first > 0 && /^[A-Za-z0-9_-]+$/.test(head.slice(0, first)) && /^[A-Za-z_]/.test(head.slice(first + 1))) {
    module = head.slice(0, first).replace(/-/g, '_');
    head = head.slice(first + 1);
    col += first + 1;
  }
  const colon = findTop(head, ':');
  if (colon >= 0) {
    const left = head.slice(0, colon);
    const num = head.slice(colon + 1);
    if (!left.includes('@') && SOURCE_FILE.test(unescape(left))) {
      if (ret) throw new SpecSyntaxError(spec, col + pct, '%return applies to functions, not source lines');
      return { kind: 'line', src: unescape(left), line: parseInteger(spec, col + colon + 1, num, 'a line number') };
    }
    relLine = parseInteger(spec, col + colon + 1, num, 'a relative line');
    head = left;
  }
  const plus = findTop(head, '+');
  if (plus > 0) {
    offset = parseInteger(spec, col + plus + 1, head.slice(plus + 1), 'an offset');
    head = head.slice(0, plus);
  }
  if ((relLine !== undefined ? 1 : 0) + (offset !== undefined ? 1 : 0) + (ret ? 1 : 0) > 1)
    throw new SpecSyntaxError(spec, col, 'use only one of :LINE, +OFFSET and %return');
  let src: string | undefined;
  const at = findTop(head, '@');
  if (at >= 0) {
    src = unescape(head.slice(at + 1));
    head = head.slice(0, at);
    if (!src) throw new SpecSyntaxError(spec, col + at, 'empty source file after @');
  }
  if (!head) throw new SpecSyntaxError(spec, col, 'missing function name');
  const glob = /(^|[^\\])[*?]/.test(head);
  return { kind: 'function', func: unescape(head), src, relLine, offset, ret, glob, ...(module ? { module } : {}) };
}

export function parseArg(token: string, spec = token, col = 0): ProbeArg {
  const text = token;
  let name: string | undefined;
  const eq = findTop(token, '=');
  if (eq > 0 && IDENT.test(token.slice(0, eq))) {
    name = token.slice(0, eq);
    token = token.slice(eq + 1);
    col += eq + 1;
  }
  if (/^\$(params|vars|retval|comm)$/.test(token)) {
    const which = token.slice(1) as 'params' | 'vars' | 'retval' | 'comm';
    if (name && (which === 'params' || which === 'vars'))
      throw new SpecSyntaxError(spec, col, `${token} expands to many arguments and cannot be renamed`);
    return { kind: 'special', which, name: name ?? which, text };
  }
  if (/^[%@+-]|^\$stack/.test(token)) {
    if (!RAW_FETCH.test(token)) throw new SpecSyntaxError(spec, col, `'${token}' is not a valid tracefs fetch argument`);
    const typ = /:([a-z0-9]+)(\[[0-9]+\])?$/.exec(token)?.[1];
    if (typ && !FETCH_TYPES.has(typ) && !/^b[0-9]+@/.test(typ)) throw new SpecSyntaxError(spec, col, `unsupported type '${typ}'`);
    return { kind: 'raw', fetch: token, name: name ?? rawArgName(token), text };
  }
  let type: FetchType | undefined;
  const tcolon = findTop(token, ':');
  if (tcolon >= 0) {
    const t = token.slice(tcolon + 1);
    if (!FETCH_TYPES.has(t))
      throw new SpecSyntaxError(spec, col + tcolon + 1, `unsupported type '${t}' (use s8…s64, u8…u64, x8…x64, string or ustring)`);
    type = t as FetchType;
    token = token.slice(0, tcolon);
  }
  const m = /^[A-Za-z_][A-Za-z0-9_]*/.exec(token);
  if (!m) throw new SpecSyntaxError(spec, col, `'${token}' is not a variable name`);
  const base = m[0];
  const path: Access[] = [];
  let i = base.length;
  while (i < token.length) {
    const rest = token.slice(i);
    let mm: RegExpExecArray | null;
    if ((mm = /^(->|\.)([A-Za-z_][A-Za-z0-9_]*)/.exec(rest))) {
      path.push({ op: mm[1] as '->' | '.', field: mm[2] });
    } else if ((mm = /^\[([0-9]+)\]/.exec(rest))) {
      path.push({ op: '[]', index: Number(mm[1]) });
    } else {
      throw new SpecSyntaxError(spec, col + i, `unexpected '${rest}' (use ->field, .field or [index])`);
    }
    i += mm[0].length;
  }
  const derived = [base, ...path.map((a) => ('field' in a ? a.field : String(a.index)))].join('_');
  return { kind: 'var', name: name ?? derived, base, path, type, text };
}

function rawArgName(fetch: string): string {
  const n = fetch
    .replace(/:.*$/, '')
    .replace(/[^A-Za-z0-9]+/g, '_')
    .replace(/^_+|_+$/g, '');
  return /^[A-Za-z_]/.test(n) ? n : `arg_${n}`;
}

export function parseSpec(text: string): ProbeSpec {
  const tokens = tokenizeSpec(text);
  if (tokens.length === 0) throw new SpecSyntaxError(text, 0, 'empty probe spec');
  const [first, ...rest] = tokens;
  const point = parsePoint(first.token, text, first.start);
  const args = rest.map((t) => parseArg(t.token, text, t.start));
  const seen = new Map<string, string>();
  for (const a of args) {
    if (a.kind === 'special' && (a.which === 'params' || a.which === 'vars')) continue;
    const prev = seen.get(a.name);
    if (prev !== undefined)
      throw new SpecSyntaxError(text, 0, `arguments '${prev}' and '${a.text}' are both named '${a.name}'; rename one with NEWNAME=ARG`);
    seen.set(a.name, a.text);
  }
  if (args.some((a) => a.kind === 'special' && a.which === 'retval') && !(point.kind === 'function' && point.ret))
    throw new SpecSyntaxError(text, 0, '$retval is only available on FUNC%return probes');
  return { point, args, text };
}

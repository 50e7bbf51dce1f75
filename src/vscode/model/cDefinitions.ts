// The function definitions of a C source file, found in its text alone (no compiler, no DWARF): for the lenses of
// a kernel tree without a vmlinux, whose functions are known by name only (the target's BTF and kallsyms).
// A definition is a top-level declarator `NAME ( … )` followed, after optional attributes (`__releases(x)`,
// `__attribute__((…))`), by `{`, with no `=` before it (an initializer is not a body). Comments, string and
// character literals and preprocessor lines (with their continuations) are blanked first, keeping line numbers.
// `SYSCALL_DEFINEn(name, …)` is a system call: the kernel's symbol for it is per architecture (`__x64_sys_name`,
// `__arm64_sys_name`, …), so it is given as candidates, of which the target's kallsyms says which exists.
// Other macro-made definitions (an upper-case name before the parenthesis) are skipped: what they define is unknown.
// Tests: test/unit/vscode/model/cDefinitions.test.ts

export interface CDefinition {
  /** The name written in the source (the syscall's name for SYSCALL_DEFINEn). */
  name: string;
  /** 1-based line of that name. */
  line: number;
  /** The kernel symbols the definition may have, most likely first (the name itself, or a syscall's entries). */
  symbols: string[];
  /** SYSCALL_DEFINEn: the macro's name. */
  macro?: string;
}

/** Attributes written with parentheses that may follow a declarator's parameter list. */
const TRAILING_ATTRIBUTES = new Set([
  '__attribute__',
  '__attribute',
  '__acquires',
  '__releases',
  '__must_hold',
  '__cond_acquires',
  '__cond_releases',
  '__printf',
  '__scanf',
  '__section',
  '__aligned',
  '__alloc_size',
  'asm',
  '__asm__',
]);

interface Token {
  text: string;
  line: number;
  id: boolean;
}

/** `text` with comments, literals and preprocessor lines replaced by spaces (newlines kept). */
export function blankNonCode(text: string): string {
  const out = text.split('');
  const n = text.length;
  const blank = (from: number, to: number) => {
    for (let k = from; k < to && k < n; k++) if (out[k] !== '\n') out[k] = ' ';
  };
  let i = 0;
  let lineStart = true;
  while (i < n) {
    const c = text[i];
    if (c === '\n') {
      lineStart = true;
      i++;
      continue;
    }
    if (c === ' ' || c === '\t' || c === '\r' || c === '\f' || c === '\v') {
      i++;
      continue;
    }
    if (c === '/' && text[i + 1] === '*') {
      const end = text.indexOf('*/', i + 2);
      const stop = end < 0 ? n : end + 2;
      blank(i, stop);
      i = stop;
      continue;
    }
    if (c === '/' && text[i + 1] === '/') {
      const end = text.indexOf('\n', i);
      const stop = end < 0 ? n : end;
      blank(i, stop);
      i = stop;
      continue;
    }
    if (c === '#' && lineStart) {
      // A directive runs to the first newline not escaped by a backslash; a comment inside it may span lines.
      let j = i;
      while (j < n && text[j] !== '\n') {
        if (text[j] === '/' && text[j + 1] === '*') {
          const end = text.indexOf('*/', j + 2);
          j = end < 0 ? n : end + 2;
          continue;
        }
        if (text[j] === '\\' && (text[j + 1] === '\n' || (text[j + 1] === '\r' && text[j + 2] === '\n'))) {
          j += text[j + 1] === '\r' ? 3 : 2;
          continue;
        }
        j++;
      }
      blank(i, j);
      i = j;
      continue;
    }
    lineStart = false;
    if (c === '"' || c === "'") {
      let j = i + 1;
      while (j < n && text[j] !== c && text[j] !== '\n') j += text[j] === '\\' ? 2 : 1;
      blank(i, j + 1);
      i = j + 1;
      continue;
    }
    i++;
  }
  return out.join('');
}

function tokenize(code: string): Token[] {
  const out: Token[] = [];
  let line = 1;
  const re = /([A-Za-z_]\w*)|(\n)|([(){};=,])|\S/g;
  for (let m = re.exec(code); m; m = re.exec(code)) {
    if (m[2]) line++;
    else if (m[1]) out.push({ text: m[1], line, id: true });
    else out.push({ text: m[0], line, id: false });
  }
  return out;
}

/** The index of the `(` matching the `)` at `close`, or -1. */
function openOf(tokens: Token[], from: number, close: number): number {
  let depth = 0;
  for (let k = close; k >= from; k--) {
    if (tokens[k].text === ')') depth++;
    else if (tokens[k].text === '(' && --depth === 0) return k;
  }
  return -1;
}

const SYSCALL = /^SYSCALL_DEFINE[0-6]$/;
const MACRO_LIKE = /^[A-Z_][A-Z0-9_]*$/;

/** The symbols a system call `name` has on the architectures whose syscalls are wrapped, then the generic one. */
export function syscallSymbols(name: string): string[] {
  return [`__x64_sys_${name}`, `__arm64_sys_${name}`, `__riscv_sys_${name}`, `__s390x_sys_${name}`, `sys_${name}`];
}

/**
 * What a definition's header (the tokens from the statement's start to its `{`) defines, or undefined when it is
 * not a function definition this scanner can name.
 */
function definitionOf(tokens: Token[], from: number, to: number): CDefinition | undefined {
  if (to <= from || (tokens[to - 1].text !== ')' && !tokens[to - 1].id)) return undefined;
  // Groups at the top level of the header: each `IDENT ( … )`; the declarator is the last that is not an attribute.
  let k = to - 1;
  let named: { name: Token; open: number } | undefined;
  while (k >= from) {
    const t = tokens[k];
    if (t.text === ')') {
      const open = openOf(tokens, from, k);
      if (open <= from) return undefined;
      const before = tokens[open - 1];
      if (!before.id) return undefined; // `(*fp)(…)` and other declarators this scanner does not read
      if (!TRAILING_ATTRIBUTES.has(before.text) && !(before.text === '__attribute__' || before.text.startsWith('__attribute'))) {
        named = { name: before, open };
        break;
      }
      k = open - 2;
      continue;
    }
    if (t.id) {
      k--;
      continue; // a bare attribute after the parameter list (rare) or a K&R parameter type: keep looking
    }
    return undefined;
  }
  if (!named) return undefined;
  for (let j = from; j < to; j++) if (tokens[j].text === '=' || tokens[j].text === ';') return undefined;
  const name = named.name.text;
  if (SYSCALL.test(name)) {
    const arg = tokens[named.open + 1];
    if (!arg?.id || (tokens[named.open + 2]?.text !== ',' && tokens[named.open + 2]?.text !== ')')) return undefined;
    return { name: arg.text, line: arg.line, symbols: syscallSymbols(arg.text), macro: name };
  }
  if (MACRO_LIKE.test(name)) return undefined;
  return { name, line: named.name.line, symbols: [name] };
}

/** The function definitions of a C file, in order. */
export function cDefinitions(text: string): CDefinition[] {
  const tokens = tokenize(blankNonCode(text));
  const out: CDefinition[] = [];
  let braces = 0;
  let parens = 0;
  let start = 0;
  for (let i = 0; i < tokens.length; i++) {
    const t = tokens[i].text;
    if (t === '(') parens++;
    else if (t === ')') parens = Math.max(0, parens - 1);
    else if (t === '{') {
      if (braces === 0 && parens === 0) {
        const d = definitionOf(tokens, start, i);
        if (d) out.push(d);
      }
      braces++;
    } else if (t === '}') {
      braces = Math.max(0, braces - 1);
      if (braces === 0 && parens === 0) start = i + 1;
    } else if (t === ';' && braces === 0 && parens === 0) start = i + 1;
  }
  return out;
}

/** Whether a folder's top-level names are a Linux kernel tree's (Kbuild, Kconfig and MAINTAINERS). */
export function isKernelTreeRoot(names: ReadonlySet<string>): boolean {
  return names.has('Kbuild') && names.has('Kconfig') && names.has('MAINTAINERS');
}
